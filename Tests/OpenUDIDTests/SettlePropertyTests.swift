import Foundation
import Testing

@testable import OpenUDIDKit

/// Settling early never changes the winner (docs/PROTOCOL.md §5.1): over many
/// generated ballot sets, whenever the vote over the answers in hand is
/// settled against the outstanding clients, every way those clients could
/// answer gives the same winner.
@Suite struct SettlePropertyTests {
    static let now: Int64 = 1_700_000_000_000

    /// A record of `app` for identifier number `id` (a handful of ids, so ties and majorities happen).
    static func record(app: String, id: Int, born: Int64, optOut: Bool = false) -> SlotRecord {
        let identifier = optOut ? Identifier.optedOut : try! Identifier(parsing: String(repeating: String(id, radix: 16), count: 40))
        let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
        return SlotRecord(id: identifier, app: app, vendor: vendor, born: born, written: now, optOut: optOut)
    }

    @Test func aSettledVoteHasTheWinnerOfEveryCompletion() {
        var random = SeededRandom.announced("aSettledVoteHasTheWinnerOfEveryCompletion")
        var settledCases = 0
        for _ in 0..<3000 {
            let keepsFiles = Bool.random(using: &random)
            let ids = Int.random(in: 1...3, using: &random)
            func someRecord(_ app: String) -> SlotRecord {
                // Births at the floor are what a hostile client would claim.
                let born =
                    Bool.random(using: &random) ? SlotRecord.earliestTime : Self.now - Int64.random(in: 1...1_000_000, using: &random)
                return Self.record(
                    app: app, id: Int.random(in: 1...ids, using: &random), born: born, optOut: Int.random(in: 0..<10, using: &random) == 0)
            }
            // Durable ballots: sometimes none.
            var inHand: [Candidate] = []
            for index in 0..<(Bool.random(using: &random) ? 0 : Int.random(in: 1...3, using: &random)) {
                inHand.append(Candidate(someRecord("com.honest.app\(index)"), from: .fileSlot(app: "com.honest.app\(index)")))
            }
            // Selection slots, each owned by one of a few clients; some answered, some outstanding.
            let clients = Int.random(in: 1...6, using: &random)
            var outstanding: [(slot: Int, client: UInt32, candidate: Candidate)] = []
            for slot in 0..<Int.random(in: 0...8, using: &random) {
                let client = UInt32(Int.random(in: 1...clients, using: &random))
                let app = Bool.random(using: &random) ? "com.app.client\(client)" : "com.forge.slot\(slot)"
                let candidate = Candidate(someRecord(app), from: .selection(slot: slot, client: client))
                if Int.random(in: 0..<3, using: &random) == 0 {
                    outstanding.append((slot, client, candidate))
                } else {
                    inHand.append(candidate)
                }
            }
            let held = Bool.random(using: &random) ? someRecord("com.me.app") : nil
            func vote(_ candidates: [Candidate]) -> Resolution {
                Resolution.resolve(candidates: candidates, local: nil, held: held, keepsFiles: keepsFiles, app: "com.me.app") {
                    (Identifier.optedOut, 0)
                }
            }
            let early = vote(inHand)
            guard Resolution.isSettled(early, outstanding: Set(outstanding.map(\.client))) else { continue }
            settledCases += 1
            // Every subset of the outstanding slots may answer (the rest stay silent).
            for mask in 0..<(1 << outstanding.count) {
                let answered = outstanding.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element.candidate)
                let late = vote(inHand + answered)
                #expect(
                    late.consensus == early.consensus,
                    "settled on \(String(describing: early.consensus)) but the answers \(answered) give \(String(describing: late.consensus))"
                )
            }
        }
        #expect(settledCases > 500, "too few settled cases to mean anything: \(settledCases)")
    }
}
