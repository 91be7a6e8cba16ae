import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// The async forms never block the thread that awaits them: with the keyring
/// daemon frozen (SIGSTOP), resolutions wait on the Secret Service, and the
/// threads of Swift's cooperative pool, on which every task (a UI's too) runs,
/// stay free for other work meanwhile.
@Suite struct AsyncAPITests {
    @Test func resolutionsWaitingOnAFrozenKeyringLeaveTheTaskThreadsFree() async throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let home = try PrivateHome()
        let environment = home.environment(display: nil, extra: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        var configuration = OpenUDID.Configuration(display: nil, mirror: .secretService, environment: environment)
        // Longer than any test run: no resolution can end while the keyring is frozen.
        configuration.secretServiceDeadline = .seconds(600)
        // More resolutions at once than the pool has threads (one per core), each
        // on a handle of its own: were each holding its thread, none would be left.
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let handles = try (0..<count).map { try OpenUDID(app: "com.acme.app\($0)", configuration: configuration) }

        bus.suspendKeyring()
        let finished = Locked(0)
        let resolutions = handles.map { udid in
            Task {
                let report = await udid.resolve()
                finished.withLock { $0 += 1 }
                return report
            }
        }
        // A task started now runs only if a pool thread is free, and then before any
        // resolution ends. Were every thread held, it would run only once the keyring
        // is back and the resolutions are done: a thread outside the pool brings the
        // keyring back as soon as the task ran, or after a minute, so that order,
        // not a clock, decides.
        let ran = DispatchSemaphore(value: 0)
        let meanwhile = Task.detached {
            defer { ran.signal() }
            return finished.withLock { $0 } == 0
        }
        Thread.detachNewThread {
            _ = ran.wait(timeout: .now() + 60)
            bus.resumeKeyring()
        }
        let ranMeanwhile = await meanwhile.value
        #expect(ranMeanwhile, "other tasks ran only after the resolutions, although the keyring was frozen")

        for resolution in resolutions {
            #expect(await resolution.value.identifier.hex.count == 40)
        }
        #expect(finished.withLock { $0 } == count)
        // The async and the synchronous forms give the same cached value.
        #expect(await handles[0].value() == handles[0].value())
    }
}
