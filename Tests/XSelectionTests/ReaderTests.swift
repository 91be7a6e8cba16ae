import Foundation
import Synchronization
import TestSupport
import Testing

@testable import XSelection

@Suite(.requiresXvfb) struct ReaderTests {
    let display = SharedDisplay.display

    @Test func readsASelectionOwnedByAnotherProcess() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_READ_ONE", "--text", "hello from afar"])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read("_T_READ_ONE", target: "UTF8_STRING")
        let value = try #require(outcome.value)
        #expect(String(decoding: value.bytes, as: UTF8.self) == "hello from afar")
        #expect(value.type == "UTF8_STRING")
        #expect(value.format == 8)
        #expect(!value.incremental)
        _ = helper
    }

    @Test func readsAHundredSelectionsOfAnotherProcessInOnePass() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_HUNDRED_", "--count", "100", "--text", "value {i}"])
        let reader = try SelectionReader(display: display)
        let names = (0..<100).map { SelectionName("_T_HUNDRED_\($0)") }
        let outcomes = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        #expect(outcomes.count == 100)
        var clients = Set<XClient>()
        for (index, name) in names.enumerated() {
            let value = try #require(outcomes[name]?.value, "slot \(index): \(String(describing: outcomes[name]))")
            #expect(String(decoding: value.bytes, as: UTF8.self) == "value \(index)")
            clients.insert(value.owner.client)
        }
        // One process, one connection: every slot names the same client.
        #expect(clients.count == 1)
        _ = helper
    }

    @Test func aChangeOfOwnerBetweenPassesIsNotTakenForOneDuringTheNextPass() throws {
        // The reader keeps hearing of owner changes after its first pass; the
        // reports of changes made between passes are old news to the next one.
        let reader = try SelectionReader(display: display)
        let first = try SelectionOwner(display: display)
        try first.claim("_T_READ_BETWEEN", payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("first".utf8))])
        #expect(try reader.read("_T_READ_BETWEEN", target: "UTF8_STRING").value?.bytes == Array("first".utf8))
        let second = try SelectionOwner(display: display)
        try second.claim("_T_READ_BETWEEN", payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("second".utf8))])
        first.close()
        for _ in 0..<2 {
            let outcome = try reader.read("_T_READ_BETWEEN", target: "UTF8_STRING")
            #expect(outcome.value?.bytes == Array("second".utf8), "\(outcome)")
            #expect(outcome.value?.owner.window == second.window)
        }
    }

    @Test func aReaderThatReusesValuesAsksAgainOnlyWhereTheOwnerClaimedAgain() throws {
        let names: [SelectionName] = ["_T_READ_REUSE_A", "_T_READ_REUSE_B"]
        func text(_ string: String) -> [SelectionPayload] { [SelectionPayload(target: "UTF8_STRING", bytes: Array(string.utf8))] }
        let owner = try SelectionOwner(display: display)
        for name in names { try owner.claim(name, payloads: text("one")) }
        let reader = try SelectionReader(display: display)
        var reusing = SelectionReader.Options()
        reusing.reusesUnchangedValues = true
        func read(_ options: SelectionReader.Options) throws -> [String] {
            let outcomes = try reader.read(names, target: "UTF8_STRING", options: options)
            return names.map { name in outcomes[name]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } ?? "nothing" }
        }
        #expect(try read(reusing) == ["one", "one"])

        // New payloads without a new claim: no reader is told, so none is asked.
        for name in names { try owner.setPayloads(text("two"), for: name) }
        #expect(try read(reusing) == ["one", "one"])
        // Claiming again is what tells readers (XFixes): that selection is asked again.
        try owner.claim(names[1], payloads: text("three"))
        #expect(try read(reusing) == ["one", "three"])
        // A pass that does not reuse asks every owner.
        #expect(try read(SelectionReader.Options()) == ["two", "three"])
    }

    @Test func readsAThousandSelectionsOfOneOwnerPassAfterPass() throws {
        // An owner under load sheds a flooding client's excess requests; an
        // honest pipelined reader of many selections must never count as one.
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_THOUSAND_", "--count", "1000", "--text", "v{i}"])
        let reader = try SelectionReader(display: display)
        let names = (0..<1000).map { SelectionName("_T_THOUSAND_\($0)") }
        for pass in 0..<3 {
            let outcomes = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(10)))
            let read = names.filter { outcomes[$0]?.value?.bytes == Array("v\(names.firstIndex(of: $0) ?? -1)".utf8) }
            #expect(read.count == 1000, "pass \(pass): \(read.count) of 1000")
        }
        _ = helper
    }

    @Test func reportsNoOwnerAndRefusalDistinctly() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_REFUSE", "--text", "x"])
        let reader = try SelectionReader(display: display)
        let none = try reader.read("_T_NOBODY_OWNS_THIS", target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        #expect(none == .noOwner)
        let refused = try reader.read("_T_REFUSE", target: "IMAGE_PNG", options: .init(deadline: .seconds(5)))
        #expect(refused.kind == .refused, "expected a refusal, got \(refused)")
        #expect(refused.owner != nil)
        _ = helper
    }

    @Test func roundTripsOneMebibyteThroughINCROnlyWithTheCapRaised() throws {
        let size = 1 << 20
        let helper = try startSelectionHelper(
            display: display,
            [
                "own", "--prefix", "_T_INCR", "--size", "\(size)", "--incr-threshold", "65536",
                "--target", "application/octet-stream"
            ])
        let reader = try SelectionReader(display: display)
        let big = try reader.read("_T_INCR", target: "application/octet-stream", options: .init(deadline: .seconds(10), maxBytes: 2 << 20))
        let value = try #require(big.value, "\(big)")
        #expect(value.incremental)
        #expect(value.bytes.count == size)
        #expect(value.bytes == (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

        let capped = try reader.read("_T_INCR", target: "application/octet-stream", options: .init(deadline: .seconds(5)))
        #expect(capped == .tooLarge(owner: value.owner, bytes: size))
        _ = helper
    }

    @Test func aSilentOwnerTimesOutWhileTheOthersAreRead() throws {
        let silent = try startSelectionHelper(display: display, ["hostile", "--selection", "_T_SILENT", "--behavior", "silent"])
        let honest = try startSelectionHelper(
            display: display, ["own", "--prefix", "_T_NEXT_TO_SILENT_", "--count", "5", "--text", "ok {i}"])
        let reader = try SelectionReader(display: display)
        let honestNames = (0..<5).map { SelectionName("_T_NEXT_TO_SILENT_\($0)") }
        let deadline = Duration.milliseconds(300)
        // The baseline: the same read without the silent owner, on this machine, now.
        var started = ContinuousClock.now
        _ = try reader.read(honestNames, target: "UTF8_STRING", options: .init(deadline: deadline))
        let baseline = ContinuousClock.now - started
        started = ContinuousClock.now
        let outcomes = try reader.read(["_T_SILENT"] + honestNames, target: "UTF8_STRING", options: .init(deadline: deadline))
        let elapsed = ContinuousClock.now - started
        let unanswered = try #require(outcomes["_T_SILENT"])
        #expect(unanswered.kind == .timedOut, "expected a time-out, got \(unanswered)")
        #expect(unanswered.owner != nil)
        for index in 0..<5 {
            #expect(
                outcomes[SelectionName("_T_NEXT_TO_SILENT_\(index)")]?.value.map { String(decoding: $0.bytes, as: UTF8.self) }
                    == "ok \(index)")
        }
        // The silent owner costs the deadline, not more: the time-out above says it was
        // given up on, and the bound, against the baseline, that it was at the deadline
        // (generously: a loaded machine slows both reads, and may stall either).
        #expect(elapsed < baseline * 4 + deadline * 10, "\(elapsed) against a baseline of \(baseline)")
        _ = (silent, honest)
    }

    /// A hostile owner learns from the request it gets the reader's window,
    /// the pass's time and (from the selection's name) the property each
    /// answer goes into, and can send that window anything. `hide-others`
    /// forges XFixes notifications that the other selections of the pass
    /// changed owner: believed, they would drop those owners' answers as
    /// `ownerChanged`; owner changes count only from the server, and the
    /// honest answers are read. `answer-for-others` writes its own bytes into
    /// the other selections' properties and sends their notifications before
    /// their owners answer: believed, its answers would count in their
    /// owners' names. Each conversion carries a time of its own that no other
    /// owner learns, so its notifications are ignored, and a property written
    /// twice between the conversion and the read is no one's answer: it is
    /// asked again, and then only its owner writes it.
    @Test(arguments: [("hide-others", "hidden"), ("answer-for-others", "forged")])
    func oneOwnerCannotHideOrForgeTheOtherOwnersAnswers(behavior: String, ownAnswer: String) throws {
        let prefix = "_T_FORGED_\(behavior.prefix(4).uppercased())_"
        let names: [SelectionName] = (0..<3).map { SelectionName("\(prefix)\($0)") }
        let honest = try startSelectionHelper(display: display, ["own", "--prefix", prefix, "--count", "3", "--text", "ok {i}"])
        let hostile = try startSelectionHelper(
            display: display,
            ["hostile", "--selection", prefix + "FORGER", "--behavior", behavior, "--others", names.map(\.rawValue).joined(separator: ",")])
        // The honest owner answers only once the forgeries have reached the reader.
        honest.signal(SIGSTOP)
        defer { honest.signal(SIGCONT) }
        let reader = try SelectionReader(display: display)
        // The pass runs on a thread of its own: the task pool may be busy with other tests.
        let outcomes = Mutex<Result<[SelectionName: ReadOutcome], XSelectionError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let all = [SelectionName(prefix + "FORGER")] + names
        DispatchQueue.global().async {
            let result = Result { () throws(XSelectionError) in
                try reader.read(all, target: "UTF8_STRING", options: .init(deadline: .seconds(10)))
            }
            outcomes.withLock { $0 = result }
            done.signal()
        }
        #expect(hostile.nextLine(timeout: 20) == "forged", "\(hostile.standardError)")
        honest.signal(SIGCONT)
        #expect(done.wait(timeout: .now() + 30) == .success)
        let result: Result<[SelectionName: ReadOutcome], XSelectionError>? = outcomes.withLock { $0 }
        let read = try #require(result).get()
        #expect(read[all[0]]?.value?.bytes == Array(ownAnswer.utf8))
        // Either way the honest answers are read: the forged owner changes are
        // ignored, and the answers written twice are asked again, in a pass
        // the forger takes no part in, where the owner's write is the only one.
        for (index, name) in names.enumerated() {
            #expect(
                read[name]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } == "ok \(index)",
                "\(name): \(String(describing: read[name]))")
        }
        _ = (honest, hostile)
    }

    @Test(arguments: [
        ("wrong-property", "a property other than"),
        ("no-property", "wrote no property"),
        ("die-mid-incr", ""),
        ("stall-incr", "")
    ])
    func brokenOwnersGiveATypedOutcome(behavior: String, reason: String) throws {
        let name = "_T_BROKEN_\(behavior.uppercased().replacingOccurrences(of: "-", with: "_"))"
        let hostile = try startSelectionHelper(
            display: display, ["hostile", "--selection", name, "--behavior", behavior, "--size", "100000"])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read(
            SelectionName(name), target: "UTF8_STRING", options: .init(deadline: .milliseconds(500), maxBytes: 1 << 20))
        switch (behavior, outcome.kind) {
        case (_, .malformed) where !reason.isEmpty:
            #expect(outcome.reason?.contains(reason) == true)
        case ("die-mid-incr", .timedOut), ("die-mid-incr", .malformed), ("stall-incr", .timedOut):
            break
        default:
            Issue.record("\(behavior): unexpected \(outcome)")
        }
        _ = hostile
    }

    @Test func aTenMebibyteINCRIsAbortedAtTheCap() throws {
        let hostile = try startSelectionHelper(
            display: display, ["hostile", "--selection", "_T_HUGE", "--behavior", "huge-incr", "--size", "\(10 << 20)"])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read("_T_HUGE", target: "UTF8_STRING", options: .init(deadline: .seconds(2)))
        #expect(outcome.kind == .tooLarge, "expected too large, got \(outcome)")
        #expect(outcome.bytes == 10 << 20)
        _ = hostile
    }

    @Test func readsIncrementalAndPlainAnswersInOnePassAndAgain() throws {
        // The requestor window watches property changes only while an INCR
        // transfer runs; a pass that mixes both kinds, and the plain pass after
        // it, must each come out whole.
        let size = 300_000
        let large = try startSelectionHelper(
            display: display,
            [
                "own", "--prefix", "_T_MIXED_LARGE_", "--count", "2", "--size", "\(size)",
                "--incr-threshold", "32768", "--target", "application/octet-stream"
            ])
        let small = try startSelectionHelper(
            display: display,
            [
                "own", "--prefix", "_T_MIXED_SMALL_", "--count", "3", "--text", "s {i}",
                "--target", "application/octet-stream"
            ])
        let reader = try SelectionReader(display: display)
        let names = (0..<2).map { SelectionName("_T_MIXED_LARGE_\($0)") } + (0..<3).map { SelectionName("_T_MIXED_SMALL_\($0)") }
        let expected = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for pass in 0..<2 {
            let outcomes = try reader.read(
                names, target: "application/octet-stream", options: .init(deadline: .seconds(10), maxBytes: 1 << 20))
            for index in 0..<2 {
                let value = try #require(outcomes[SelectionName("_T_MIXED_LARGE_\(index)")]?.value, "pass \(pass)")
                #expect(value.incremental)
                #expect(value.bytes == expected)
            }
            for index in 0..<3 {
                #expect(
                    outcomes[SelectionName("_T_MIXED_SMALL_\(index)")]?.value.map { String(decoding: $0.bytes, as: UTF8.self) }
                        == "s \(index)")
            }
        }
        let plain = try reader.read(
            (0..<3).map { SelectionName("_T_MIXED_SMALL_\($0)") }, target: "application/octet-stream",
            options: .init(deadline: .seconds(5)))
        #expect(plain.values.allSatisfy { $0.value?.incremental == false })
        _ = (large, small)
    }

    @Test func aDepthOfOneAsksForTheNextSelectionOnlyOnceTheLastIsRead() throws {
        // Names sort in reading order: the silent owner's selection comes first.
        let silent = try startSelectionHelper(display: display, ["hostile", "--selection", "_T_DEPTH_A", "--behavior", "silent"])
        let honest = try startSelectionHelper(display: display, ["own", "--prefix", "_T_DEPTH_B", "--count", "3", "--text", "b {i}"])
        let reader = try SelectionReader(display: display)
        let names: [SelectionName] = ["_T_DEPTH_A", "_T_DEPTH_B0", "_T_DEPTH_B1", "_T_DEPTH_B2"]

        // One at a time: the silent owner holds the pass, and the others are never asked.
        let sequential = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .milliseconds(300), pipelineDepth: 1))
        for name in names {
            #expect(
                sequential[name]?.kind == .timedOut, "\(name): expected a time-out at depth 1, got \(String(describing: sequential[name]))")
            #expect(sequential[name]?.owner != nil, "\(name) has an owner, known before any conversion")
        }

        // Two lanes: the silent owner blocks one, the others pass through the other.
        let twoLanes = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(2), pipelineDepth: 2))
        #expect(
            twoLanes["_T_DEPTH_A"]?.kind == .timedOut,
            "expected the silent owner to time out, got \(String(describing: twoLanes["_T_DEPTH_A"]))")
        for index in 0..<3 {
            #expect(twoLanes[SelectionName("_T_DEPTH_B\(index)")]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } == "b \(index)")
        }
        _ = (silent, honest)
    }

    @Test func aDepthOfOneReadsWhatAPipelinedPassReads() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_DEPTH_SAME_", "--count", "20", "--text", "v {i}"])
        let reader = try SelectionReader(display: display)
        let names = (0..<20).map { SelectionName("_T_DEPTH_SAME_\($0)") } + ["_T_DEPTH_NOBODY"]
        let pipelined = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        let sequential = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .seconds(5), pipelineDepth: 1))
        #expect(sequential == pipelined)
        #expect(sequential["_T_DEPTH_NOBODY"] == .noOwner)
        #expect(sequential["_T_DEPTH_SAME_7"]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } == "v 7")
        _ = helper
    }

    @Test func aRoundTripReturnsWhileTheServerAnswersAndFailsOnceClosed() throws {
        let reader = try SelectionReader(display: display)
        for _ in 0..<50 { try reader.roundTrip() }
        // The reader still reads after round trips (their replies leave nothing behind).
        #expect(try reader.read("_T_ROUND_TRIP_NOBODY", target: "UTF8_STRING", options: .init(deadline: .seconds(5))) == .noOwner)
        reader.close()
        #expect(throws: XSelectionError.self) { try reader.roundTrip() }
    }
}
