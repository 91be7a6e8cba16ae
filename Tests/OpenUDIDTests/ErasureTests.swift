import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// `openudid forget --all`: everything the library wrote for the user goes,
/// files and keyring items, in every namespace; the apps' own files stay.
@Suite struct ErasureTests {
    /// Every regular file under `root`, relative to it.
    private func files(under root: URL) -> Set<String> {
        var found: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.path + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.insert(path)
            }
        }
        return found
    }

    @Test func forgetAllLeavesNothingOfTheLibraryInTheFilesOrTheKeyring() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(display: nil, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let keyring = ["--mirror", "secret-service"]
        let udid = try session.get("com.acme.notes", keyring)
        _ = try session.get("org.indie.chess", ["--mirror", "file"])
        // The tool itself, not the session's wrapper: these runs name their own namespace, or none.
        func openudid(_ arguments: [String]) throws -> CommandResult {
            try runCommand(Tools.product("openudid"), arguments, environment: session.environment)
        }
        #expect(try openudid(["get", "--app", "com.acme.photos", "--namespace", "other"] + keyring).status == 0)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        #expect(try session.run(["opt-out", "--all"]).status == 0)
        // A file of the app's own, beside the library's: it must stay.
        let own = bus.home.dataHome.appendingPathComponent("com.acme.notes/notes.db")
        try Data("the app's data".utf8).write(to: own)
        let itemsBefore = try bus.searchItems(["xdg:schema": SecretServiceMirror.schemaName])
        #expect(itemsBefore.unlocked.count == 2, "one item per vendor and namespace")

        let dryRun = try openudid(["forget", "--all", "--dry-run"])
        #expect(dryRun.status == 0)
        #expect(dryRun.standardOutput.contains("keyring: OpenUDID identifier for com.acme"))
        #expect(dryRun.standardOutput.contains("slots/com.acme.notes.json"))
        #expect(try bus.searchItems(["xdg:schema": SecretServiceMirror.schemaName]).unlocked.count == 2, "a dry run removes nothing")

        let forget = try openudid(["forget", "--all"])
        #expect(forget.status == 0, "\(forget.standardError)")
        #expect(forget.standardOutput == dryRun.standardOutput, "it removed what the dry run listed")
        let left = files(under: bus.home.root)
        #expect(!left.contains { $0.contains("openudid") }, "\(left.sorted())")
        #expect(left.contains { $0.hasSuffix("com.acme.notes/notes.db") }, "the app's own file stays")
        let itemsAfter = try bus.searchItems(["xdg:schema": SecretServiceMirror.schemaName])
        #expect(itemsAfter.unlocked.isEmpty && itemsAfter.locked.isEmpty)
        // The identifier is gone: the next app starts from nothing.
        #expect(try session.get("com.acme.notes", keyring) != udid)
    }
}
