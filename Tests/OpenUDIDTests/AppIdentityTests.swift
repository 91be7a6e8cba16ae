import Foundation
import Testing

@testable import OpenUDIDKit

@Suite struct AppIdentityTests {
    @Test(arguments: [
        ("com.acme.notes", "com.acme"),
        ("com.acme", "com.acme"),
        ("org.example.Foo_Bar.baz", "org.example"),
        ("io.git-hub.tool", "io.git-hub"),
        ("_private.app", "_private.app"),
        ("a.b0.c", "a.b0"),
        // Hosting prefixes: the third element names the owner.
        ("io.github.alice.App", "io.github.alice"),
        ("io.github.bob.Game", "io.github.bob"),
        ("org.gnome.World.Secrets", "org.gnome.World"),
        ("org.kde.kate", "org.kde.kate"),
        ("page.codeberg.carol.Tool", "page.codeberg.carol"),
        ("net.sourceforge.proj.App", "net.sourceforge.proj"),
        // Exactly the prefix and one element: that element names the owner, so the id is its own vendor.
        ("io.github.alice", "io.github.alice"),
        // The prefix alone has no owner element: two elements, as for any id.
        ("io.github", "io.github"),
        // Prefixes match byte for byte, case included, and only as whole elements.
        ("IO.GitHub.alice.App", "IO.GitHub"),
        ("io.githubx.alice.App", "io.githubx"),
        ("com.acme.notes.extra", "com.acme")
    ])
    func acceptsReverseDNSAndDerivesVendor(id: String, vendor: String) throws {
        let identity = try AppIdentity(id)
        #expect(identity.id == id)
        #expect(identity.vendor == vendor)
    }

    @Test func acceptsAnExplicitVendor() throws {
        let identity = try AppIdentity("com.acme.notes", vendor: "com.acme.suite")
        #expect(identity.vendor == "com.acme.suite")
    }

    @Test func strangersUnderAHostingPrefixGetDifferentVendors() throws {
        let alice = try AppIdentity("io.github.alice.App")
        let bob = try AppIdentity("io.github.bob.Game")
        #expect(alice.vendor != bob.vendor)
        #expect(try AppIdentity("io.github.alice.Other").vendor == alice.vendor)
        #expect(try AppIdentity("com.acme.notes").vendor == "com.acme")
        for prefix in AppIdentity.hostingPrefixes {
            #expect(try AppIdentity(prefix + ".owner.App").vendor == prefix + ".owner")
            #expect(AppIdentity.isValid(prefix))
        }
    }

    @Test func acceptsTheLongestAllowedId() throws {
        #expect(AppIdentity.maximumLength == 224)
        let id = "a." + String(repeating: "b", count: 222)
        #expect(id.utf8.count == 224)
        #expect(throws: Never.self) { try AppIdentity(id) }
        #expect(throws: IdentityError(name: id + "c", role: .app, rule: .tooLong(225))) { try AppIdentity(id + "c") }
        #expect(throws: IdentityError(name: id + "c", role: .vendor, rule: .tooLong(225))) {
            _ = try AppIdentity("com.acme", vendor: id + "c")
        }
    }

    @Test func theLongestIdLeavesRoomForItsQuarantinedFileSlot() throws {
        let id = "a." + String(repeating: "b", count: AppIdentity.maximumLength - 2)
        let longest = "\(id).json.corrupt-\(9_999_999_999_999)-999"
        #expect(longest.utf8.count == 255)
        // And the file system takes it.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openudid-name-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent(longest).path, contents: Data()))
        #expect(!FileManager.default.createFile(atPath: directory.appendingPathComponent(longest + "x").path, contents: Data()))
    }

    @Test func messageNamesTheLengthLimit() {
        let id = "a." + String(repeating: "b", count: 229)
        #expect(throws: IdentityError(name: id, role: .app, rule: .tooLong(231))) { try AppIdentity(id) }
        let message = IdentityError(name: id, role: .app, rule: .tooLong(231)).description
        #expect(message.contains("231 bytes long, over the 224-byte limit"))
    }

    @Test(arguments: [
        ("", IdentityError.Rule.empty),
        ("notes", .tooFewElements),
        (".acme.notes", .emptyElement(position: 1)),
        ("com..notes", .emptyElement(position: 2)),
        ("com.acme.", .emptyElement(position: 3)),
        ("1acme.notes", .elementStartsWithDigit("1acme")),
        ("com.acme.9lives", .elementStartsWithDigit("9lives")),
        ("com.acme/notes.x", .invalidCharacter("/", element: "acme/notes")),
        ("com.acme.no tes", .invalidCharacter(" ", element: "no tes")),
        ("com.ac\u{0}me", .invalidCharacter("\u{0}", element: "ac\u{0}me")),
        ("com.acmé", .invalidCharacter("é", element: "acmé")),
        ("com.acme..", .emptyElement(position: 3)),
        ("../../etc.passwd", .emptyElement(position: 1))
    ])
    func rejectsInvalidIds(id: String, rule: IdentityError.Rule) {
        #expect(throws: IdentityError(name: id, role: .app, rule: rule)) { try AppIdentity(id) }
        #expect(!AppIdentity.isValid(id))
    }

    @Test func rejectsAnInvalidVendorOverride() {
        #expect(throws: IdentityError(name: "acme", role: .vendor, rule: .tooFewElements)) {
            try AppIdentity("com.acme.notes", vendor: "acme")
        }
    }

    @Test func messageNamesTheIdTheRuleAndTheRemedy() {
        do {
            _ = try AppIdentity("1acme.notes")
            Issue.record("accepted an id that starts with a digit")
        } catch {
            #expect(
                error.description
                    == "\"1acme.notes\" is not a valid app id: element \"1acme\" starts with a digit; use reverse-DNS like com.example.App")
        }
    }

    @Test func messageEscapesAndShortensHostileText() {
        let hostile = "com.a\nb" + String(repeating: "x", count: 10_000)
        let error = IdentityError(name: hostile, role: .app, rule: .invalidCharacter("\n", element: "a\nb"))
        #expect(!error.description.contains("\n"))
        #expect(error.description.count < 400)
    }
}
