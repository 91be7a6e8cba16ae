import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// The async forms never block the caller's thread: with the keyring daemon
/// frozen (SIGSTOP), a resolution waits on the Secret Service, and meanwhile
/// the main actor, which awaits it, keeps running other work.
@Suite struct AsyncAPITests {
    @MainActor @Test func aResolutionWaitingOnAFrozenKeyringLeavesTheMainActorFree() async throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let home = try PrivateHome()
        let environment = home.environment(display: nil, extra: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        var configuration = OpenUDID.Configuration(display: nil, mirror: .secretService, environment: environment)
        // Longer than any test run: the resolution cannot end while the keyring is frozen.
        configuration.secretServiceDeadline = .seconds(600)
        let udid = try OpenUDID(app: "com.acme.notes", configuration: configuration)

        bus.suspendKeyring()
        let resolved = Locked(false)
        let resolution = Task { @MainActor in
            let report = await udid.resolve()
            resolved.withLock { $0 = true }
            return report
        }
        // The main actor runs this loop while the resolution is under way: were
        // the resolution holding the main thread, none of it could run before
        // the keyring answered.
        var turns = 0
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(5))
            turns += 1
        }
        #expect(turns == 5)
        #expect(!resolved.withLock { $0 }, "the resolution finished although the keyring was frozen")
        bus.resumeKeyring()

        let report = await resolution.value
        #expect(resolved.withLock { $0 })
        #expect(report.identifier.hex.count == 40)
        // The async and the synchronous forms give the same cached value.
        #expect(await udid.value() == udid.value())
    }
}
