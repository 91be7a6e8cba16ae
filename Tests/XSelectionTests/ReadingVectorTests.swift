import Foundation
import Testing

@testable import XSelection

/// docs/vectors/reading.json: the sequence-number and time rules by which a
/// reader takes an answer (PROTOCOL.md §5), run against the functions the
/// reader and the owner use.
@Suite struct ReadingVectorTests {
    /// A case, named in the test output by its name.
    protocol Vector: Decodable, Sendable, CustomTestStringConvertible {
        var name: String { get }
    }

    struct Write: Vector {
        var name: String
        var conversion: UInt32
        var firstRead: UInt32?
        var serial: UInt32
        var counts: Bool
    }

    struct OwnerChange: Vector {
        var name: String
        var ownerQuery: UInt32
        var serial: UInt32
        var news: Bool
    }

    struct Answer: Vector {
        var name: String
        var writes: Int
        var accepted: Bool
    }

    struct Conversion: Vector {
        var name: String
        var serverTime: UInt32
        var offset: UInt32
        var time: UInt32
    }

    struct Claim: Vector {
        var name: String
        var claim: UInt32
        var time: UInt32
        var answered: Bool
    }

    struct File: Decodable, Sendable {
        var writes: [Write]
        var ownerChanges: [OwnerChange]
        var answers: [Answer]
        var conversions: [Conversion]
        var claims: [Claim]
    }

    static let file: File = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/vectors/reading.json")
        do {
            return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        } catch {
            Issue.record("cannot read \(url.path): \(error)")
            return File(writes: [], ownerChanges: [], answers: [], conversions: [], claims: [])
        }
    }()

    @Test func theFileHasCasesOfEveryKind() {
        #expect(Self.file.writes.count >= 8)
        #expect(Self.file.ownerChanges.count >= 4)
        #expect(Self.file.answers.count >= 3)
        #expect(Self.file.conversions.count >= 3)
        #expect(Self.file.claims.count >= 6)
    }

    @Test(arguments: file.writes)
    func countsTheWritesBetweenTheConversionAndTheFirstRead(vector: Write) {
        #expect(
            AnswerRules.countsAsWrite(serial: vector.serial, conversion: vector.conversion, firstRead: vector.firstRead) == vector.counts)
    }

    @Test(arguments: file.ownerChanges)
    func tellsWhichOwnerChangesAreNewsToTheOwnerQuery(vector: OwnerChange) {
        #expect(AnswerRules.isNewsToOwnerQuery(serial: vector.serial, ownerQuery: vector.ownerQuery) == vector.news)
    }

    @Test(arguments: file.answers)
    func takesAnAnswerWrittenExactlyOnce(vector: Answer) {
        #expect(AnswerRules.acceptsAnswer(writes: vector.writes) == vector.accepted)
    }

    @Test(arguments: file.conversions)
    func givesEachConversionItsServerTimePlusItsOffset(vector: Conversion) {
        #expect(AnswerRules.conversionOffsets.contains(vector.offset))
        #expect(AnswerRules.conversionTime(serverTime: vector.serverTime, offset: vector.offset) == vector.time)
    }

    @Test(arguments: file.claims)
    func tellsWhichConversionTimesAnOwnerAnswers(vector: Claim) {
        #expect(AnswerRules.ownerAnswers(time: vector.time, claim: vector.claim) == vector.answered)
    }

    /// The times a pass draws stay within the offsets the vectors pin down,
    /// across the wrap of the server's clock.
    @Test(arguments: [UInt(1000), UInt(UInt32.max) - 5])
    func aPassDrawsEveryTimeWithinTheOffsets(serverTime: UInt) {
        for time in ReaderCore.conversionTimes(after: serverTime, count: 1000) {
            let offset = UInt32(truncatingIfNeeded: time) &- UInt32(truncatingIfNeeded: serverTime)
            #expect(AnswerRules.conversionOffsets.contains(offset), "time \(time) after \(serverTime)")
        }
    }
}

extension ReadingVectorTests.Vector {
    var testDescription: String { name }
}
