import Foundation
import TestSupport
import Testing

/// What withdrawing consent does to the vendor's mirror, which names the app that wrote it.
@Suite struct ConsentMirrorTests {
    static let required = ["--consent", "required", "--mirror", "file"]

    /// The vendor's mirror file of the session, or nil when there is none.
    private func mirrorRecord(_ session: TestSession, vendor: String) -> String? {
        let directory = session.home.dataHome.appendingPathComponent("openudid")
        let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
        guard let file = files.first(where: { $0.hasSuffix("vendors/\(vendor).json") }) else { return nil }
        return try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
    }

    @Test func withdrawingDeletesTheMirrorThisAppWrote() throws {
        let session = try TestSession(display: nil)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        let identifier = try session.get("com.acme.notes", Self.required)
        let written = try #require(mirrorRecord(session, vendor: "com.acme"), "the app wrote its vendor's mirror")
        #expect(written.contains("com.acme.notes") && written.contains(identifier))

        let withdrawn = try session.run(["consent", "--app", "com.acme.notes", "withdraw", "--mirror", "file"])
        #expect(withdrawn.status == 0, "\(withdrawn.standardError)")
        #expect(mirrorRecord(session, vendor: "com.acme") == nil, "the mirror carried the app's id")
    }

    @Test func withdrawingLeavesAMirrorAnotherAppOfTheVendorWrote() throws {
        let session = try TestSession(display: nil)
        let identifier = try session.get("com.acme.photos", ["--mirror", "file"])
        let before = try #require(mirrorRecord(session, vendor: "com.acme"))
        #expect(before.contains("com.acme.photos"))
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        #expect(try session.get("com.acme.notes", Self.required) == identifier)
        let after = try #require(mirrorRecord(session, vendor: "com.acme"))
        #expect(!after.contains("com.acme.notes"), "the mirror still names the app that wrote it: \(after)")

        #expect(try session.run(["consent", "--app", "com.acme.notes", "withdraw", "--mirror", "file"]).status == 0)
        #expect(mirrorRecord(session, vendor: "com.acme") == after, "a mirror without this app's id stays for the vendor's other apps")
    }
}
