import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// A client that floods an app's slot with conversion requests and never reads
/// what the server sends back, against a real `openudid serve` on an Xvfb of
/// its own (the flood would slow every other test sharing a display).
///
/// The flood takes a whole core of a small machine, and with it the CPU every
/// other test needs, so this suite runs alone, after the others: `scripts/test`
/// runs it with `OPENUDID_LOAD_TESTS=1`, and its floods one at a time.
@Suite(
    .requiresXvfb, .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["OPENUDID_LOAD_TESTS"] == "1",
        "a load test: scripts/test runs it alone, after the rest of the suite"))
struct FloodTests {
    /// The most the serving app may ever have resident, flood or not.
    static let memoryBoundKiB = 64 * 1024
    /// How long the flood runs; it stops itself.
    static let floodSeconds = 15.0
    /// Reads that start this long into the flood meet the backlog an owner
    /// builds when it falls behind (over a gigabyte after four seconds, before
    /// the owner read its events a buffer at a time).
    static let readsFrom = 5.0
    /// How long one read may wait: a guard against a hang, not a measure. That
    /// reads are answered during the flood, not after it, shows in how many were
    /// asked late into it: a read that waited for the flood's end would be the last.
    static let answerBound = 60.0

    @Test(.disabled(if: underSanitizer, "a sanitizer's shadow memory swamps the memory bound"))
    func anUnreadFloodLeavesTheServingAppSmallAndItsSlotAnswerable() throws {
        let server = try PrivateXServer()
        defer { server.stop() }
        let session = try TestSession(display: server.display)
        let participant = try session.serve("com.acme.notes", ["--mirror", "none"])
        defer { participant.stop() }
        let identifier = try #require(participant.current)
        let pid = participant.child.pid

        let flood = try startSelectionHelper(
            display: server.display,
            [
                "flood", "--unread", "--selection", session.slotName(0), "--target", "_OPENUDID_RECORD",
                "--seconds", String(Self.floodSeconds)
            ])
        defer { flood.signal(SIGKILL) }
        let started = Date()

        // Another client reads the slot over and over while the flood runs.
        // Every read is answered with the record: the owner holds the server
        // for a moment whenever it falls behind, so nobody's request waits
        // behind the flood. Before that, reads asked a few seconds into the
        // flood went unanswered until seven seconds after it ended.
        var attempts: [(asked: Double, ok: Bool, line: String)] = []
        while flood.isRunning && Date().timeIntervalSince(started) < Self.floodSeconds + 5 {
            let asked = Date().timeIntervalSince(started)
            let lines = try requestWithHelper(
                display: server.display,
                [
                    "--selection", session.slotName(0), "--targets", "_OPENUDID_RECORD",
                    "--deadline", String(Self.answerBound)
                ])
            let ok = lines.contains { $0.hasPrefix("ok ") && $0.contains(identifier) }
            let line = String(
                format: "asked at %.1f s: %@ after %.1f s", asked, ok ? "answered" : lines.last ?? "nothing",
                Date().timeIntervalSince(started) - asked)
            attempts.append((asked, ok, line))
        }
        let late = attempts.filter { $0.asked >= Self.readsFrom }
        #expect(late.count >= 3, "too few reads asked \(Self.readsFrom) s or more into the flood: \(attempts.map(\.line))")
        #expect(attempts.allSatisfy { $0.ok }, "a read during the flood went unanswered: \(attempts.map(\.line))")

        let summary = try #require(flood.nextLine(timeout: Self.floodSeconds + 10), "the flood printed no summary: \(flood.standardError)")
        let sent = FloodSummary(summary).sent
        #expect(sent > 1_000_000, "the flood sent too little to test anything: \(summary)")
        #expect(participant.child.isRunning)
        let peak = try #require(peakResidentKiB(pid))
        #expect(peak < Self.memoryBoundKiB, "openudid serve peaked at \(peak) KiB under \(summary)")

        // Once the flood is over the app serves as before.
        #expect(try session.get("org.fresh.app", ["--mirror", "none"]) == identifier)
    }
}

/// The peak resident set size of process `pid` so far (VmHWM), in KiB.
func peakResidentKiB(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
}

extension FloodTests {
    @Test func aFloodOfRequestsNeitherStarvesTheParticipantNorGrowsItsMemory() throws {
        let server = try PrivateXServer()
        defer { server.stop() }
        let session = try TestSession(display: server.display)
        // Selection-only, so that two clients' slots can outvote it.
        let participant = try session.serve("com.acme.notes", ["--no-files", "--mirror", "none"])
        defer { participant.stop() }
        let first = try #require(participant.current)
        let pid = participant.child.pid
        let baseline = try #require(residentKiB(pid))

        let flood = try startSelectionHelper(
            display: server.display,
            ["flood", "--selection", session.slotName(0), "--target", "_OPENUDID_RECORD", "--seconds", "12", "--window", "1000000"])
        defer { flood.signal(SIGKILL) }
        let sampler = RSSSampler(pid: pid)
        // The flood has reached the participant once it spends its time answering (0.2 s of CPU).
        let idle = try #require(cpuTicks(pid))
        #expect(eventually(timeout: 30) { (cpuTicks(pid) ?? 0) - idle >= 20 }, "the flood never reached the participant")

        // A majority for another identifier appears in the middle of the flood:
        // the participant must adopt it and serve it, which takes its owner
        // thread's time.
        let elder = Identifier.random().hex
        let rivals = try [5, 6].map { slot in
            try startSelectionHelper(
                display: server.display,
                [
                    "own", "--prefix", session.slotName(slot), "--target", "_OPENUDID_RECORD",
                    "--text", Hostility.record(app: "org.elder.app\(slot)", identifier: elder, born: SlotRecord.earliestTime + 1000)
                ])
        }
        defer { rivals.forEach { $0.signal(SIGKILL) } }
        // Followed under the flood, not after it: the flood, which times itself,
        // is still sending when the participant serves the new identifier.
        let adopted = participant.nextIdentifier(timeout: 15)
        #expect(adopted == elder)
        #expect(flood.isRunning, "the participant followed the change only once the flood was over")

        let summary = try #require(flood.nextLine(timeout: 30), "the flood printed no summary: \(flood.standardError)")
        sampler.stop()
        let counts = FloodSummary(summary)
        #expect(counts.sent > 100_000, "\(summary)")
        // ThreadSanitizer slows the owner about tenfold.
        #expect(counts.answered > (underSanitizer ? 100 : 1000), "\(summary)")
        #expect(participant.child.isRunning)
        let peak = sampler.peak
        // A million requests in flight. The owner takes events from libxcb a
        // buffer at a time, so the backlog waits in the X server, not here
        // (docs/SECURITY.md); FloodTests holds an unread flood under 64 MiB.
        // This bound only catches a runaway; a sanitizer's shadow memory
        // swamps the figure.
        #expect(underSanitizer || peak - baseline < 384 * 1024, "resident memory grew from \(baseline) KiB to \(peak) KiB under \(summary)")

        // Once the flood is over the participant serves the new identifier.
        #expect(try session.get("org.fresh.app", ["--no-files", "--mirror", "none"]) == elder)
        #expect(first != elder)
    }
}

/// The numbers in the flood helper's `flooded sent N answered A refused R seconds S` line.
struct FloodSummary {
    var sent = 0, answered = 0, refused = 0

    init(_ line: String) {
        let words = line.split(separator: " ").map(String.init)
        func number(after word: String) -> Int {
            guard let index = words.firstIndex(of: word), index + 1 < words.count else { return 0 }
            return Int(words[index + 1]) ?? 0
        }
        sent = number(after: "sent")
        answered = number(after: "answered")
        refused = number(after: "refused")
    }
}
