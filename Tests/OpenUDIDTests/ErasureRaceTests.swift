import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Erasing commands against an app that keeps resolving: once the command
/// returns, no copy it erased comes back, not even from a resolution that was
/// under way (docs/PROTOCOL.md §9, the erasure lock).
///
/// The app runs as `openudid serve`; a second X client takes another slot every
/// 20 ms, and each take makes the app resolve again, so that resolutions are
/// under way whenever the command runs.
@Suite(.requiresXvfb) struct ErasureRaceTests {
    static let app = "com.acme.notes"
    static let zeros = Identifier.optedOut.hex
    static let rounds = 20

    /// The app's own copies that exist: its file slot and its local cache, and
    /// with `mirror` its vendor's mirror file too.
    private func copies(_ session: TestSession, mirror: Bool = true) -> [String] {
        let data = session.home.dataHome.path
        let shared = data + "/openudid/ns/\(session.namespace)"
        let paths = [shared + "/slots/\(Self.app).json", data + "/\(Self.app)/openudid-\(session.namespace).json"]
        return (paths + (mirror ? [shared + "/vendors/com.acme.json"] : [])).filter { FileManager.default.fileExists(atPath: $0) }
    }

    /// Whether any of the app's copies holds `identifier`.
    private func anyCopy(_ session: TestSession, holds identifier: String) -> Bool {
        copies(session).contains { path in
            (try? String(contentsOfFile: path, encoding: .utf8))?.contains(identifier) == true
        }
    }

    /// A client that takes slot 50 of the session every 20 ms.
    private func churn(_ session: TestSession) throws -> ChildProcess {
        try startSelectionHelper(
            display: SharedDisplay.display,
            ["steal", "--prefix", session.slotPrefix, "--start", "50", "--count", "1", "--every-ms", "20", "--text", "churn"])
    }

    /// `openudid` itself, without the session's namespace (for `forget`, which takes none).
    private func openudid(_ session: TestSession, _ arguments: [String]) throws -> CommandResult {
        try runCommand(Tools.product("openudid"), arguments, environment: session.environment)
    }

    @Test(arguments: ["withdraw", "forget"])
    func noCopyOutlivesTheErasureOfAnAppThatRequiresConsent(command: String) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let thief = try churn(session)
        defer { thief.signal(SIGKILL) }
        // Withdrawing consent leaves the vendor's mirror, shared with the vendor's other apps.
        let mirror = command == "forget"

        var reappeared: [String] = []
        for round in 1...Self.rounds {
            // Without consent the app has no copy, and its first resolution adds none.
            let participant = try session.serve(Self.app, ["--consent", "required", "--mirror", "file"])
            defer { participant.stop() }
            #expect(participant.current == Self.zeros)
            #expect(copies(session, mirror: mirror).isEmpty, "round \(round): a copy came back")

            // Consent, and at once its erasure: the app hears of the consent and is
            // resolving and writing its copies while the erasure runs.
            #expect(try session.run(["consent", "--app", Self.app, "grant"]).status == 0)
            let erased =
                command == "withdraw"
                ? try session.run(["consent", "--app", Self.app, "withdraw"]) : try openudid(session, ["forget", "--all"])
            try #require(erased.status == 0, "\(erased.standardError)")
            let atReturn = copies(session, mirror: mirror)
            // Stopping the app waits for the resolution under way, if any: after it
            // no resolution begun before the erasure is left to write.
            participant.stop()
            let afterwards = copies(session, mirror: mirror)
            if !atReturn.isEmpty || !afterwards.isEmpty {
                reappeared.append("round \(round): \(atReturn.count) at return, \(afterwards.count) afterwards")
            }
            #expect(try session.run(["consent", "--app", Self.app, "status"]).standardOutput == "absent\n")
        }
        #expect(reappeared.isEmpty, "copies left after \(command): \(reappeared)")
    }

    @Test func noCopyOfTheOldIdentifierOutlivesAReset() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let participant = try session.serve(Self.app, ["--mirror", "file"])
        defer { participant.stop() }
        let thief = try churn(session)
        defer { thief.signal(SIGKILL) }

        var reappeared: [String] = []
        for round in 1...Self.rounds {
            let old = try #require(participant.current)
            try #require(eventually { copies(session).count == 3 && !anyCopy(session, holds: Self.zeros) }, "round \(round)")

            try #require(try session.run(["reset"]).status == 0)
            // From the reset's return until the app serves its new identifier, and
            // after, no copy of the old one.
            var sawOld = false
            // Looked at every 2 ms, so that a copy that comes back and goes again is seen.
            let moved = eventually(timeout: 20, every: 0.002) {
                if anyCopy(session, holds: old) { sawOld = true }
                return participant.current != old && copies(session).count == 3
            }
            try #require(moved, "round \(round): the app did not move to a new identifier")
            if sawOld || anyCopy(session, holds: old) { reappeared.append("round \(round): \(old)") }
        }
        #expect(reappeared.isEmpty, "copies of an identifier from before a reset: \(reappeared)")
    }

    /// Removing an app (and every other erasure) drops what a resolution under way
    /// read before it: that resolution writes none of the app's copies.
    @Test func aResolutionUnderWayWritesNothingBackAfterTheAppIsRemoved() throws {
        let home = try PrivateHome()
        let configuration = OpenUDID.Configuration(usesSelections: false, mirror: .file, environment: home.environment())
        let udid = try OpenUDID(app: Self.app, configuration: configuration)
        let identifier = udid.value()
        let engine = udid.engine
        let record = SlotRecord(
            id: identifier, app: Self.app, vendor: "com.acme", born: 1_700_000_000_000, written: 1_700_000_000_000, optOut: false)

        // A resolution starts reading, then the app is removed.
        engine.erasureFence.pin()
        try OpenUDID.User(environment: home.environment()).removeApp(Self.app)
        for place in [engine.fileSlot, engine.localCachePlace] {
            #expect(throws: StoreUnavailable.self) { try place.write(record.encoded()) }
            #expect(place.read() == .absent, "\(place.name)")
        }
        // A resolution that starts afterwards writes the copies again.
        #expect(udid.value(refresh: true) == identifier)
        #expect(engine.fileSlot.read() != .absent && engine.localCachePlace.read() != .absent)
    }
}
