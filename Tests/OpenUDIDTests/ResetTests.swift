import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// `openudid reset`: every participating app moves to a new identifier and
/// never back, whether it was running, stopped, or reads a mirror that still
/// holds the old one; afterwards no file, slot or keyring item holds the old
/// identifier (docs/PROTOCOL.md §9).
@Suite(.requiresXvfb) struct ResetTests {
    static let keyring = ["--mirror", "secret-service"]

    /// Every regular file under `root` whose bytes contain `text`.
    private func filesHolding(_ text: String, under root: URL) -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let path = enumerator?.nextObject() as? String {
            let url = root.appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let data = try? Data(contentsOf: url)
            else { continue }
            if String(decoding: data, as: UTF8.self).contains(text) { found.append(path) }
        }
        return found
    }

    @Test func runningStoppedAndMirrorReadingAppsMoveToANewIdentifierAndNothingKeepsTheOld() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(
            display: SharedDisplay.display, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])

        // Two running apps of two vendors, and one of the first vendor that ran once
        // and is not running at the reset: its file slot and cache hold the value.
        let notes = try session.serve("com.acme.notes", Self.keyring)
        defer { notes.stop() }
        let old = try #require(notes.current)
        let chess = try session.serve("org.indie.chess", Self.keyring)
        defer { chess.stop() }
        #expect(chess.current == old)
        #expect(try session.get("com.acme.photos", Self.keyring) == old)

        // The keyring is locked at the reset, so its items cannot be removed: a
        // mirror that still holds the old identifier afterwards.
        try bus.lockDefaultCollection()
        let reset = try session.run(["reset"])
        #expect(reset.status == 0, "\(reset.standardError)")
        #expect(reset.standardOutput.hasPrefix("generation 1\n"), "\(reset.standardOutput)")
        #expect(reset.standardOutput.contains("slots/com.acme.photos.json"))
        #expect(reset.standardError.contains("left in place: the Secret Service"), "\(reset.standardError)")

        // Running apps hear the reset and agree on one new identifier.
        let new = try #require(notes.nextIdentifier(timeout: 15))
        #expect(new != old)
        #expect(new.count == 40 && new != Identifier.optedOut.hex)
        var chessNow = chess.nextIdentifier(timeout: 15)
        while chessNow != new, let line = chess.nextIdentifier(timeout: 15) { chessNow = line }
        #expect(chessNow == new)

        // The stopped app starts after the keyring is unlocked: its vendor's mirror
        // still holds the old identifier, which is superseded, not brought back.
        // The running apps stop first: one that resolved again after the unlock
        // would rewrite the mirror before this app could read the old value.
        notes.stop()
        chess.stop()
        try bus.unlock(password: "correct horse")
        let photos = try session.report("com.acme.photos", Self.keyring)
        #expect(photos["id"] as? String == new)
        #expect(photos["generation"] as? Int == 1)
        let superseded = (photos["ignored"] as? [[String: Any]] ?? []).filter { $0["reason"] as? String == "superseded" }
        #expect(superseded.contains { ($0["candidate"] as? [String: Any])?["kind"] as? String == "mirror" }, "\(photos)")
        // A reader of the other vendor's mirror rewrites it too.
        #expect(try session.get("org.indie.go", Self.keyring) == new)

        // No copy of the old identifier is left: files, keyring items, selection slots.
        #expect(filesHolding(old, under: bus.home.root).isEmpty, "\(filesHolding(old, under: bus.home.root))")
        for app in ["com.acme.notes", "org.indie.chess"] {
            let mirror = try session.report(app, Self.keyring)["mirror"] as? [String: Any]
            #expect((mirror?["record"] as? [String: Any])?["id"] as? String == new, "\(app): \(String(describing: mirror))")
        }
        let items = try bus.searchItems(["xdg:schema": SecretServiceMirror.schemaName, "namespace": session.namespace])
        #expect(items.unlocked.count == 2 && items.locked.isEmpty, "one item per vendor: \(items)")
        let slots = try session.run(["slots", "--json"])
        #expect(slots.status == 0)
        #expect(!slots.standardOutput.contains(old), "\(slots.standardOutput)")
        #expect(slots.standardOutput.contains(new))
    }

    @Test func aResetKeepsTheUsersOptOutsAndConsentButNotTheOldValue() throws {
        let session = try TestSession(display: nil)
        let files = ["--mirror", "file"]
        let old = try session.get("com.acme.notes", files)
        #expect(try session.get("org.indie.chess", files) == old)
        #expect(try session.run(["opt-out", "--app", "org.indie.chess"] + files).status == 0)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)

        let reset = try session.run(["reset"])
        #expect(reset.status == 0, "\(reset.standardError)")
        #expect(reset.standardError.isEmpty, "\(reset.standardError)")

        let notes = try session.report("com.acme.notes", files + ["--consent", "required"])
        let new = try #require(notes["id"] as? String)
        #expect(new != old && new != Identifier.optedOut.hex)
        #expect(notes["origin"] as? String == "generated")
        #expect(try session.get("org.indie.chess", files) == Identifier.optedOut.hex, "the app's opt-out stays")
        #expect(try session.run(["opt-out", "--app", "org.indie.chess", "--undo"] + files).status == 0)
        #expect(try session.get("org.indie.chess", files) == new, "back in, it takes the new identifier, not the old")
        #expect(filesHolding(old, under: session.home.root).isEmpty)

        // A second reset raises the generation again.
        let again = try session.run(["reset"])
        #expect(again.standardOutput.hasPrefix("generation 2\n"), "\(again.standardOutput)")
        let third = try session.report("org.indie.chess", files)
        #expect(third["generation"] as? Int == 2)
        #expect(third["id"] as? String != new)
    }

    @Test func aRunningAppWithoutAnXServerHearsTheResetThroughTheMarker() throws {
        let session = try TestSession(display: nil)
        let files = ["--mirror", "file"]
        let participant = try session.serve("com.acme.notes", files)
        defer { participant.stop() }
        let old = try #require(participant.current)

        #expect(try session.run(["reset"]).status == 0)
        let new = participant.nextIdentifier(timeout: 10)
        #expect(new != nil && new != old)
        #expect(try session.get("org.indie.chess", files) == new)
    }

    @Test func aCorruptMarkerIsKeptAsideAndTheRecordsStillSupersede() throws {
        let session = try TestSession(display: nil)
        let files = ["--mirror", "file"]
        _ = try session.get("com.acme.notes", files)
        #expect(try session.run(["reset"]).status == 0)
        let second = try session.get("com.acme.notes", files)

        let shared = session.home.dataHome.appendingPathComponent("openudid/ns/\(session.namespace)")
        let marker = shared.appendingPathComponent("reset")
        try Data("not a number\n".utf8).write(to: marker)
        // The records of generation 1 still make it current: nothing goes back.
        let report = try session.report("com.acme.notes", files)
        #expect(report["id"] as? String == second)
        #expect(report["generation"] as? Int == 1)
        let rejected = (report["rejected"] as? [[String: Any]] ?? []).compactMap { $0["place"] as? String }
        #expect(rejected.contains(marker.path), "\(rejected)")

        let reset = try session.run(["reset"])
        #expect(reset.standardOutput.hasPrefix("generation 2\n"), "\(reset.standardOutput)")
        let names = try FileManager.default.contentsOfDirectory(atPath: shared.path)
        #expect(names.contains { $0.hasPrefix("reset.corrupt-") }, "\(names)")
    }
}
