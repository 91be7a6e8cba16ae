import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Faults of the X server: it dies under running apps and comes back. Through
/// them the host process lives and the identifier the user has is kept.
@Suite(.requiresXvfb) struct XServerFaultTests {
    @Test func participantsOutliveAKilledServerWorkFromFilesAndTakePartAgainWhenItReturns() throws {
        let server = try PrivateXServer(numbering: .randomHigh)
        let session = try TestSession(display: server.display)
        let none = ["--mirror", "none"]
        let apps = ["com.acme.notes", "org.indie.chess", "net.other.viewer"]
        let participants = try apps.map { try session.serve($0, none) }
        defer { participants.forEach { $0.stop() } }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let shared = try #require(participants[0].current)
        #expect(occupiedSelectionSlots(session, none).count == 3)

        // `kill()` returns once the server is gone; a participant that the loss took
        // down is caught here or, at the latest, after the restart below.
        server.kill()
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended with the server: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
        // Without a server the identifier still comes from the participants' files.
        #expect(try session.get("org.fresh.app", ["--no-display"] + none) == shared)
        // With the server in DISPLAY gone, the answer comes without the selections, and says so.
        let result = try session.run(["get", "--app", "org.other.app", "--json"] + none)
        #expect(result.status == 5, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == shared)
        #expect(report.source("selections")?.state == "unavailable")

        try server.restart(elsewhereIfTaken: false)
        let back = eventually(timeout: 10) {
            let slots = occupiedSelectionSlots(session, none)
            return slots.count == 3 && Set(slots.map(\.id)) == [shared] && Set(slots.map(\.app)) == Set(apps)
        }
        #expect(back, "after the restart: \(occupiedSelectionSlots(session, none))")
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended after the restart: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
    }
}
