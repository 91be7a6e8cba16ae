import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

@Suite(.requiresXvfb) struct SlotContentionTests {
    /// The apps serving in the namespace's selection slots, as `openudid slots` lists them.
    private func appsInSelectionSlots(_ session: TestSession, _ options: [String]) throws -> [String] {
        let survey = try session.run(["slots", "--json"] + options)
        let slots =
            (try JSONSerialization.jsonObject(with: Data(survey.standardOutput.utf8)) as? [String: Any])?["slots"] as? [[String: Any]] ?? []
        return slots.filter { $0["kind"] as? String == "selection" }.compactMap { $0["app"] as? String }.sorted()
    }

    @Test func anAppThatFoundEverySlotTakenServesInTheFirstOneGivenUp() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let threeSlots = ["--mirror", "none", "--slots", "3"]
        let holders = try ["org.holder0.app", "org.holder1.app", "org.holder2.app"].map { try session.serve($0, threeSlots) }
        defer { holders.forEach { $0.stop() } }
        #expect(try eventually(timeout: 10) { try appsInSelectionSlots(session, threeSlots).count == 3 })

        // A fourth app finds no free slot: it still resolves and prints, unseen.
        let extra = try session.serve("org.extra.app", threeSlots)
        defer { extra.stop() }
        #expect(extra.current == holders[0].current)
        #expect(try appsInSelectionSlots(session, threeSlots) == ["org.holder0.app", "org.holder1.app", "org.holder2.app"])

        // A holder leaves: XFixes tells the fourth app, which takes the slot.
        holders[1].stop()
        var seen: [String] = []
        let served = try eventually(timeout: 10) {
            seen = try appsInSelectionSlots(session, threeSlots)
            return seen == ["org.extra.app", "org.holder0.app", "org.holder2.app"]
        }
        #expect(served, "selection slots: \(seen)")
    }
}
