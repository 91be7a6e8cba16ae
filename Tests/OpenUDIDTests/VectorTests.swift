import Foundation
import Testing

@testable import OpenUDIDKit

/// The protocol's shared test vectors in docs/vectors/, read from the files
/// another implementation would read.
@Suite struct VectorTests {
    /// The repository's docs/vectors directory, found from this file's path.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/vectors")

    struct RecordFields: Decodable, Equatable, Sendable {
        let v: Int
        let id: String
        let app: String
        let vendor: String
        let born: Int64
        let written: Int64
        let optOut: Bool
        /// Absent in most cases: the generation before any reset, 0.
        var generation: Int64? = nil
    }

    struct Case: Decodable, Sendable, CustomStringConvertible {
        let name: String
        let text: String?
        let hex: String?
        let record: RecordFields?
        let canonical: String?
        let token: String?

        /// The record's bytes: the UTF-8 of `text`, or the bytes `hex` spells.
        var bytes: Data {
            if let text { return Data(text.utf8) }
            let digits = Array((hex ?? "").utf8)
            var result: [UInt8] = []
            for index in stride(from: 0, to: digits.count - 1, by: 2) {
                result.append(UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16)!)
            }
            return Data(result)
        }

        var description: String { name }
    }

    struct RecordVectors: Decodable {
        let now: Int64
        let accept: [Case]
        let reject: [Case]
    }

    struct ScopedVector: Decodable, Sendable {
        let name: String
        let shared: String
        let app: String
        let uuid: String
    }

    struct ScopedVectors: Decodable {
        let vectors: [ScopedVector]
        let optedOut: ScopedVector.OptedOut
    }

    static func load<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static let records = try! load("records.json", as: RecordVectors.self)
    static var now: Date { Date(timeIntervalSince1970: Double(records.now) / 1000) }

    @Test func theFilesCoverEnoughCasesAndEveryToken() throws {
        #expect(Self.records.accept.count + Self.records.reject.count >= 175)
        #expect(Milliseconds.since1970(Self.now) == Self.records.now)
        let used = Set(Self.records.reject.compactMap(\.token))
        #expect(used == Set(RecordError.tokens), "tokens without a vector: \(Set(RecordError.tokens).subtracting(used))")
        let names = (Self.records.accept + Self.records.reject).map(\.name)
        #expect(Set(names).count == names.count, "names are unique")
        for vector in Self.records.accept + Self.records.reject {
            #expect((vector.text == nil) != (vector.hex == nil), "\(vector.name): exactly one of text and hex")
        }
    }

    @Test(arguments: records.accept)
    func acceptsAndReencodesCanonically(vector: Case) throws {
        let record = try SlotRecord.parse(vector.bytes, now: Self.now)
        let expected = try #require(vector.record)
        #expect(
            RecordFields(
                v: record.version, id: record.id.hex, app: record.app, vendor: record.vendor,
                born: record.born, written: record.written, optOut: record.optOut,
                generation: record.generation == 0 ? nil : record.generation) == expected)
        let canonical = Data(try #require(vector.canonical).utf8)
        #expect(record.encoded() == canonical)
        // The canonical encoding is itself accepted, by the fast path, as the same record.
        #expect(SlotRecord.canonical(canonical, now: Self.now) == record)
        #expect(try SlotRecord.parseGenerally(canonical, now: Self.now) == record)
    }

    @Test(arguments: records.reject)
    func rejectsWithTheToken(vector: Case) {
        do {
            let record = try SlotRecord.parse(vector.bytes, now: Self.now)
            Issue.record("accepted as \(String(decoding: record.encoded(), as: UTF8.self))")
        } catch {
            #expect(error.token == vector.token, "\(error.description)")
            #expect(error.description.hasPrefix("record rejected: "))
        }
    }

    @Test func theFastPathAgreesWithTheGeneralParserOnVectorsAndMutations() throws {
        func outcome(_ result: () throws(RecordError) -> SlotRecord) -> Result<SlotRecord, RecordError> {
            do { return .success(try result()) } catch { return .failure(error) }
        }
        var generator = SeededRandom(seed: 0x0DDC_0FFE_E15_600D)
        var inputs: [Data] = []
        let seeds =
            (Self.records.accept + Self.records.reject).map(\.bytes)
            + Self.records.accept.compactMap { $0.canonical.map { Data($0.utf8) } }
        for seed in seeds {
            inputs.append(seed)
            guard !seed.isEmpty else { continue }
            for _ in 0..<40 {
                var bytes = [UInt8](seed)
                for _ in 0..<Int.random(in: 1...3, using: &generator) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<5, using: &generator) {
                    case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.remove(at: at)
                    case 2: bytes.insert(bytes[at], at: at)
                    case 3: bytes[at] = Array(#"{}[]":,0123456789.eE-\ tfn"#.utf8).randomElement(using: &generator)!
                    default: bytes[at] ^= 0x20
                    }
                }
                inputs.append(Data(bytes))
            }
        }
        var fastPathTaken = 0
        for input in inputs {
            let fast = outcome { () throws(RecordError) in try SlotRecord.parse(input, now: Self.now) }
            let general = outcome { () throws(RecordError) in try SlotRecord.parseGenerally(input, now: Self.now) }
            #expect(fast == general, "\(String(decoding: input, as: UTF8.self))")
            if SlotRecord.canonical(input, now: Self.now) != nil { fastPathTaken += 1 }
            if case .success(let record) = general {
                // Whatever is accepted re-encodes to the canonical form, which parses back the same.
                #expect(try SlotRecord.parse(record.encoded(), now: Self.now) == record)
            }
        }
        #expect(fastPathTaken >= Self.records.accept.count)
    }

    @Test func protocolSection3ListsEveryToken() throws {
        let text = try String(
            contentsOf: Self.directory.deletingLastPathComponent().appendingPathComponent("PROTOCOL.md"),
            encoding: .utf8)
        let start = try #require(text.range(of: "## 3. The record"))
        let end = try #require(text.range(of: "## 4. Where records live"))
        let section = text[start.upperBound..<end.lowerBound]
        for token in RecordError.tokens {
            #expect(section.contains("| `\(token)` |"), "\(token) is not in the token table of PROTOCOL.md §3")
        }
    }

    static let scoped = try! load("app-scoped.json", as: ScopedVectors.self)

    @Test(arguments: scoped.vectors)
    func derivesTheAppScopedIdentifier(vector: ScopedVector) throws {
        let shared = try Identifier(parsing: vector.shared)
        #expect(AppScopedIdentifier(shared: shared, appID: vector.app).uuidString == vector.uuid)
        #expect(AppScopedIdentifier(shared: shared.bytes, appID: vector.app).uuidString == vector.uuid)
    }

    @Test func appIdsAreHashedAsGivenWithoutNormalisation() throws {
        // Vectors that differ only in case or Unicode form must give different values.
        let values = Self.scoped.vectors.filter { $0.shared == Self.scoped.vectors[0].shared }
        let notes = values.filter { $0.app.lowercased() == "com.acme.notes" }
        #expect(notes.count >= 3)
        #expect(Set(notes.map(\.uuid)).count == notes.count)
        let cafe = Self.scoped.vectors.filter { $0.app.hasPrefix("com.acme.caf") }
        #expect(
            cafe.count == 2 && cafe[0].app == cafe[1].app && cafe[0].uuid != cafe[1].uuid,
            "canonically equivalent spellings are different bytes, so different values")
    }

    @Test func theOptedOutValueIsTheNilUUID() throws {
        let shared = try Identifier(parsing: Self.scoped.optedOut.shared)
        #expect(shared.isOptedOut)
        #expect(AppScopedIdentifier(shared: shared, appID: "com.acme.notes").uuidString == Self.scoped.optedOut.uuid)
    }
}

extension VectorTests.ScopedVector: CustomStringConvertible {
    struct OptedOut: Decodable {
        let shared: String
        let uuid: String
    }

    var description: String { name }
}
