import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// A running participant hears the user's choices made by another process,
/// through the files alone: these sessions have no X server, so no selection
/// event can wake it (docs/PROTOCOL.md §8).
@Suite struct ChoiceWatchTests {
    static let zeros = Identifier.optedOut.hex
    static let options = ["--mirror", "file"]

    @Test func anOptOutOfTheAppMadeElsewhereIsHeardAndUndone() throws {
        let session = try TestSession(display: nil)
        let participant = try session.serve("com.acme.notes", Self.options)
        defer { participant.stop() }
        let identifier = try #require(participant.current)

        #expect(try session.run(["opt-out", "--app", "com.acme.notes"] + Self.options).status == 0)
        #expect(participant.nextIdentifier(timeout: 10) == Self.zeros)
        #expect(try session.run(["opt-out", "--app", "com.acme.notes", "--undo"] + Self.options).status == 0)
        #expect(participant.nextIdentifier(timeout: 10) == identifier)
    }

    @Test func theUsersOptOutForEveryAppIsHeardAndUndone() throws {
        let session = try TestSession(display: nil)
        let participant = try session.serve("com.acme.notes", Self.options)
        defer { participant.stop() }
        let identifier = try #require(participant.current)

        // The config directory does not exist yet: the watcher follows it into being.
        #expect(try session.run(["opt-out", "--all"]).status == 0)
        #expect(participant.nextIdentifier(timeout: 10) == Self.zeros)
        #expect(try session.run(["opt-out", "--all", "--undo"]).status == 0)
        #expect(participant.nextIdentifier(timeout: 10) == identifier)
    }

    @Test func aWithdrawalOfConsentIsHeard() throws {
        let session = try TestSession(display: nil)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).status == 0)
        let participant = try session.serve("com.acme.notes", Self.options + ["--consent", "required"])
        defer { participant.stop() }
        #expect(participant.current != Self.zeros)

        #expect(try session.run(["consent", "--app", "com.acme.notes", "withdraw"]).status == 0)
        #expect(participant.nextIdentifier(timeout: 10) == Self.zeros)
    }
}
