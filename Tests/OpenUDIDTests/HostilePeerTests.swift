import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Hostile and broken selection owners, each a separate X client started by
/// the test, against real `openudid` processes. Every X client of the session
/// can own any slot, so nothing a slot serves is trusted.
@Suite(.requiresXvfb) struct HostilePeerTests {
    static let none = ["--mirror", "none"]
    static let selectionOnly = ["--no-files", "--mirror", "none"]

    @Test(arguments: Hostility.allCases)
    func aHostileOwnerIsRejectedByNameWithinTheDeadlineAndTheHonestIdentifierStands(_ hostility: Hostility) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let honest = try session.get("com.acme.notes", Self.none)

        // Two hostile clients in slots 7 and 8: where a forged record carries a
        // well-formed identifier, accepting it would outvote the honest app two to one.
        let forged = Identifier.random().hex
        let helpers = try [7, 8].map { slot in
            try startSelectionHelper(
                display: SharedDisplay.display,
                hostility.helperArguments(
                    slot: session.slotName(slot), app: "com.evil.app\(slot)",
                    identifier: forged, directory: session.home.root))
        }

        // No wall-clock bound: an owner that never answers shows in the report as not
        // answered within the read deadline, and one waited for without end would
        // leave the process running past the harness's time-out.
        let report = try session.report("org.indie.chess", Self.none)
        #expect(report["id"] as? String == honest)
        #expect(report["id"] as? String != forged)
        let rejected = report.rejections
        for slot in [7, 8] {
            let named = rejected.filter { $0.place.names(selection: session.slotName(slot)) }
            #expect(named.count == 1, "slot \(slot) not named in \(rejected)")
            // The honest file slot decides, so a reader may settle before a
            // slow answer arrives on a busy machine (PROTOCOL §5.1): the slot
            // is then named as not waited for, and still casts no ballot.
            if let reason = named.first?.reason, !reason.hasPrefix("not waited for") {
                #expect(hostility.reasons.contains { reason.contains($0) }, "slot \(slot): \(reason)")
            }
        }
        let votes = report["votes"] as? [[String: Any]] ?? []
        #expect(votes.count == 1, "only the honest identifier may receive votes: \(votes)")
        for helper in helpers where hostility != .ownerDiesMidINCR {
            #expect(helper.isRunning, "the hostile owner itself should still be there: \(helper.standardError)")
        }
    }

    @Test func oneClientHoldingNinetySlotsVotesOnceAndThreeHonestAppsWin() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let honestApps = ["com.acme.notes", "org.indie.chess", "net.other.viewer"]
        // Selection-only, where the slots are all there is to count.
        let participants = try honestApps.map { try session.serve($0, Self.selectionOnly) }
        defer { participants.forEach { $0.stop() } }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let honest = try #require(participants[0].current)

        // One client fills slots 10 to 99 with its own identifier, under ninety
        // different app ids, so one-vote-per-app alone would hand it the vote.
        let sybil = Identifier.random().hex
        let template = Hostility.record(app: "com.evil.app{i}", identifier: sybil)
        let sybils = try startSelectionHelper(
            display: SharedDisplay.display,
            [
                "own", "--prefix", session.slotPrefix, "--count", "90", "--start", "10", "--if-free",
                "--target", "_OPENUDID_RECORD", "--text", template
            ])
        defer { sybils.signal(SIGKILL) }
        // The participants see the new owners and resolve again; none may move.
        let moved = eventually(timeout: 2) { participants.contains { $0.current != honest } }
        #expect(!moved, "a participant moved: \(participants.map { $0.current ?? "-" })")

        let report = try session.report("org.fresh.app", Self.selectionOnly)
        #expect(report["id"] as? String == honest)
        let votes = report["votes"] as? [[String: Any]] ?? []
        #expect(votes.first { $0["id"] as? String == sybil }?["votes"] as? Int == 1, "\(votes)")
        #expect(votes.first { $0["id"] as? String == honest }?["votes"] as? Int == 3, "\(votes)")
        let ignored = report["ignored"] as? [[String: Any]] ?? []
        let sameClient = ignored.filter { $0["reason"] as? String == "same-client" }
        // Every other slot of the client is accounted for: counted as the same
        // client, or, on a busy machine, not waited for once the honest
        // answers settled the vote (§5.1), or not answered by the deadline.
        let unheard = (report["rejected"] as? [[String: Any]] ?? []).filter {
            ["not-awaited", "no-answer"].contains($0["code"] as? String ?? "")
        }
        #expect(sameClient.count + unheard.count == 89, "same-client \(sameClient.count), unheard \(unheard.count)")

        let survey = try session.run(["slots", "--json"] + Self.selectionOnly)
        let slots =
            (try JSONSerialization.jsonObject(with: Data(survey.standardOutput.utf8)) as? [String: Any])?["slots"] as? [[String: Any]] ?? []
        #expect(slots.filter { $0["kind"] as? String == "selection" && $0["id"] as? String == sybil }.count == 90)
        for participant in participants {
            #expect(participant.child.isRunning)
            #expect(participant.current == honest)
        }
    }
}

/// The ways a selection owner breaks the protocol or lies in its record.
enum Hostility: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case garbageBytes, randomGarbage, wrongJSONTypes, malformedIdentifier, overTheSizeCap, bornInTheFuture, bornBefore2010,
        tenMebibyteINCR, lyingINCR, stalledINCR, ownerDiesMidINCR, silentOwner, wrongProperty, noProperty, wrongType, wrongFormat

    var testDescription: String { rawValue }

    /// The phrases one of which the rejection's reason must contain.
    var reasons: [String] {
        switch self {
        case .garbageBytes: ["record rejected: it is not valid UTF-8"]
        case .randomGarbage: ["record rejected"]
        case .wrongJSONTypes: ["field \"born\" is not a whole number"]
        case .malformedIdentifier: ["is not an identifier"]
        case .overTheSizeCap: ["a record of 5000 bytes, over the 4096-byte cap"]
        case .bornInTheFuture: ["more than 24 h after the reader's clock"]
        case .bornBefore2010: ["is before 2010-01-01"]
        case .tenMebibyteINCR: ["a record of 10485760 bytes, over the 4096-byte cap"]
        // Two 4096-byte chunks: the first fills the cap, the second is refused unread.
        case .lyingINCR: ["a record of 8192 bytes, over the 4096-byte cap"]
        // The read deadline that was not waited for past.
        case .stalledINCR, .silentOwner: ["no answer within \(OpenUDID.Configuration().readDeadline)"]
        case .ownerDiesMidINCR: ["no answer within", "INCR"]
        case .wrongProperty: ["a property other than the one asked for"]
        case .noProperty: ["wrote no property"]
        case .wrongType: ["served type INTEGER format 32, not 8-bit text"]
        case .wrongFormat: ["format 16, not 8-bit text"]
        }
    }

    /// A record in the wire format, with fields the caller may replace by raw JSON.
    static func record(
        app: String, identifier: String, born: Int64? = nil, rawBorn: String? = nil, rawID: String? = nil,
        padding: Int = 0
    ) -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let pad = padding > 0 ? ",\"pad\":\"" + String(repeating: "p", count: padding) + "\"" : ""
        return "{\"app\":\"\(app)\",\"born\":\(rawBorn ?? String(born ?? now - 60_000)),\"id\":\(rawID ?? "\"\(identifier)\"")"
            + ",\"optOut\":false,\"v\":1,\"vendor\":\"com.evil\",\"written\":\(now)\(pad)}"
    }

    /// The `xselection-helper` arguments of one hostile owner of `slot`.
    func helperArguments(slot: String, app: String, identifier: String, directory: URL) throws -> [String] {
        func serving(_ text: String) -> [String] {
            ["own", "--prefix", slot, "--target", "_OPENUDID_RECORD", "--text", text]
        }
        func hostile(_ behavior: String, _ extra: [String] = []) -> [String] {
            ["hostile", "--selection", slot, "--behavior", behavior] + extra
        }
        let day: Int64 = 86_400_000
        switch self {
        case .garbageBytes:
            let file = directory.appendingPathComponent("garbage-\(app)")
            try Data([0xFF, 0xFE, 0x00, 0x7B, 0x22, 0x80, 0xC0, 0xAF, 0x00, 0x00]).write(to: file)
            return ["own", "--prefix", slot, "--target", "_OPENUDID_RECORD", "--file", file.path]
        case .randomGarbage:
            return hostile("garbage")
        case .wrongJSONTypes:
            return serving(Self.record(app: app, identifier: identifier, rawBorn: "\"1700000000000\""))
        case .malformedIdentifier:
            return serving(Self.record(app: app, identifier: identifier, rawID: "\"" + String(identifier.uppercased().prefix(39)) + "\""))
        case .overTheSizeCap:
            let base = Self.record(app: app, identifier: identifier)
            return serving(Self.record(app: app, identifier: identifier, padding: 5000 - base.utf8.count - 9))
        case .bornInTheFuture:
            return serving(Self.record(app: app, identifier: identifier, born: Int64(Date().timeIntervalSince1970 * 1000) + 3 * day))
        case .bornBefore2010:
            return serving(Self.record(app: app, identifier: identifier, born: 1_000_000))
        case .tenMebibyteINCR:
            return hostile("huge-incr", ["--size", "\(10 << 20)"])
        case .lyingINCR:
            // Announces 100 bytes and streams ten mebibytes.
            return hostile("huge-incr", ["--size", "\(10 << 20)", "--announce", "100"])
        case .stalledINCR:
            return hostile("stall-incr", ["--size", "3000", "--chunk", "1000", "--stall-after", "1000"])
        case .ownerDiesMidINCR:
            return hostile("die-mid-incr", ["--size", "3000", "--chunk", "1000"])
        case .silentOwner:
            return hostile("silent")
        case .wrongProperty:
            return hostile("wrong-property")
        case .noProperty:
            return hostile("no-property")
        case .wrongType:
            return [
                "own", "--prefix", slot, "--target", "_OPENUDID_RECORD", "--type", "INTEGER", "--format", "32",
                "--text", "12345678"
            ]
        case .wrongFormat:
            return hostile("bad-format")
        }
    }
}

extension TestSession {
    /// The selection names of this session's slots: `_OPENUDID_<namespace>_SLOT_<n>`.
    var slotPrefix: String { "_OPENUDID_\(namespace)_SLOT_" }

    /// The name of slot `index`.
    func slotName(_ index: Int) -> String { slotPrefix + String(index) }
}

extension Dictionary where Key == String, Value == Any {
    /// The `rejected` list of a report.
    var rejections: [(place: String, reason: String)] {
        (self["rejected"] as? [[String: Any]] ?? []).map { ($0["place"] as? String ?? "", $0["reason"] as? String ?? "") }
    }

    /// The outcome of the repair of `place` (`written`, `unchanged`, `skipped`, `failed`) and its detail.
    func repair(_ place: String) -> (outcome: String, detail: String)? {
        guard let entry = (self["repairs"] as? [[String: Any]] ?? []).first(where: { $0["place"] as? String == place }) else { return nil }
        return (entry["outcome"] as? String ?? "", entry["detail"] as? String ?? "")
    }

    /// The state (`read`, `unavailable`, `not-used`) and detail of source `name`.
    func source(_ name: String) -> (state: String, detail: String)? {
        guard let entry = (self["sources"] as? [[String: Any]] ?? []).first(where: { $0["name"] as? String == name }) else { return nil }
        return (entry["state"] as? String ?? "", entry["detail"] as? String ?? "")
    }
}

extension String {
    /// Whether a rejection's place names exactly `selection` (slot 7 is not slot 70).
    func names(selection: String) -> Bool {
        hasSuffix(selection) || contains(selection + " ")
    }
}
