import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Points of docs/PROTOCOL.md that another implementation could read two
/// ways, checked end to end through `openudid get --json` on real files.
@Suite struct ProtocolPointTests {
    static let files = ["--mirror", "none"]

    static func rejected(_ report: [String: Any], code: String) -> [[String: Any]] {
        (report["rejected"] as? [[String: Any]] ?? []).filter { $0["code"] as? String == code }
    }

    /// §6: the app's local cache holding another app's record casts no ballot,
    /// is reported as `misplaced`, and is moved aside before the app's own
    /// record is written there.
    @Test func aLocalCacheHoldingAnotherAppsRecordIsMisplacedAndKeptAside() throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("org.indie.chess", Self.files)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let notes = try AppIdentity("com.acme.notes")
        let cache = paths.localCacheFile(for: notes)
        try FileManager.default.createDirectory(
            atPath: (cache as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let planted = SlotRecord(
            id: Identifier.random(), app: try AppIdentity("com.acme.other"), born: 1_700_000_000_000, written: 1_700_000_000_000)
        try planted.encoded().write(to: URL(fileURLWithPath: cache))

        let report = try session.report(notes.id, Self.files)
        #expect(report["id"] as? String == shared, "the planted record is no ballot and no value of the app's")
        #expect(Self.rejected(report, code: "misplaced").count == 1, "\(report["rejected"] ?? "")")
        let kept = try FileManager.default.contentsOfDirectory(atPath: (cache as NSString).deletingLastPathComponent)
            .filter { $0.hasPrefix((cache as NSString).lastPathComponent + ".corrupt-") }
        #expect(kept.count == 1, "the planted bytes are kept aside")
        let now = try SlotRecord.parse(Data(contentsOf: URL(fileURLWithPath: cache)))
        #expect(now.app == notes.id && now.id.hex == shared)
    }

    /// §3 and §12: a file over 4096 bytes is `too-large`, not read, and the
    /// app's own is moved aside before its record is written again.
    @Test func anOversizedFileSlotIsTooLarge() throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("org.indie.chess", Self.files)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let slot = paths.slotsDirectory + "/com.acme.big.json"
        try Data(repeating: UInt8(ascii: " "), count: SlotRecord.maximumSize + 1).write(to: URL(fileURLWithPath: slot))

        let report = try session.report("com.acme.notes", Self.files)
        #expect(report["id"] as? String == shared)
        let tooLarge = Self.rejected(report, code: "too-large")
        #expect(
            tooLarge.count == 1 && (tooLarge.first?["place"] as? String ?? "").hasSuffix("com.acme.big.json"), "\(report["rejected"] ?? "")"
        )
    }

    /// §9: a marker is read with or without its final line feed; anything else
    /// names no generation and is reported, and the records still supersede.
    @Test func aMarkerWithoutItsLineFeedIsReadAndABadOneIsReported() throws {
        let session = try TestSession(display: nil)
        _ = try session.get("com.acme.notes", Self.files)
        #expect(try session.run(["reset"]).status == 0)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        try Data("1".utf8).write(to: URL(fileURLWithPath: paths.resetMarker))
        let report = try session.report("com.acme.notes", Self.files)
        #expect(report["generation"] as? Int == 1)
        #expect((report["rejected"] as? [[String: Any]] ?? []).isEmpty, "\(report["rejected"] ?? "")")

        try Data("one\n".utf8).write(to: URL(fileURLWithPath: paths.resetMarker))
        let bad = try session.report("com.acme.notes", Self.files)
        #expect(bad["generation"] as? Int == 1, "the records still carry generation 1")
        let reported = (bad["rejected"] as? [[String: Any]] ?? []).filter { $0["place"] as? String == paths.resetMarker }
        #expect(reported.count == 1, "\(bad["rejected"] ?? "")")
        #expect(FileManager.default.fileExists(atPath: paths.resetMarker), "a reader leaves a bad marker alone")
    }
}

/// §2 "Content changes": a participant claims its slot again whenever its
/// record changes in anything but `written`, so readers that reuse unchanged
/// slots see the new record.
@Suite(.requiresXvfb) struct ContentChangeTests {
    @Test func aParticipantWhoseBornAloneChangesClaimsItsSlotAgain() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let files = ["--mirror", "none"]
        let participant = try session.serve("com.acme.notes", files)
        defer { participant.stop() }
        let identifier = try #require(participant.current)

        // Another app's file slot holds the same identifier, born earlier: the
        // winner's born becomes that earlier one at the next resolution.
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let earlier: Int64 = 1_600_000_000_000
        let record = SlotRecord(
            id: try Identifier(parsing: identifier), app: try AppIdentity("org.indie.chess"), born: earlier,
            written: Int64(Date().timeIntervalSince1970 * 1000))
        try record.encoded().write(to: URL(fileURLWithPath: paths.slotsDirectory + "/org.indie.chess.json"))
        // Any owner change makes the participant resolve again.
        let nudge = try startSelectionHelper(
            display: SharedDisplay.display, ["own", "--prefix", session.slotName(90), "--text", "not a record"])
        defer { nudge.signal(SIGKILL) }

        func servedBorn() -> Int64? {
            guard let slots = try? session.run(["slots", "--json"]),
                let object = try? JSONSerialization.jsonObject(with: Data(slots.standardOutput.utf8)) as? [String: Any]
            else { return nil }
            let entries = object["slots"] as? [[String: Any]] ?? []
            let served = entries.first { $0["kind"] as? String == "selection" && $0["app"] as? String == "com.acme.notes" }
            return (served?["born"] as? NSNumber)?.int64Value
        }
        var seen: [Int64?] = []
        #expect(
            eventually(timeout: 20) {
                seen.append(servedBorn())
                return seen.last == earlier
            }, "the slot served borns \(seen)")
    }
}
