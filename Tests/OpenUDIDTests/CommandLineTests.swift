import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// How a usage error of `arguments` begins: the tool and the command, such as `openudid get: `.
private func commandPrefix(_ arguments: [String]) -> String {
    let commands = ["get", "serve", "slots", "remove-app", "opt-out"]
    return arguments.first.map(commands.contains) == true ? "openudid \(arguments[0]): " : "openudid: "
}

/// The `openudid` tool's contract with scripts: help, exit codes, one-sentence errors.
@Suite(.requiresXvfb) struct CommandLineTests {
    @Test(arguments: ["get", "serve", "slots", "remove-app", "opt-out"])
    func everyCommandHasHelp(command: String) throws {
        let session = try TestSession(display: nil)
        let result = try session.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.standardOutput.hasPrefix("usage: openudid \(command)"))
    }

    @Test(arguments: [
        (["get"], "needs --app ID"),
        (["get", "--app", "1acme.notes"], "is not a valid app id"),
        (["frobnicate"], "unknown command"),
        (["get", "--app", "com.acme.notes", "--policy", "sometimes"], "--policy must be follow or keep"),
        (["get", "--app", "com.acme.notes", "--mirror", "cloud"], "--mirror must be"),
        (["get", "--app", "com.acme.notes", "--frobnicate"], "unknown option '--frobnicate'")
    ])
    func misuseExitsWithStatusTwoAndOneSentence(arguments: [String], message: String) throws {
        let session = try TestSession(display: nil)
        let result = try session.run(arguments)
        #expect(result.status == 2)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.hasPrefix(commandPrefix(arguments)), "\(result.standardError)")
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

/// Every argument is checked before any file is read or written; mistakes exit with status 2 and name the word.
@Suite struct CommandLineMisuseTests {
    /// Runs `openudid` with exactly `arguments` (no namespace added) in a fresh home.
    private func run(_ arguments: [String]) throws -> (result: CommandResult, session: TestSession) {
        let session = try TestSession(display: nil)
        let result = try runCommand(Tools.product("openudid"), arguments, environment: session.environment)
        return (result, session)
    }

    @Test(arguments: [
        (["get", "--app", "com.acme.notes", "--scope", "xx"], "--scope must be shared or app, not 'xx'"),
        (["serve", "--app", "com.acme.notes", "--scope", "xx"], "--scope must be shared or app"),
        (["remove-app", "--namespace", "../x", "com.acme.notes"], "\"../x\" is not a valid namespace"),
        (["get", "--app", "com.acme.notes", "--namespace", "../x"], "\"../x\" is not a valid namespace"),
        (["remove-app", "com.acme.notes", "extra"], "unexpected argument 'extra'"),
        (["get", "--app", "com.acme.notes", "stray"], "unexpected argument 'stray'"),
        (["slots", "stray"], "unexpected argument 'stray'"),
        (["get", "--app", "com.acme.notes", "--app", "com.acme.photos"], "--app ID is given twice"),
        (["opt-out", "--app", "com.acme.notes", "--all"], "not both"),
        (["opt-out", "--app", "com.acme.notes", "--all", "--undo"], "not both"),
        (["opt-out"], "needs --app ID or --all"),
        (["remove-app", "--json", "com.acme.notes"], "remove-app does not take '--json'"),
        (["remove-app", "com.acme.notes", "--app", "com.acme.notes"], "not both"),
        (["get", "--app", "com.acme.notes", "--display", ":1", "--no-display"], "contradict"),
        (["get", "--app", "com.acme.notes", "--vendor", "../x"], "is not a valid"),
        (["get", "--app", "com.acme.notes", "--slots", "0"], "--slots must be 1 to 10000")
    ])
    func isRefusedWithStatusTwoBeforeAnyFileIsTouched(arguments: [String], message: String) throws {
        let (result, session) = try run(arguments)
        #expect(result.status == 2, "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError.hasPrefix(commandPrefix(arguments)), "\(result.standardError)")
        #expect(result.standardError.contains(message), "\(result.standardError)")
        let written = try allFiles(under: session.home.root.path)
        #expect(written.isEmpty, "files were written: \(written)")
        #expect(!FileManager.default.fileExists(atPath: session.home.dataHome.path + "/openudid"))
    }

    @Test func optOutOfOneAppWithAllDoesNotOptTheUserOut() throws {
        let (result, session) = try run(["opt-out", "--app", "com.acme.notes", "--all"])
        #expect(result.status == 2)
        #expect(!OpenUDID.isOptedOutEverywhere(environment: session.environment))
    }

    @Test(arguments: ["get", "slots"])
    func aDisplayGivenExplicitlyThatDoesNotAnswerExitsWithStatusFour(command: String) throws {
        let arguments = command == "get" ? ["get", "--app", "com.acme.notes"] : ["slots"]
        let (result, session) = try run(arguments + ["--display", ":4242", "--mirror", "none"])
        #expect(result.status == 4, "\(result.standardError)")
        #expect(result.standardError.contains("cannot open X display \":4242\""), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: session.home.dataHome.path + "/openudid"))
    }

    @Test func aDisplayGivenExplicitlyMakesServeExitWithStatusFour() throws {
        let (result, _) = try run(["serve", "--app", "com.acme.notes", "--display", ":4242", "--mirror", "none"])
        #expect(result.status == 4, "\(result.standardError)")
    }
}

@Suite(.requiresXvfb) struct CommandLineOutputTests {
    @Test func serveWithScopeAppPrintsTheAppScopedIdentifier() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let appScoped = try session.get("com.acme.notes", ["--mirror", "none", "--scope", "app"])
        #expect(appScoped.count == 36)
        let participant = try session.serve("com.acme.notes", ["--mirror", "none", "--scope", "app"])
        defer { participant.stop() }
        #expect(participant.current == appScoped)
    }

    @Test func theSlotsTableShowsTwoDigitSlotNumbersWhole() throws {
        let session = try TestSession(display: SharedDisplay.display)
        var participants: [Participant] = []
        defer { participants.forEach { $0.stop() } }
        for index in 0...10 {
            participants.append(try session.serve("org.table.app\(index)", ["--mirror", "none", "--no-files"]))
        }
        let deadline = Date().addingTimeInterval(20)
        var table = ""
        repeat {
            table = try session.run(["slots", "--no-files"]).standardOutput
        } while !table.contains("selection 10 ") && Date() < deadline
        #expect(table.contains("selection 10 "), "\(table)")
        #expect(table.split(separator: "\n").filter { $0.hasPrefix("selection 1 ") }.count == 1, "\(table)")
    }
}

/// The grammar every command shares: `--version`, `--`, both spellings of a value, and errors that name the word.
@Suite struct CommandLineGrammarTests {
    private func run(_ arguments: [String], in session: TestSession) throws -> CommandResult {
        try runCommand(Tools.product("openudid"), arguments, environment: session.environment)
    }

    @Test(arguments: [["--version"], ["get", "--version"], ["remove-app", "--version"]])
    func versionPrintsTheToolAndThePackageVersion(arguments: [String]) throws {
        let result = try run(arguments, in: try TestSession(display: nil))
        #expect(result.status == 0)
        #expect(result.standardOutput == "openudid 0.2.0\n")
        #expect(result.standardError.isEmpty)
    }

    @Test(arguments: [
        (["get", "--ap", "com.acme.notes"], "openudid get: unknown option '--ap' (did you mean '--app'?)"),
        (["gte", "--app", "com.acme.notes"], "openudid: unknown command 'gte' (did you mean 'get'?)"),
        (
            ["serve", "--app", "com.acme.notes", "--mirror", "cloud"],
            "openudid serve: --mirror must be automatic, secret-service, file or none, not 'cloud'; see 'openudid serve --help'"
        ),
        (
            ["slots", "--app", "com.acme.notes"],
            "openudid slots: slots does not take '--app'; get, serve, remove-app, consent and opt-out do; see 'openudid slots --help'"
        ),
        (["get", "--app"], "openudid get: --app ID needs a value; see 'openudid get --help'"),
        (["get", "--app", "--json"], "openudid get: --app ID needs a value; see 'openudid get --help'"),
        (
            ["get", "--app", "com.acme.notes", "--", "--json"],
            "openudid get: unexpected argument '--json': get takes no arguments; see 'openudid get --help'"
        )
    ])
    func anErrorNamesTheCommandAndTheWord(arguments: [String], line: String) throws {
        let session = try TestSession(display: nil)
        let result = try run(arguments, in: session)
        #expect(result.status == 2)
        #expect(result.standardError == line + "\n")
        #expect(try allFiles(under: session.home.root.path).isEmpty)
    }

    @Test func aValueMayFollowAnEqualsSignOrASpace() throws {
        let session = try TestSession(display: nil)
        let joined = try run(
            ["get", "--app=com.acme.notes", "--mirror=none", "--no-display", "--namespace=\(session.namespace)"],
            in: session)
        #expect(joined.status == 0, "\(joined.standardError)")
        #expect(joined.standardOutput.count == 41)
        let spaced = try session.get("com.acme.notes", ["--mirror", "none", "--no-display"])
        #expect(spaced + "\n" == joined.standardOutput)
    }

    @Test func wordsAfterDoubleDashAreArgumentsEvenWhenTheyLookLikeOptions() throws {
        let session = try TestSession(display: nil)
        _ = try session.get("com.acme.notes", ["--mirror", "none", "--no-display"])
        let result = try run(["remove-app", "--namespace", session.namespace, "--", "com.acme.notes"], in: session)
        #expect(result.status == 0, "\(result.standardError)")
        let slots = try session.run(["slots", "--no-display", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(slots.standardOutput.utf8)) as? [String: Any]
        #expect((object?["slots"] as? [[String: Any]])?.contains { $0["app"] as? String == "com.acme.notes" } == false)
    }

    @Test func helpIsGeneratedFromTheOptionsEachCommandTakes() throws {
        let session = try TestSession(display: nil)
        let root = try run(["--help"], in: session)
        #expect(root.status == 0)
        for command in ["get", "serve", "slots", "remove-app", "opt-out"] { #expect(root.standardOutput.contains("\n  \(command) ")) }
        let get = try run(["get", "-h"], in: session).standardOutput
        for option in [
            "--app ID", "--json", "--scope shared|app", "--display NAME", "--no-display", "--no-files", "--namespace NAME",
            "--policy follow|keep", "--mirror automatic|secret-service|file|none", "--vendor NAME", "--slots N", "--version"
        ] {
            #expect(get.contains("\n  \(option) ") || get.contains("\n  \(option)\n"), "\(option)")
        }
        let removeApp = try run(["help", "remove-app"], in: session).standardOutput
        #expect(removeApp.hasPrefix("usage: openudid remove-app ID [--namespace NAME]"))
        #expect(!removeApp.contains("--display"))
    }
}
