import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Settling early (docs/PROTOCOL.md §5.1) with real processes: a participant
/// stopped with SIGSTOP keeps its slot and never answers. Where the answers in
/// hand settle the vote, a reader does not wait for it and says so
/// (`not-awaited`); where they do not, it waits to the deadline as before
/// (`no-answer`). Which of the two happened is read from the report, not
/// from a clock.
@Suite struct SettleEarlyTests {
    static let selectionOnly = ["--no-files", "--mirror", "none"]

    /// The `rejected[].code` values of a `get --json` report.
    private func codes(_ report: [String: Any]) -> [String] {
        (report["rejected"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
    }

    /// Serves `identifier` as app `app` in slot `slot` of `session`, from an X client of its own.
    private func owner(_ session: TestSession, slot: Int, app: String, identifier: String) throws -> ChildProcess {
        try startSelectionHelper(
            display: session.display ?? SharedDisplay.display,
            [
                "own", "--prefix", session.slotPrefix, "--count", "1", "--start", String(slot), "--target", "_OPENUDID_RECORD",
                "--text", Hostility.record(app: app, identifier: identifier)
            ])
    }

    @Test func aFrozenAppIsNotWaitedForWhenTheFilesDecide() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let participants = try apps.map { try session.serve($0, ["--mirror", "none"]) }
        defer {
            participants[2].child.signal(SIGCONT)
            participants.forEach { $0.stop() }
        }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let shared = try #require(participants[0].current)
        participants[2].child.signal(SIGSTOP)

        let report = try session.report("net.other.viewer", ["--mirror", "none"])
        #expect(report["id"] as? String == shared)
        // The frozen app's slot at least; on a busy machine a slow live app's
        // too, which the files outvote all the same.
        #expect(codes(report).contains("not-awaited"), "\(report["rejected"] ?? "none")")
        #expect(!codes(report).contains("no-answer"), "\(report["rejected"] ?? "none")")
    }

    @Test func threeAnswersSettleAgainstOneFrozenClientWithoutFiles() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let shared = Identifier.random().hex
        let honest = try (0..<3).map { try owner(session, slot: $0, app: "com.peer.app\($0)", identifier: shared) }
        let frozen = try owner(session, slot: 3, app: "com.peer.frozen", identifier: Identifier.random().hex)
        defer {
            frozen.signal(SIGCONT)
            (honest + [frozen]).forEach { $0.signal(SIGKILL) }
        }
        frozen.signal(SIGSTOP)

        let report = try session.report("org.fresh.app", Self.selectionOnly)
        #expect(report["id"] as? String == shared)
        #expect(codes(report) == ["not-awaited"], "\(report["rejected"] ?? "none")")
    }

    @Test func anUnsettledVoteWaitsForTheFrozenClientToTheDeadline() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let answering = Identifier.random().hex
        let live = try owner(session, slot: 0, app: "com.peer.live", identifier: answering)
        let frozen = try owner(session, slot: 1, app: "com.peer.frozen", identifier: Identifier.random().hex)
        defer {
            frozen.signal(SIGCONT)
            [live, frozen].forEach { $0.signal(SIGKILL) }
        }
        frozen.signal(SIGSTOP)

        // One ballot in hand against one client that could tie it: not settled.
        let report = try session.report("org.fresh.app", Self.selectionOnly)
        #expect(report["id"] as? String == answering)
        #expect(codes(report) == ["no-answer"], "\(report["rejected"] ?? "none")")
    }

    @Test func aParticipantHearsAFrozenAppOnceItThaws() async throws {
        // An X server of its own: on the shared one, other tests' floods can keep
        // the thawed app's answer past the deadline of every read again.
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let shared = Identifier.random().hex
        let thawing = Identifier.random().hex
        let honest = try (0..<2).map { try owner(session, slot: $0, app: "com.peer.app\($0)", identifier: shared) }
        let frozen = try owner(session, slot: 5, app: "com.peer.frozen", identifier: thawing)
        defer {
            frozen.signal(SIGCONT)
            (honest + [frozen]).forEach { $0.signal(SIGKILL) }
        }
        frozen.signal(SIGSTOP)

        var configuration = OpenUDID.Configuration(
            display: session.display, namespace: session.namespace, mirror: .none, environment: session.environment)
        configuration.usesFiles = false
        let udid = try OpenUDID(app: "com.acme.notes", configuration: configuration)
        let participation = try await udid.participate()
        defer { participation.close() }
        #expect(eventually(timeout: 10) { participation.report.identifier.hex == shared })
        // Not waited for once the two answers settle it, or, on a machine too busy
        // for the answers to come early, silent until the deadline: either way
        // the frozen slot is read again later.
        #expect(participation.report.silentSlots.count == 1, "\(participation.report.rejected)")

        // Thawed, it answers the next late read (1 s after the first pass), and
        // its record is counted: a ballot for its identifier, which loses.
        frozen.signal(SIGCONT)
        let heard = eventually(timeout: 40) {
            let report = participation.report
            return report.silentSlots.isEmpty && report.disagreeing.contains { $0.identifier.hex == thawing }
        }
        #expect(heard, "\(participation.report.rejected)")
        #expect(participation.report.identifier.hex == shared)
    }
}
