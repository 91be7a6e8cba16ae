import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// A Secret Service that answers garbage, dies mid-call or never answers costs at
/// most the mirror's deadline once and never the identifier the app already has.
@Suite struct BrokenSecretServiceTests {
    @Test(arguments: [FakeSecretService.Behaviour.garbage, .vanishOnCall, .silent])
    func aBrokenProviderCostsAtMostTheDeadlineAndNoData(_ behaviour: FakeSecretService.Behaviour) throws {
        let service = try FakeSecretService(behaviour)
        let environment = service.environment()
        // The app's identifier, kept before the broken provider is asked.
        let first = try runCommand(
            Tools.product("openudid"), ["get", "--app", "com.acme.notes", "--mirror", "file", "--no-display"], environment: environment)
        #expect(first.status == 0, "\(first.standardError)")

        _ = service.calls()
        let result = try runCommand(
            Tools.product("openudid"),
            ["get", "--app", "com.acme.notes", "--mirror", "secret-service", "--no-display", "--json"], environment: environment,
            timeout: 60)
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == first.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        let mirror = (report["sources"] as? [[String: Any]])?.first { $0["name"] as? String == "mirror" }
        #expect(mirror?["state"] as? String == "unavailable", "\(String(describing: mirror))")
        // What the provider cost, told by the provider rather than a clock: a call left
        // unanswered costs the 2 s deadline, and the silent one is asked once; an
        // answer, however wrong, or the provider's death ends a call at once.
        let detail = mirror?["detail"] as? String ?? ""
        let calls = service.calls()
        if behaviour == .silent {
            #expect(calls.count == 1, "each unanswered call waits out the deadline: \(calls)")
            #expect(detail.contains("did not answer within 2 s"), "\(detail)")
        } else {
            #expect(!calls.isEmpty && !detail.contains("did not answer"), "\(calls): \(detail)")
        }

        let store = SecretServiceMirror(busAddress: service.address)
        #expect(throws: StoreUnavailable.self) { try store.write(Data("never".utf8), vendor: "com.acme") }
        guard case .unavailable = store.read(vendor: "com.acme") else {
            Issue.record("a broken provider's answer is unknown, never absent")
            return
        }
    }
}
