import Foundation
import OpenUDIDKit
import Testing

@Suite struct IdentifierTests {
    @Test func randomIdentifiersAreDistinctLowercaseHexAndNeverOptedOut() {
        var seen = Set<Identifier>()
        for _ in 0..<1000 {
            let id = Identifier.random()
            #expect(!id.isOptedOut)
            #expect(id.hex.count == 40)
            #expect(id.hex.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }

    @Test func randomBitsAreSpreadOverEveryPosition() {
        // Every hex position takes many values across 200 draws; a generator
        // that filled only some words, or a hex writer that dropped a byte,
        // would leave positions constant.
        let ids = (0..<200).map { _ in Array(Identifier.random().hex.utf8) }
        for position in 0..<40 {
            let digits = Set(ids.map { $0[position] })
            #expect(digits.count > 4, "position \(position)")
        }
    }

    @Test func skipsAnAllZeroDraw() {
        struct ZeroThenCounting: RandomNumberGenerator {
            var calls: UInt64 = 0
            mutating func next() -> UInt64 {
                calls += 1
                return calls <= 3 ? 0 : calls
            }
        }
        var generator = ZeroThenCounting()
        let id = Identifier.random(using: &generator)
        #expect(!id.isOptedOut)
        #expect(generator.calls == 6)
    }

    @Test func optedOutIsFortyZeros() {
        #expect(Identifier.optedOut.hex == String(repeating: "0", count: 40))
        #expect(Identifier.optedOut.isOptedOut)
        #expect(Identifier.optedOut.description == Identifier.optedOut.hex)
    }

    @Test func hexRoundTripsThroughParsingAndBytes() throws {
        for _ in 0..<100 {
            let id = Identifier.random()
            #expect(try Identifier(parsing: id.hex) == id)
            #expect(Identifier(bytes: id.bytes) == id)
        }
        let known = try Identifier(parsing: "0123456789abcdef00112233445566778899aabb")
        #expect(
            known.bytes == [
                0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x11,
                0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb
            ])
        #expect(known.hex == "0123456789abcdef00112233445566778899aabb")
    }

    @Test func bytesMustBeExactlyTwenty() {
        #expect(Identifier(bytes: [UInt8](repeating: 1, count: 19)) == nil)
        #expect(Identifier(bytes: [UInt8](repeating: 1, count: 21)) == nil)
    }

    static let malformed: [(String, IdentifierError.Reason)] = {
        let a39 = String(repeating: "a", count: 39)
        let a40 = a39 + "a"
        return [
            ("", .wrongLength(0)),
            (a39, .wrongLength(39)),
            (a40 + "a", .wrongLength(41)),
            ("A" + a39, .invalidCharacter(offset: 0)),
            (a39 + "F", .invalidCharacter(offset: 39)),
            (" " + a39, .invalidCharacter(offset: 0)),
            (a40 + "\n", .wrongLength(41)),
            (String(a39.prefix(20)) + "g" + String(a39.prefix(19)), .invalidCharacter(offset: 20)),
            (a39 + "é", .invalidCharacter(offset: 39)),
            ("0x" + String(a39.prefix(38)), .invalidCharacter(offset: 1))
        ]
    }()

    @Test(arguments: malformed)
    func parsingIsStrict(text: String, reason: IdentifierError.Reason) {
        #expect(throws: IdentifierError(text: text, reason: reason)) { try Identifier(parsing: text) }
    }

    @Test func ordersByHex() throws {
        let ids = (0..<200).map { _ in Identifier.random() }
        #expect(ids.sorted().map(\.hex) == ids.map(\.hex).sorted())
        let low = try Identifier(parsing: "00000000000000000000000000000000000000ff")
        let high = try Identifier(parsing: "0000000000000000000000000000000000000100")
        #expect(low < high)
    }

    @Test func codesAsTheHexString() throws {
        let id = Identifier.random()
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == "[\"\(id.hex)\"]")
        #expect(try JSONDecoder().decode([Identifier].self, from: data) == [id])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Identifier].self, from: Data("[\"\(id.hex.uppercased())\"]".utf8))
        }
    }
}
