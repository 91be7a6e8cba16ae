import Foundation
import Testing
import TestSupport
@testable import XSelection

/// One private Xvfb shared by the suites that do not kill it.
enum SharedServer {
    static let server: PrivateXServer = {
        do { return try PrivateXServer() } catch { fatalError("cannot start Xvfb: \(error)") }
    }()
    static var display: String { server.display }
}

@Suite struct ReaderTests {
    let display = SharedServer.display

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

    @Test func reportsNoOwnerAndRefusalDistinctly() throws {
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_REFUSE", "--text", "x"])
        let reader = try SelectionReader(display: display)
        let none = try reader.read("_T_NOBODY_OWNS_THIS", target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        #expect(none == .noOwner)
        let refused = try reader.read("_T_REFUSE", target: "IMAGE_PNG", options: .init(deadline: .seconds(5)))
        guard case .refused(let owner) = refused else {
            Issue.record("expected a refusal, got \(refused)")
            return
        }
        #expect(owner != nil)
        _ = helper
    }

    @Test func roundTripsOneMebibyteThroughINCROnlyWithTheCapRaised() throws {
        let size = 1 << 20
        let helper = try startSelectionHelper(display: display, ["own", "--prefix", "_T_INCR", "--size", "\(size)", "--incr-threshold", "65536",
                                                                 "--target", "application/octet-stream"])
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
        let honest = try startSelectionHelper(display: display, ["own", "--prefix", "_T_NEXT_TO_SILENT_", "--count", "5", "--text", "ok {i}"])
        let reader = try SelectionReader(display: display)
        let names: [SelectionName] = ["_T_SILENT"] + (0..<5).map { SelectionName("_T_NEXT_TO_SILENT_\($0)") }
        let started = ContinuousClock.now
        let outcomes = try reader.read(names, target: "UTF8_STRING", options: .init(deadline: .milliseconds(300)))
        let elapsed = ContinuousClock.now - started
        guard case .timedOut(let owner)? = outcomes["_T_SILENT"] else {
            Issue.record("expected a time-out, got \(String(describing: outcomes["_T_SILENT"]))")
            return
        }
        #expect(owner != nil)
        for index in 0..<5 {
            #expect(outcomes[SelectionName("_T_NEXT_TO_SILENT_\(index)")]?.value.map { String(decoding: $0.bytes, as: UTF8.self) } == "ok \(index)")
        }
        // The deadline is a bound, not a target: generous slack for a loaded machine.
        #expect(elapsed < .seconds(3))
        _ = (silent, honest)
    }

    @Test(arguments: [
        ("wrong-property", "a property other than"),
        ("no-property", "wrote no property"),
        ("die-mid-incr", ""),
        ("stall-incr", ""),
    ])
    func brokenOwnersGiveATypedOutcome(behavior: String, reason: String) throws {
        let name = "_T_BROKEN_\(behavior.uppercased().replacingOccurrences(of: "-", with: "_"))"
        let hostile = try startSelectionHelper(display: display, ["hostile", "--selection", name, "--behavior", behavior, "--size", "100000"])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read(SelectionName(name), target: "UTF8_STRING", options: .init(deadline: .milliseconds(500), maxBytes: 1 << 20))
        switch (behavior, outcome) {
        case (_, .malformed(_, let why)) where !reason.isEmpty:
            #expect(why.contains(reason))
        case ("die-mid-incr", .timedOut), ("die-mid-incr", .malformed), ("stall-incr", .timedOut):
            break
        default:
            Issue.record("\(behavior): unexpected \(outcome)")
        }
        _ = hostile
    }

    @Test func aTenMebibyteINCRIsAbortedAtTheCap() throws {
        let hostile = try startSelectionHelper(display: display, ["hostile", "--selection", "_T_HUGE", "--behavior", "huge-incr", "--size", "\(10 << 20)"])
        let reader = try SelectionReader(display: display)
        let outcome = try reader.read("_T_HUGE", target: "UTF8_STRING", options: .init(deadline: .seconds(2)))
        guard case .tooLarge(_, let bytes) = outcome else {
            Issue.record("expected too large, got \(outcome)")
            return
        }
        #expect(bytes == 10 << 20)
        _ = hostile
    }
}
