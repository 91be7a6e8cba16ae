import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// One private Xvfb shared by these suites; every test has its own HOME and namespace.
enum SharedDisplay {
    /// The server, or why it could not start (the suites using it need `.requiresXvfb`).
    static let server = Result { try PrivateXServer() }
    /// Its display, or a name no server has, which makes every test on it fail saying why.
    static var display: String {
        switch server {
        case .success(let server): server.display
        case .failure(let error): ":no-private-xvfb (\(error))"
        }
    }
}

@Suite(.requiresXvfb) struct LifecycleTests {
    @Test func appsShareTheIdentifierThroughLiveSlotsAndFileSlotsAndLoseItWhenAllAreRemoved() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let none = ["--mirror", "none"]

        // A generates an identifier and serves it.
        let a = try session.serve("com.acme.notes", none)
        let first = try #require(a.current)
        #expect(first.count == 40)
        #expect(first != String(repeating: "0", count: 40))

        // B, of another vendor and keeping no files, discovers it from A's live slot.
        let b = try session.report("org.indie.chess", ["--no-files"] + none)
        #expect(b["id"] as? String == first)
        let agreeing = (b["agreeing"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }
        #expect(agreeing.contains { $0.hasPrefix("slot ") })
        // An app that keeps files finds it in A's file slot, which outranks the live slot.
        let e = try session.report("org.indie.go", none)
        #expect(e["id"] as? String == first)
        #expect(e["decidedBy"] as? String == "durable")
        let outranked = (e["ignored"] as? [[String: Any]] ?? []).filter { $0["reason"] as? String == "outranked" }
        #expect(outranked.count == 1)

        // A stops; D, never run before, still finds it through A's file slot.
        a.stop()
        let d = try session.report("net.other.viewer", none)
        #expect(d["id"] as? String == first)
        let dSources = (d["agreeing"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }
        #expect(!dSources.contains { $0.hasPrefix("slot ") })
        #expect(dSources.contains { $0.contains("com.acme.notes") })

        // Every participating app removed: the next app gets a new identifier.
        for app in ["com.acme.notes", "org.indie.chess", "org.indie.go", "net.other.viewer"] {
            #expect(try session.run(["remove-app", app]).status == 0)
        }
        let c = try session.get("org.new.app", none)
        #expect(c.count == 40)
        #expect(c != first)
    }

    @Test func removeAppDeletesOnlyThatAppsFileSlotAndCache() throws {
        let session = try TestSession(display: nil)
        let id = try session.get("com.acme.notes", ["--mirror", "file"])
        #expect(try session.get("com.acme.photos", ["--mirror", "file"]) == id)
        let data = session.home.dataHome.path
        let slots = "\(data)/openudid/ns/\(session.namespace)/slots"
        let mirror = "\(data)/openudid/ns/\(session.namespace)/vendors/com.acme.json"
        #expect(FileManager.default.fileExists(atPath: "\(slots)/com.acme.notes.json"))
        #expect(try session.run(["remove-app", "com.acme.notes"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: "\(slots)/com.acme.notes.json"))
        #expect(FileManager.default.fileExists(atPath: "\(slots)/com.acme.photos.json"))
        #expect(FileManager.default.fileExists(atPath: mirror))
    }

    @Test func withoutADisplayResolutionWorksFromFilesAndSaysSelectionsAreUnavailable() throws {
        let session = try TestSession(display: nil)
        let first = try session.get("com.acme.notes", ["--mirror", "none"])
        let report = try session.report("org.indie.chess", ["--mirror", "none"])
        #expect(report["id"] as? String == first)
        let sources = report["sources"] as? [[String: Any]] ?? []
        let selections = try #require(sources.first { $0["name"] as? String == "selections" })
        #expect(selections["state"] as? String == "unavailable")
    }

    @Test func anUnreachableDisplayIsReportedAndFilesStillWork() throws {
        let session = try TestSession(display: ":4998")
        let result = try session.run(["get", "--app", "com.acme.notes", "--mirror", "none", "--json"])
        #expect(result.status == 5, "the answer lacks the selections: \(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let sources = report["sources"] as? [[String: Any]] ?? []
        let selections = try #require(sources.first { $0["name"] as? String == "selections" })
        #expect(selections["state"] as? String == "unavailable")
        #expect((selections["detail"] as? String ?? "").contains(":4998"))
        #expect((report["id"] as? String)?.count == 40)
    }
}

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

@Suite(.requiresXvfb) struct PolicyAndOptOutTests {
    @Test func keepLocalKeepsTheAppsValueAndReportsTheDisagreement() throws {
        let session = try TestSession(display: nil)
        let loner = try TestSession(display: nil, namespace: session.namespace)
        let none = ["--mirror", "none"]
        let mine = try loner.get("org.solo.app", none)
        let theirs = try session.get("com.acme.notes", none)
        _ = try session.get("com.acme.photos", none)
        // Bring the loner's cache into the crowd's home.
        let source = loner.home.dataHome.appendingPathComponent("org.solo.app")
        try FileManager.default.copyItem(at: source, to: session.home.dataHome.appendingPathComponent("org.solo.app"))
        #expect(mine != theirs)

        let kept = try session.report("org.solo.app", none + ["--policy", "keep"])
        #expect(kept["id"] as? String == mine)
        #expect(kept["origin"] as? String == "kept-local")
        let disagreement = try #require(kept["disagreement"] as? [String: Any])
        #expect(disagreement["consensus"] as? String == theirs)

        let followed = try session.report("org.solo.app", none)
        #expect(followed["id"] as? String == theirs)
        #expect(followed["replaced"] as? String == mine)
    }

    @Test func anAppThatOptsOutGetsZerosPublishesItAndDoesNotVote() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let none = ["--mirror", "none"]
        let shared = try session.get("com.acme.notes", none)
        #expect(try session.run(["opt-out", "--app", "org.indie.chess"]).status == 0)
        #expect(try session.get("org.indie.chess", none) == String(repeating: "0", count: 40))
        let survey = try session.run(["slots", "--json"])
        let slots =
            (try JSONSerialization.jsonObject(with: Data(survey.standardOutput.utf8)) as? [String: Any])?["slots"] as? [[String: Any]] ?? []
        let chess = try #require(slots.first { $0["app"] as? String == "org.indie.chess" })
        #expect(chess["optOut"] as? Bool == true)
        // Others still see the shared value; undo brings it back.
        #expect(try session.get("net.third.app", none) == shared)
        #expect(try session.run(["opt-out", "--app", "org.indie.chess", "--undo"]).status == 0)
        #expect(try session.get("org.indie.chess", none) == shared)
    }

    @Test func anAppAloneWithItsVendorsMirrorGetsTheSameIdentifierBackAfterOptingOutAndIn() throws {
        let session = try TestSession(display: nil)
        let mirror = ["--mirror", "file"]
        let shared = try session.get("com.acme.notes", mirror)
        #expect(try session.run(["opt-out", "--app", "com.acme.notes"] + mirror).status == 0)
        #expect(try session.get("com.acme.notes", mirror) == String(repeating: "0", count: 40))
        #expect(try session.run(["opt-out", "--app", "com.acme.notes", "--undo"] + mirror).status == 0)
        // Its own file slot still says it opted out; that leftover must not block the mirror.
        let report = try session.report("com.acme.notes", mirror)
        #expect(report["id"] as? String == shared)
        #expect(report["origin"] as? String == "consensus")
    }

    @Test func aUserWideOptOutIsHonouredByEveryAppAndIsReversible() throws {
        let session = try TestSession(display: nil)
        let none = ["--mirror", "none"]
        let shared = try session.get("com.acme.notes", none)
        #expect(try session.run(["opt-out", "--all"]).status == 0)
        let zeros = String(repeating: "0", count: 40)
        #expect(try session.get("com.acme.notes", none) == zeros)
        let report = try session.report("org.indie.chess", none)
        #expect(report["id"] as? String == zeros)
        #expect(report["optedOut"] as? String == "user")
        #expect(try session.run(["opt-out", "--all", "--undo"]).status == 0)
        #expect(try session.get("com.acme.notes", none) == shared)
    }
}

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
