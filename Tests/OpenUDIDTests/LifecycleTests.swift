import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

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
