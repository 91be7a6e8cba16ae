import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Consent mode with real processes: an app run with `--consent required`
/// reads, generates, writes and publishes nothing until the user's consent is
/// recorded, and withdrawing it erases the app's copies.
@Suite struct ConsentTests {
    static let required = ["--consent", "required", "--mirror", "file"]

    /// Every regular file under the session's home.
    private func files(_ session: TestSession) -> [String] {
        let root = session.home.root.path
        let enumerator = FileManager.default.enumerator(atPath: root)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.append(path)
            }
        }
        return found
    }

    /// The apps that serve a selection slot of the session.
    private func servedApps(_ session: TestSession) throws -> [String] {
        let result = try session.run(["slots", "--json", "--no-files"])
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        return (object?["slots"] as? [[String: Any]] ?? []).compactMap { $0["app"] as? String }
    }

    @Test func withoutConsentNothingIsReadWrittenOrPublished() throws {
        let session = try TestSession(display: SharedDisplay.display)
        // Another app has an identifier: an app without consent must not even read it.
        let other = try session.get("org.indie.chess", ["--mirror", "file"])
        let before = Set(files(session))

        #expect(try session.get("com.acme.notes", Self.required) == Identifier.optedOut.hex)
        let report = try session.report("com.acme.notes", Self.required)
        #expect(report["optedOut"] as? String == "no-consent")
        #expect((report["votes"] as? [Any])?.isEmpty == true, "nothing was read")
        #expect(Set(files(session)) == before, "nothing was written: \(Set(files(session)).subtracting(before))")

        let participant = try session.serve("com.acme.notes", Self.required)
        defer { participant.stop() }
        #expect(participant.current == Identifier.optedOut.hex)
        #expect(try !servedApps(session).contains("com.acme.notes"))
        #expect(Set(files(session)) == before)

        // Consent given: the app takes part and joins the others.
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "status"]).standardOutput == "granted\n")
        #expect(try session.get("com.acme.notes", Self.required) == other)
        #expect(files(session).contains { $0.hasSuffix("slots/com.acme.notes.json") })
    }

    @Test func withdrawingConsentErasesTheAppsCopies() throws {
        let session = try TestSession(display: nil)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        let identifier = try session.get("com.acme.notes", Self.required)
        #expect(identifier != Identifier.optedOut.hex)
        #expect(files(session).contains { $0.hasSuffix("slots/com.acme.notes.json") })
        #expect(files(session).contains { $0.contains("com.acme.notes/openudid-") && $0.hasSuffix(".json") })

        #expect(try session.run(["consent", "--app", "com.acme.notes", "withdraw"]).status == 0)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "status"]).standardOutput == "absent\n")
        let left = files(session)
        #expect(!left.contains { $0.contains("com.acme.notes") }, "\(left)")
        #expect(try session.get("com.acme.notes", Self.required) == Identifier.optedOut.hex)
    }

    @Test func aParticipationServesNoSlotUntilConsentAndGivesItUpOnWithdrawal() async throws {
        let session = try TestSession(display: SharedDisplay.display)
        var configuration = OpenUDID.Configuration(
            display: session.display, namespace: session.namespace, mirror: .none, environment: session.environment)
        configuration.requiresConsent = true
        let udid = try OpenUDID(app: "com.acme.notes", configuration: configuration)
        #expect(!udid.hasConsent)
        let participation = try await udid.participate()
        defer { participation.close() }
        #expect(eventually(timeout: 10) { participation.report.optOut == .noConsent })
        #expect(participation.slot == nil)

        try udid.grantConsent()
        await participation.refresh()
        #expect(eventually(timeout: 10) { participation.slot != nil && !participation.report.identifier.isOptedOut })
        #expect(try servedApps(session).contains("com.acme.notes"))

        try udid.withdrawConsent()
        await participation.refresh()
        #expect(eventually(timeout: 10) { participation.slot == nil && participation.report.optOut == .noConsent })
        #expect(eventually(timeout: 10) { (try? servedApps(session).contains("com.acme.notes")) == false })
    }
}
