import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

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
