import Foundation
import TestSupport
import Testing

@testable import XSelection

@Suite(.requiresXvfb) struct OwnerTests {
    let display = SharedDisplay.display

    private func text(_ string: String, target: String = "UTF8_STRING") -> SelectionPayload {
        SelectionPayload(target: target, bytes: Array(string.utf8))
    }

    @Test func answersTargetsTimestampAndMultiple() throws {
        let owner = try SelectionOwner(display: display)
        let result = try owner.claim(
            "_T_OWNER_STANDARD",
            payloads: [
                text("plain", target: "UTF8_STRING"),
                SelectionPayload(target: "_T_RECORD", type: "_T_RECORD", bytes: Array("{\"a\":1}".utf8))
            ])
        guard case .claimed(let since) = result else {
            Issue.record("claim failed: \(result)")
            return
        }
        let reader = try SelectionReader(display: display)
        let targets = try #require(try reader.targets(of: "_T_OWNER_STANDARD"))
        #expect(Set(targets) == ["TARGETS", "TIMESTAMP", "MULTIPLE", "UTF8_STRING", "_T_RECORD"])

        let stamp = try #require(try reader.read("_T_OWNER_STANDARD", target: "TIMESTAMP").value)
        #expect(stamp.type == "INTEGER")
        #expect(stamp.items32 == [since.rawValue])

        let lines = try requestWithHelper(
            display: display, ["--selection", "_T_OWNER_STANDARD", "--targets", "UTF8_STRING,_T_BOGUS,_T_RECORD"])
        #expect(lines == ["ok UTF8_STRING UTF8_STRING 8 plain", "refused _T_BOGUS", "ok _T_RECORD _T_RECORD 8 {\"a\":1}"])
    }

    @Test func usesTheTargetAsPropertyForAnObsoleteRequestor() throws {
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_OWNER_OBSOLETE", payloads: [text("old style")])
        let lines = try requestWithHelper(
            display: display, ["--selection", "_T_OWNER_OBSOLETE", "--targets", "UTF8_STRING", "--no-property"])
        #expect(lines == ["property UTF8_STRING", "ok UTF8_STRING UTF8_STRING 8 old style"])
    }

    @Test func refusesRequestsTimedBeforeItsOwnershipButAcceptsCurrentTime() throws {
        let owner = try SelectionOwner(display: display)
        guard case .claimed(let since) = try owner.claim("_T_OWNER_TIME", payloads: [text("timely")]) else {
            Issue.record("claim failed")
            return
        }
        let before = try requestWithHelper(
            display: display, ["--selection", "_T_OWNER_TIME", "--targets", "UTF8_STRING", "--time", "\(since.rawValue - 1)"])
        #expect(before == ["refused UTF8_STRING"])
        let current = try requestWithHelper(display: display, ["--selection", "_T_OWNER_TIME", "--targets", "UTF8_STRING", "--time", "0"])
        #expect(current.last == "ok UTF8_STRING UTF8_STRING 8 timely")
        let after = try requestWithHelper(
            display: display, ["--selection", "_T_OWNER_TIME", "--targets", "UTF8_STRING", "--time", "\(since.rawValue + 1)"])
        #expect(after.last == "ok UTF8_STRING UTF8_STRING 8 timely")
        #expect(owner.statistics.refused >= 1)
    }

    /// Readers give each conversion the pass's time plus a random offset of up
    /// to 2^24 ms (docs/PROTOCOL.md §5): an owner answers the widest of them.
    @Test func answersAConversionTimedAsFarAheadAsAReaderTimesIt() throws {
        let owner = try SelectionOwner(display: display)
        guard case .claimed(let since) = try owner.claim("_T_OWNER_AHEAD", payloads: [text("ahead")]) else {
            Issue.record("claim failed")
            return
        }
        let widest = UInt32(truncatingIfNeeded: since.rawValue) &+ (1 << 24)
        let answer = try requestWithHelper(
            display: display, ["--selection", "_T_OWNER_AHEAD", "--targets", "UTF8_STRING", "--time", "\(widest)"])
        #expect(answer.last == "ok UTF8_STRING UTF8_STRING 8 ahead")
    }

    @Test func claimIfFreeLeavesAnotherOwnerAlone() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_OWNER_TAKEN", "--text", "theirs"])
        let owner = try SelectionOwner(display: display)
        let result = try owner.claim("_T_OWNER_TAKEN", payloads: [text("mine")], mode: .ifFree)
        guard case .taken = result else {
            Issue.record("expected taken, got \(result)")
            return
        }
        let reader = try SelectionReader(display: display)
        #expect(try reader.read("_T_OWNER_TAKEN", target: "UTF8_STRING").value?.bytes == Array("theirs".utf8))
        _ = helper
    }

    @Test func claimFirstFreeTakesTheFirstSelectionNobodyOwnsAndLeavesTheOthersAlone() throws {
        let names = (0..<5).map { SelectionName("_T_OWNER_FIRST_FREE_\($0)") }
        let theirs = try SelectionOwner(display: display)
        for index in [0, 1, 3] { try theirs.claim(names[index], payloads: [text("theirs")]) }
        let mine = try SelectionOwner(display: display)
        #expect(try mine.claimFirstFree(of: names, payloads: [text("mine")])?.selection == names[2])
        // A selection it holds itself counts as owned too.
        #expect(try mine.claimFirstFree(of: names, payloads: [text("mine")])?.selection == names[4])
        #expect(try mine.claimFirstFree(of: names, payloads: [text("mine")]) == nil)

        let reader = try SelectionReader(display: display)
        let outcomes = try reader.read(names, target: "UTF8_STRING")
        let served = names.map { name in outcomes[name]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } ?? "nothing" }
        #expect(served == ["theirs", "theirs", "mine", "theirs", "mine"])
        #expect(outcomes[names[2]]?.value?.owner.window == mine.window)
        #expect(try mine.heldSelections().sorted() == [names[2], names[4]])
        #expect(try theirs.heldSelections().sorted() == [names[0], names[1], names[3]])
    }

    @Test func reportsTheLossOfASelectionWithTheNewOwner() async throws {
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_OWNER_LOST", payloads: [text("first")])
        let events = SequenceReader(owner.events)
        let thief = try SelectionOwner(display: display)
        try thief.claim("_T_OWNER_LOST", payloads: [text("second")])
        #expect(await events.next() == .element(.lost("_T_OWNER_LOST", newOwner: thief.window)))
        #expect(try owner.heldSelections().isEmpty)
    }

    /// Any client may send an owner's window any event (SendEvent). Only the
    /// server takes a selection away or reports an owner change, so forged
    /// ones change nothing: the owner keeps serving and reports no loss, and
    /// its watch reports no change.
    @Test func forgedSelectionClearAndOwnerChangeEventsChangeNothing() async throws {
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_OWNER_FORGED", payloads: [text("still mine")])
        let events = SequenceReader(owner.events)
        let watch = SequenceReader(try owner.watchOwners(of: ["_T_OWNER_FORGED_WATCHED"]).events)
        for (event, selection) in [("clear", "_T_OWNER_FORGED"), ("owner-change", "_T_OWNER_FORGED_WATCHED")] {
            let forger = try runCommand(
                Tools.product("xselection-helper"),
                ["forge", "--event", event, "--window", "\(owner.window.rawValue)", "--selection", selection],
                environment: ["DISPLAY": display])
            #expect(forger.status == 0 && forger.standardOutput == "sent\n", "\(forger.standardError)")
        }
        // The owner has handled both: a reader's request is answered after them.
        let reader = try SelectionReader(display: display)
        #expect(try reader.read("_T_OWNER_FORGED", target: "UTF8_STRING").value?.bytes == Array("still mine".utf8))
        #expect(try owner.heldSelections() == ["_T_OWNER_FORGED"])
        #expect(await events.next(timeout: .milliseconds(300)) == .timedOut)
        #expect(await watch.next(timeout: .milliseconds(300)) == .timedOut)
    }

    /// An owner claims with the time of the server's notice of its own
    /// property change. Notices another client sends its window, with a time
    /// far ahead that the server would refuse a claim at, are not taken for it:
    /// every claim made while they pour in holds.
    @Test func forgedTimestampNoticesDoNotTimeAClaim() throws {
        let owner = try SelectionOwner(display: display)
        let forger = try ChildProcess(
            Tools.product("xselection-helper").path,
            ["forge", "--event", "timestamp", "--window", "\(owner.window.rawValue)", "--count", "200000"],
            environment: ["DISPLAY": display])
        defer { forger.kill9() }
        var claims = 0
        while forger.isRunning || claims < 20 {
            let result = try owner.claim(SelectionName("_T_OWNER_FORGED_TIME_\(claims % 4)"), payloads: [text("mine")])
            guard case .claimed(let since) = result else {
                Issue.record("claim \(claims): \(result)")
                break
            }
            #expect(since != XTimestamp(0xF000_0000), "claim \(claims) took the forged time")
            claims += 1
        }
        #expect(forger.exitStatus == 0, "\(forger.standardError)")
    }

    @Test func newPayloadsTakeEffectWithoutReclaiming() throws {
        let owner = try SelectionOwner(display: display)
        try owner.claim("_T_OWNER_UPDATE", payloads: [text("before")])
        let reader = try SelectionReader(display: display)
        #expect(try reader.read("_T_OWNER_UPDATE", target: "UTF8_STRING").value?.bytes == Array("before".utf8))
        #expect(try owner.setPayloads([text("after")], for: "_T_OWNER_UPDATE"))
        #expect(try reader.read("_T_OWNER_UPDATE", target: "UTF8_STRING").value?.bytes == Array("after".utf8))
    }

    @Test func finishesAnINCRTransferInFlightAfterLosingTheSelection() throws {
        let size = 300_000
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let owner = try SelectionOwner(display: display, options: .init(incrThreshold: 4096))
        try owner.claim("_T_OWNER_INCR_LOSS", payloads: [SelectionPayload(target: "application/octet-stream", bytes: bytes)])
        // Start a transfer, then lose the selection while it runs: the reader
        // (the helper, via raw Xlib, reads slowly enough) still gets every byte.
        let reader = try SelectionReader(display: display)
        let thief = try SelectionOwner(display: display)
        let group = DispatchGroup()
        nonisolated(unsafe) var outcome: ReadOutcome?
        group.enter()
        DispatchQueue.global().async {
            outcome = try? reader.read(
                "_T_OWNER_INCR_LOSS", target: "application/octet-stream", options: .init(deadline: .seconds(10), maxBytes: 1 << 20))
            group.leave()
        }
        _ = eventually(timeout: 5) { owner.statistics.incrStarted > 0 }
        try thief.claim("_T_OWNER_INCR_LOSS", payloads: [text("thief")])
        group.wait()
        #expect(outcome?.value?.bytes == bytes)
        #expect(owner.statistics.incrCompleted == 1)
    }

    @Test func answersTheLastRequestOfEveryBurst() throws {
        // A plain-Xlib reader sends ten conversions at once and waits for all ten
        // answers, two thousand times; it has no deadline, so one request the
        // owner leaves unanswered stops it, and the run times out.
        let owner = try SelectionOwner(display: display)
        for index in 0..<10 { try owner.claim(SelectionName("_T_OWNER_BURST_\(index)"), payloads: [text("burst \(index)")]) }
        let result = try runCommand(
            Tools.product("xselection-helper"),
            ["time", "--what", "pipelined", "--prefix", "_T_OWNER_BURST_", "--count", "10", "--warmup", "0", "--reps", "2000"],
            environment: ["DISPLAY": display], timeout: 30)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.split(separator: "\n").count == 2000)
        #expect(owner.statistics.answered == 20_000)
    }
}
