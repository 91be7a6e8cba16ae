import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

@Suite(.requiresXvfb) struct ConvergenceTests {
    @Test func tenAppsStartedAtOnceFromNothingAgreeOnOneIdentifier() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = (0..<10).map { "org.app\($0).demo" }
        let participants = try apps.map { try session.serve($0, ["--mirror", "none"], waitForFirstLine: false) }
        defer { participants.forEach { $0.stop() } }
        let agreed = eventually(timeout: 20) {
            let current = participants.map(\.current)
            return current.allSatisfy { $0 != nil } && Set(current).count == 1
        }
        let seen = participants.map { $0.current ?? "nothing" }
        #expect(agreed, "identifiers seen: \(seen)")
        // And the files agree with the processes.
        let survey = try session.run(["slots", "--json"])
        let slots =
            (try JSONSerialization.jsonObject(with: Data(survey.standardOutput.utf8)) as? [String: Any])?["slots"] as? [[String: Any]] ?? []
        #expect(slots.filter { $0["kind"] as? String == "selection" }.count == 10)
        #expect(Set(slots.compactMap { $0["id"] as? String }) == Set(seen.prefix(1)))
    }

    /// A participant is two X clients: the connection that serves its slot
    /// also watches the slots, and its reader is the other. Twenty-four fit on
    /// a server that admits 64 clients; with a third connection each they
    /// would not, and an app refused a connection would serve or read nothing.
    @Test func twentyFourParticipantsFitOnAServerThatAdmitsSixtyFourClients() throws {
        let server = try PrivateXServer(maxClients: 64)
        let session = try TestSession(display: server.display)
        let participants = try (0..<24).map { try session.serve("org.crowd\($0).demo", ["--no-files", "--mirror", "none"]) }
        defer { participants.forEach { $0.stop() } }
        let agreed = eventually(timeout: 20) {
            let current = participants.map(\.current)
            return current.allSatisfy { $0 != nil } && Set(current).count == 1
        }
        #expect(agreed, "identifiers seen: \(participants.map { $0.current ?? "nothing" })")
        for participant in participants {
            #expect(
                !participant.child.standardError.contains("Maximum number of clients"),
                "\(participant.app): \(participant.child.standardError)")
        }
        let survey = try session.run(["slots", "--json"])
        let slots =
            (try JSONSerialization.jsonObject(with: Data(survey.standardOutput.utf8)) as? [String: Any])?["slots"] as? [[String: Any]] ?? []
        #expect(slots.filter { $0["kind"] as? String == "selection" }.count == 24)
    }

    /// Group one lives on the shared display; group two forms on a display of
    /// its own, so the two pick different identifiers; then group two's apps
    /// come to group one's display, each group with its own home.
    @Test(arguments: [true, false])
    func twoGroupsThatFormedApartMeetOnOneDisplay(keepingFiles: Bool) throws {
        let otherServer = try PrivateXServer()
        let groupOne = try TestSession(display: SharedDisplay.display)
        let groupTwo = try TestSession(display: otherServer.display, namespace: groupOne.namespace)
        let none = (keepingFiles ? [] : ["--no-files"]) + ["--mirror", "none"]
        let one = try ["org.one.a", "org.one.b"].map { try groupOne.serve($0, none) }
        var two = try ["org.two.a", "org.two.b", "org.two.c"].map { try groupTwo.serve($0, none) }
        #expect(eventually(timeout: 10) { Set(one.map(\.current)).count == 1 && Set(two.map(\.current)).count == 1 })
        let x = try #require(one[0].current)
        let y = try #require(two[0].current)
        #expect(x != y)

        // They meet: group two's apps come to group one's display, with their own files.
        two.forEach { $0.stop() }
        let meeting = try TestSession(display: SharedDisplay.display, namespace: groupOne.namespace, home: groupTwo.home)
        two = try ["org.two.a", "org.two.b", "org.two.c"].map { try meeting.serve($0, none, waitForFirstLine: false) }
        let everyone = one + two
        defer { everyone.forEach { $0.stop() } }
        guard keepingFiles else {
            let converged = eventually(timeout: 20) {
                let current = everyone.map(\.current)
                return current.allSatisfy { $0 != nil } && Set(current).count == 1
            }
            #expect(converged, "seen: \(everyone.map { $0.current ?? "nothing" })")
            // Selection-only apps keep nothing when they quit: group two's
            // processes arrive empty-handed and join the group that is running.
            #expect(one[0].current == x)
            return
        }
        // Apps backed by their own files do not follow records that arrive over
        // the display alone: a forger there looks the same as a visiting group.
        #expect(eventually(timeout: 20) { everyone.allSatisfy { $0.current != nil } })
        let visitor = try meeting.report("org.two.d", none)
        #expect(visitor["id"] as? String == y)
        let outranked = (visitor["ignored"] as? [[String: Any]] ?? []).filter { $0["reason"] as? String == "outranked" }
        #expect(outranked.count == 5, "every slot on the display is outranked by group two's files: \(visitor)")
        #expect(one.allSatisfy { $0.current == x } && two.allSatisfy { $0.current == y })
    }
}
