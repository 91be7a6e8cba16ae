import Foundation
import TestSupport
import Testing

/// A participant that sleeps: once the apps agree and nothing changes, no
/// thread of an `openudid serve` process runs. Each time the kernel switches
/// to one of its threads counts (/proc's voluntary and involuntary context
/// switches): a thread blocked in `poll` is never switched to, however busy
/// the machine, so the count does not depend on timing.
@Suite(.requiresXvfb) struct IdleTests {
    @Test(arguments: ["file", "none"])
    func anIdleParticipantBesideAnotherDoesNotWake(mirror: String) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let first = try session.serve("com.acme.notes", ["--mirror", mirror])
        defer { first.stop() }
        let second = try session.serve("com.acme.photos", ["--mirror", mirror])
        defer { second.stop() }
        #expect(eventually(timeout: 10) { first.current != nil && first.current == second.current })

        // Settled: the answers to each other's reads are done. A process that
        // wakes once a second (libdispatch's pool monitor, a polling timer)
        // never stays still for two seconds.
        var last = try #require(second.child.contextSwitches)
        var stillSince = Date()
        let settled = eventually(timeout: 20, every: 0.1) {
            guard let now = second.child.contextSwitches else { return false }
            if now != last {
                last = now
                stillSince = Date()
            }
            return Date().timeIntervalSince(stillSince) >= 2
        }
        #expect(settled, "the participant never stayed asleep for 2 s")

        // And it stays asleep: the wake-ups that must not come are waited for, 5 s.
        let before = try #require(second.child.contextSwitches)
        var after = before
        let woke = eventually(timeout: 5, every: 0.1) {
            after = second.child.contextSwitches ?? after
            return after - before > 1
        }
        #expect(!woke, "the idle participant woke \(after - before) times within 5 s")
        #expect(second.child.isRunning)
    }
}
