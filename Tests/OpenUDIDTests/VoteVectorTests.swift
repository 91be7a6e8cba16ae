import Foundation
import OpenUDIDKit
import Testing

/// The vote scenarios of docs/vectors/vote.json, the file another
/// implementation runs too: each case's candidates, held value and policy go
/// through `Resolution.resolve`, and the outcome must match the file.
@Suite struct VoteVectorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let index: Int
        var testDescription: String { name }
    }

    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/vectors/vote.json").standardized

    static func document() -> [String: Any] {
        guard let data = try? Data(contentsOf: file),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    static let cases: [Case] = (document()["cases"] as? [[String: Any]] ?? []).enumerated().map { index, object in
        Case(name: object["name"] as? String ?? "?", index: index)
    }

    @Test func theVectorFileIsThereAndCoversTheRule() {
        #expect(Self.cases.count >= 109, "docs/vectors/vote.json at \(Self.file.path)")
    }

    @Test(arguments: cases)
    func resolvesAsTheVectorSays(_ vector: Case) throws {
        let document = Self.document()
        let object = try #require((document["cases"] as? [[String: Any]])?[vector.index])
        let now = Date(timeIntervalSince1970: Double(document["now"] as? Int64 ?? 0) / 1000)
        let fresh = document["fresh"] as? [String: Any] ?? [:]
        let freshID = try Identifier(parsing: fresh["id"] as? String ?? "")
        let freshBorn = fresh["born"] as? Int64 ?? 0

        let candidates = try (object["candidates"] as? [[String: Any]] ?? []).map { entry in
            let record = try SlotRecord.parse(Data((entry["record"] as? String ?? "").utf8), now: now)
            return Candidate(record, from: try Self.source(entry["source"] as? [String: Any] ?? [:]))
        }
        let held = try (object["held"] as? String).map { try SlotRecord.parse(Data($0.utf8), now: now) }
        let local = candidates.first { $0.source == .localCache }?.record
        let policy: ResolutionPolicy = object["policy"] as? String == "keep-local" ? .keepLocal : .followConsensus
        let reset = try Self.reset(object)
        let resolution = Resolution.resolve(
            candidates: candidates, local: local, held: held, heldIsProvisional: object["heldProvisional"] as? Bool ?? false,
            keepsFiles: object["keepsFiles"] as? Bool ?? true, privateFiles: object["privateFiles"] as? Bool ?? false, policy: policy,
            app: object["app"] as? String, reset: reset,
            unknownClients: Set((object["spoiled"] as? [Int] ?? []).map { UInt32($0) })
        ) { generation in
            // With the reset's key, a generated identifier is the one bound to it.
            guard let key = reset.key(of: generation) else { return (freshID, freshBorn) }
            return (key.identifier(born: freshBorn), freshBorn)
        }

        let expect = try #require(object["expect"] as? [String: Any])
        #expect(resolution.identifier.hex == expect["id"] as? String)
        #expect(resolution.origin.rawValue == expect["origin"] as? String)
        #expect(resolution.born == expect["born"] as? Int64)
        #expect(resolution.generation == expect["generation"] as? Int64 ?? 0)
        #expect(resolution.decidedBy?.rawValue == expect["decidedBy"] as? String)
        #expect(resolution.replaced?.hex == expect["replaced"] as? String)
        let votes = Dictionary(uniqueKeysWithValues: resolution.tally.map { ($0.identifier.hex, $0.votes) })
        #expect(votes == expect["votes"] as? [String: Int])
        let ignored = Dictionary(grouping: resolution.ignored, by: { Report.Ignored.Reason($0.reason).rawValue }).mapValues(\.count)
        #expect(ignored == expect["ignored"] as? [String: Int])
        // And the reason of each ignored candidate, by its index (or `held`).
        let heldCandidate = held.map { Candidate($0, from: .held) }
        let reasons = Dictionary(
            uniqueKeysWithValues: resolution.ignored.map { ignored in
                let key = ignored.candidate == heldCandidate ? "held" : candidates.firstIndex(of: ignored.candidate).map(String.init) ?? "?"
                return (key, Report.Ignored.Reason(ignored.reason).rawValue)
            })
        if ProcessInfo.processInfo.environment["OPENUDID_PRINT_REASONS"] != nil {
            print("REASONS", vector.index, reasons)
        }
        #expect(reasons == expect["reasons"] as? [String: String])
        #expect(resolution.conflicts.map(\.app) == expect["conflicts"] as? [String])
        #expect(resolution.undecided == expect["undecided"] as? Bool ?? false)
        #expect(resolution.provisional == expect["provisional"] as? Bool ?? false)
    }

    /// The case's reset evidence: `resetGeneration` (a marker that names it),
    /// `marker` (`absent`, `present` or `unreadable`), `resetKey` (64 hex
    /// digits, or `unusable`) and `resetKeyGeneration` (the generation the key
    /// file names, `resetGeneration` by default).
    static func reset(_ object: [String: Any]) throws -> ResetEvidence {
        let generation = object["resetGeneration"] as? Int64 ?? 0
        let marker: ResetEvidence.Marker
        switch object["marker"] as? String ?? (generation > 0 ? "present" : "absent") {
        case "absent": marker = .absent
        case "present": marker = .present(generation)
        case "unreadable": marker = .unreadable
        case let other: throw VectorError(description: "unknown marker \(other)")
        }
        guard let hex = object["resetKey"] as? String else { return ResetEvidence(marker: marker) }
        guard hex != "unusable" else { return ResetEvidence(marker: marker, key: .unusable) }
        let bytes = stride(from: 0, to: hex.count, by: 2).compactMap { offset -> UInt8? in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
        }
        let named = object["resetKeyGeneration"] as? Int64 ?? generation
        let key = try #require(ResetKey(generation: named, bytes: bytes), "resetKey must be 64 hex digits")
        return ResetEvidence(marker: marker, key: .read(key))
    }

    static func source(_ object: [String: Any]) throws -> Candidate.Source {
        switch object["kind"] as? String {
        case "selection":
            return .selection(slot: object["slot"] as? Int ?? -1, client: object["client"] as? UInt32 ?? 0)
        case "file-slot":
            return .fileSlot(app: object["app"] as? String ?? "")
        case "local-cache":
            return .localCache
        case "mirror":
            return .vendorMirror(store: object["store"] as? String ?? "", vendor: object["vendor"] as? String ?? "")
        default:
            throw VectorError(description: "unknown source \(object)")
        }
    }

    struct VectorError: Error, CustomStringConvertible {
        let description: String
    }
}

/// The settling cases of docs/vectors/settle.json: the vote over the records in
/// hand, and whether the outstanding clients could still change it.
@Suite struct SettleVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/vectors/settle.json").standardized

    static func document() -> [String: Any] {
        guard let data = try? Data(contentsOf: file),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    static let cases: [VoteVectorTests.Case] = (document()["cases"] as? [[String: Any]] ?? []).enumerated().map { index, object in
        VoteVectorTests.Case(name: object["name"] as? String ?? "?", index: index)
    }

    @Test func theVectorFileIsThereAndHasBothOutcomes() {
        let settled = (Self.document()["cases"] as? [[String: Any]] ?? []).map { $0["settled"] as? Bool }
        #expect(settled.count >= 20, "docs/vectors/settle.json at \(Self.file.path)")
        #expect(settled.contains(true) && settled.contains(false))
    }

    @Test(arguments: cases)
    func settlesAsTheVectorSays(_ vector: VoteVectorTests.Case) throws {
        let document = Self.document()
        let object = try #require((document["cases"] as? [[String: Any]])?[vector.index])
        let now = Date(timeIntervalSince1970: Double(document["now"] as? Int64 ?? 0) / 1000)
        let candidates = try (object["candidates"] as? [[String: Any]] ?? []).map { entry in
            let record = try SlotRecord.parse(Data((entry["record"] as? String ?? "").utf8), now: now)
            return Candidate(record, from: try VoteVectorTests.source(entry["source"] as? [String: Any] ?? [:]))
        }
        let held = try (object["held"] as? String).map { try SlotRecord.parse(Data($0.utf8), now: now) }
        let privateFiles = object["privateFiles"] as? Bool ?? false
        // §5.1: a mirror read already is among the records in hand only where the files are private.
        let inHand = candidates.filter { if case .vendorMirror = $0.source { privateFiles } else { true } }
        let resolution = Resolution.resolve(
            candidates: inHand, local: nil, held: held, heldIsProvisional: object["heldProvisional"] as? Bool ?? false,
            keepsFiles: object["keepsFiles"] as? Bool ?? true, privateFiles: privateFiles, app: object["app"] as? String,
            reset: try VoteVectorTests.reset(object)
        ) { _ in (Identifier.random(), 0) }
        let outstanding = Set((object["outstanding"] as? [Int] ?? []).map { UInt32($0) })
        let expected = try #require(object["settled"] as? Bool)
        #expect(Resolution.isSettled(resolution, outstanding: outstanding) == expected)
    }
}

/// The reset marker and key files of docs/vectors/markers.json.
@Suite struct MarkerVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/vectors/markers.json").standardized

    static func cases(_ section: String) -> [[String: Any]] {
        guard let data = try? Data(contentsOf: file),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        return object[section] as? [[String: Any]] ?? []
    }

    @Test func readsEachMarkerAsTheVectorSays() {
        let cases = Self.cases("markers")
        #expect(cases.count >= 18, "docs/vectors/markers.json at \(Self.file.path)")
        for vector in cases {
            let text = vector["text"] as? String ?? ""
            #expect(ResetMarker.parse(Data(text.utf8)) == vector["generation"] as? Int64, "\(vector["name"] ?? "")")
        }
    }

    @Test func readsEachKeyAsTheVectorSays() {
        let cases = Self.cases("keys")
        #expect(cases.count >= 17)
        for vector in cases {
            let key = ResetKey.parse(Data((vector["text"] as? String ?? "").utf8))
            #expect(key?.generation == vector["generation"] as? Int64, "\(vector["name"] ?? "")")
            if let hex = vector["key"] as? String {
                #expect(key?.bytes.map { String(format: "%02x", $0) }.joined() == hex)
            }
        }
    }
}
