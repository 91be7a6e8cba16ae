import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// The scenarios the vendor mirror exists for, with real `openudid` processes,
/// a private session bus and a real gnome-keyring.
@Suite(.requiresXvfb) struct VendorMirrorScenarioTests {
    let bus: PrivateSessionBus
    let session: TestSession

    init() throws {
        bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        session = try TestSession(
            display: SharedDisplay.display, home: bus.home,
            extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
    }

    private func secretTool(_ arguments: [String]) throws -> CommandResult {
        try runCommand(try Tools.find("secret-tool"), arguments, environment: bus.environment())
    }

    /// Installs the com.acme apps, lets them agree, then removes every one of them.
    private func acmeAppsComeAndGo() throws -> String {
        let notes = try session.serve("com.acme.notes")
        let shared = try #require(notes.current)
        #expect(try session.get("com.acme.calendar") == shared)
        notes.stop()
        for app in ["com.acme.notes", "com.acme.calendar"] {
            #expect(try session.run(["remove-app", app]).status == 0)
        }
        return shared
    }

    @Test func theAutomaticChoiceIsTheSecretServiceAndTheItemIsVisibleToOtherClients() throws {
        let report = try session.report("com.acme.notes")
        let mirror = try #require(report["mirror"] as? [String: Any])
        #expect(mirror["store"] as? String == "secret-service")
        let lookup = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"])
        #expect(lookup.status == 0)
        let stored = try SlotRecord.parse(Data(lookup.standardOutput.utf8))
        #expect(stored.id.hex == report["id"] as? String)
        #expect(stored.vendor == "com.acme")
        // The next read reports what the store held.
        let again = try session.report("com.acme.notes")
        let held = try #require((again["mirror"] as? [String: Any])?["record"] as? [String: Any])
        #expect(held["id"] as? String == report["id"] as? String)
    }

    @Test func anAppOfTheSameVendorGetsTheOldIdentifierBackFromTheMirror() throws {
        let shared = try acmeAppsComeAndGo()
        let photos = try session.report("com.acme.photos")
        #expect(photos["id"] as? String == shared)
        let agreeing = (photos["agreeing"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }
        #expect(agreeing.contains { $0.contains("secret-service") })
    }

    @Test func anAppOfAnotherVendorGetsANewIdentifier() throws {
        let shared = try acmeAppsComeAndGo()
        let chess = try session.get("org.indie.chess")
        #expect(chess.count == 40)
        #expect(chess != shared)
    }

    @Test func wipingTheMirrorAfterRemovingEveryAppGivesANewIdentifier() throws {
        let shared = try acmeAppsComeAndGo()
        #expect(try secretTool(["clear", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"]).status == 0)
        let photos = try session.get("com.acme.photos")
        #expect(photos != shared)
    }

    @Test func aLockedKeyringLeavesTheOldIdentifierInPlace() throws {
        let shared = try acmeAppsComeAndGo()
        try bus.lockDefaultCollection()
        let locked = try session.report("com.acme.photos")
        // The mirror is unknown, not absent: the app makes do, and writes nothing there.
        let sources = locked["sources"] as? [[String: Any]] ?? []
        let mirror = try #require(sources.first { $0["name"] as? String == "mirror" })
        #expect(mirror["state"] as? String == "unavailable")
        #expect((mirror["detail"] as? String ?? "").contains("locked"))
        let repairs = locked["repairs"] as? [[String: Any]] ?? []
        #expect(repairs.first { $0["place"] as? String == "mirror" }?["outcome"] as? String == "skipped")

        try bus.unlock(password: "correct horse")
        let lookup = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"])
        #expect(try SlotRecord.parse(Data(lookup.standardOutput.utf8)).id.hex == shared)
        // Once the mirror answers again, its older identifier wins the tie.
        #expect(try session.get("com.acme.photos") == shared)
    }

    @Test func theToolCanBeToldWhichMirrorToUse() throws {
        let file = try session.report("com.acme.notes", ["--mirror", "file"])
        #expect((file["mirror"] as? [String: Any])?["store"] as? String == "file")
        let none = try session.report("com.acme.notes", ["--mirror", "none"])
        #expect((none["mirror"] as? [String: Any])?["store"] is NSNull)
        let lookup = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"])
        #expect(lookup.standardOutput.isEmpty, "with --mirror file the keyring must stay untouched")
    }
}

@Suite struct AppScopeTests {
    @Test func theAppScopedValueIsStablePerAppAndUncorrelatedAcrossApps() throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("com.acme.notes", ["--mirror", "none"])
        let notes = try session.get("com.acme.notes", ["--mirror", "none", "--scope", "app"])
        let chess = try session.get("org.indie.chess", ["--mirror", "none", "--scope", "app"])
        #expect(notes != chess)
        #expect(notes == AppScopedIdentifier(shared: try Identifier(parsing: shared).bytes, appID: "com.acme.notes").uuidString)
        #expect(try session.get("com.acme.notes", ["--mirror", "none", "--scope", "app"]) == notes)
        #expect(!notes.replacingOccurrences(of: "-", with: "").contains(shared.prefix(8)))
    }
}
