import Testing
@testable import OpenUDID

@Suite struct AppIdentityTests {
    @Test(arguments: [
        ("com.acme.notes", "com.acme"),
        ("com.acme", "com.acme"),
        ("org.example.Foo_Bar.baz", "org.example"),
        ("io.git-hub.tool", "io.git-hub"),
        ("_private.app", "_private.app"),
        ("a.b0.c", "a.b0"),
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

    @Test func acceptsTheLongestAllowedId() throws {
        let id = "a." + String(repeating: "b", count: 253)
        #expect(id.utf8.count == 255)
        #expect(throws: Never.self) { try AppIdentity(id) }
        #expect(throws: IdentityError(name: id + "c", role: .app, rule: .tooLong(256))) { try AppIdentity(id + "c") }
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
        ("../../etc.passwd", .emptyElement(position: 1)),
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
            #expect(error.description
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
