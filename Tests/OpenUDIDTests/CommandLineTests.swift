import Foundation
import Testing
import TestSupport

/// The `openudid` tool's contract with scripts: help, exit codes, one-sentence errors.
@Suite struct CommandLineTests {
    @Test(arguments: ["get", "serve", "slots", "remove-app", "opt-out"])
    func everyCommandHasHelp(command: String) throws {
        let session = try TestSession(display: nil)
        let result = try session.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.hasPrefix("usage: openudid \(command)"))
    }

    @Test(arguments: [
        (["get"], "get needs --app ID"),
        (["get", "--app", "1acme.notes"], "is not a valid app id"),
        (["frobnicate"], "unknown command"),
        (["get", "--app", "com.acme.notes", "--policy", "sometimes"], "--policy must be follow or keep"),
        (["get", "--app", "com.acme.notes", "--mirror", "cloud"], "--mirror must be"),
        (["get", "--app", "com.acme.notes", "--frobnicate"], "unknown option --frobnicate"),
    ])
    func misuseExitsWithStatusTwoAndOneSentence(arguments: [String], message: String) throws {
        let session = try TestSession(display: nil)
        let result = try session.run(arguments)
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.hasPrefix("openudid: "))
        #expect(result.standardError.contains(message))
        #expect(result.standardError.split(separator: "\n").count == 1)
    }

    @Test func serveStopsCleanlyOnSIGTERMAndReleasesItsSlot() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let participant = try session.serve("com.acme.notes", ["--mirror", "none"])
        participant.child.signal(SIGTERM)
        #expect(participant.child.wait(timeout: 5) == 0)
        let slots = try session.run(["slots", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(slots.standardOutput.utf8)) as? [String: Any]
        let entries = object?["slots"] as? [[String: Any]] ?? []
        #expect(entries.filter { $0["kind"] as? String == "selection" }.isEmpty)
        #expect(entries.contains { $0["kind"] as? String == "file" && $0["app"] as? String == "com.acme.notes" })
    }
}
