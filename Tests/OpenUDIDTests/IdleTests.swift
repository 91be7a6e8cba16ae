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
        var last = try #require(switches(of: second.child.pid))
        var stillSince = Date()
        let settled = eventually(timeout: 20, every: 0.1) {
            guard let now = switches(of: second.child.pid) else { return false }
            if now != last {
                last = now
                stillSince = Date()
            }
            return Date().timeIntervalSince(stillSince) >= 2
        }
        #expect(settled, "the participant never stayed asleep for 2 s")

        // And it stays asleep: the window is what is observed, so it is waited out.
        let before = try #require(switches(of: second.child.pid))
        Thread.sleep(forTimeInterval: 5)
        let after = try #require(switches(of: second.child.pid))
        #expect(after - before <= 1, "the idle participant woke \(after - before) times in 5 s")
        #expect(second.child.isRunning)
    }

    /// The context switches of every thread of `pid` so far.
    private func switches(of pid: pid_t) -> Int? {
        let tasks = "/proc/\(pid)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return nil }
        var total = 0
        for thread in threads {
            guard let status = try? String(contentsOfFile: "\(tasks)/\(thread)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }
}
