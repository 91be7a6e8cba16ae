import Foundation
import Testing

@testable import XSelection

/// docs/vectors/reading.json: the sequence-number rules by which a reader
/// takes an answer (PROTOCOL.md §5), run against the functions the reader uses.
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

    struct File: Decodable, Sendable {
        var writes: [Write]
        var ownerChanges: [OwnerChange]
        var answers: [Answer]
    }

    static let file: File = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/vectors/reading.json")
        do {
            return try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        } catch {
            Issue.record("cannot read \(url.path): \(error)")
            return File(writes: [], ownerChanges: [], answers: [])
        }
    }()

    @Test func theFileHasCasesOfEveryKind() {
        #expect(Self.file.writes.count >= 8)
        #expect(Self.file.ownerChanges.count >= 4)
        #expect(Self.file.answers.count >= 3)
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
}

extension ReadingVectorTests.Vector {
    var testDescription: String { name }
}
