import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// How a usage error of `arguments` begins: the tool and the command, such as `openudid get: `.
private func commandPrefix(_ arguments: [String]) -> String {
    let commands = ["get", "serve", "slots", "remove-app", "opt-out", "consent", "forget", "reset"]
    return arguments.first.map(commands.contains) == true ? "openudid \(arguments[0]): " : "openudid: "
}

/// The `openudid` tool's contract with scripts: help, exit codes, one-sentence errors.
@Suite(.requiresXvfb) struct CommandLineTests {
    @Test(arguments: ["get", "serve", "slots", "remove-app", "opt-out", "consent", "forget", "reset"])
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
        #expect(participant.child.wait(timeout: 15) == 0)
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
        (["opt-out"], "needs --app ID, --all or --status"),
        (["remove-app", "--json", "com.acme.notes"], "remove-app does not take '--json'"),
        (["remove-app", "com.acme.notes", "--app", "com.acme.notes"], "not both"),
        (["get", "--app", "com.acme.notes", "--display", ":1", "--no-display"], "contradict"),
        (["get", "--app", "com.acme.notes", "--vendor", "../x"], "is not a valid"),
        (["get", "--app", "com.acme.notes", "--slots", "0"], "--slots must be 1 to 10000"),
        // The entry points that print JSON or report the opt-out.
        (["reset", "--json", "stray"], "unexpected argument 'stray': reset takes no arguments"),
        (["reset", "--json", "--json"], "--json is given twice"),
        (["forget", "--json"], "needs --all"),
        (["forget", "--all", "--dry-run", "--json=yes"], "--json takes no value, not 'yes'"),
        (["consent", "--app", "com.acme.notes", "status", "--json", "extra"], "unexpected argument 'extra'"),
        (["consent", "--app", "com.acme.notes", "--json"], "needs grant, withdraw or status after --app ID"),
        (["consent", "--app", "com.acme.notes", "grnat"], "unknown action 'grnat': consent takes grant, withdraw or status"),
        (["consent", "--app", "1acme.notes", "status", "--json"], "is not a valid app id"),
        (["opt-out", "--status", "--undo"], "--status changes nothing, so it takes no --undo"),
        (["opt-out", "--status", "--app", "com.acme.notes", "--all"], "not both"),
        (["opt-out", "--status", "--app", "1acme.notes"], "is not a valid app id"),
        (["opt-out", "--status", "stray"], "unexpected argument 'stray'"),
        (["opt-out", "--all", "--json", "--namespace", "../x"], "\"../x\" is not a valid namespace"),
        (["opt-out", "--status", "--status"], "--status is given twice")
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
        #expect(!OpenUDID.User(environment: session.environment).isOptedOut)
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

    @Test(arguments: [["--version"], ["get", "--version"], ["remove-app", "--version"], ["-V"], ["slots", "-V"]])
    func versionPrintsTheToolAndThePackageVersion(arguments: [String]) throws {
        let result = try run(arguments, in: try TestSession(display: nil))
        #expect(result.status == 0)
        #expect(result.standardOutput == "openudid 0.5.0\n")
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
        ),
        // The app id given without --app: the line it was meant to be.
        (
            ["consent", "org.example.mail", "grant"],
            "openudid consent: 'org.example.mail' goes after --app (did you mean 'openudid consent --app org.example.mail grant'?)"
        ),
        (
            ["consent", "grant", "org.example.mail", "--json"],
            "openudid consent: 'org.example.mail' goes after --app (did you mean 'openudid consent grant --app org.example.mail --json'?)"
        ),
        (["get", "com.acme.notes"], "openudid get: 'com.acme.notes' goes after --app (did you mean 'openudid get --app com.acme.notes'?)"),
        // Options before the command.
        (
            ["--app", "com.acme.notes", "get"],
            "openudid: '--app' goes after the command (did you mean 'openudid get --app com.acme.notes'?)"
        ),
        (
            ["--json", "reset", "--namespace", "x"],
            "openudid: '--json' goes after the command (did you mean 'openudid reset --json --namespace x'?)"
        ),
        (
            ["--app", "com.acme.notes"],
            "openudid: needs a command: get, serve, slots, remove-app, consent, forget, reset or opt-out; see 'openudid --help'"
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
            "--policy follow|keep", "--mirror automatic|secret-service|file|none", "--vendor NAME", "--slots N", "-V, --version"
        ] {
            #expect(get.contains("\n  \(option) ") || get.contains("\n  \(option)\n"), "\(option)")
        }
        let removeApp = try run(["help", "remove-app"], in: session).standardOutput
        #expect(removeApp.hasPrefix("usage: openudid remove-app ID [--namespace NAME]"))
        #expect(!removeApp.contains("--display"))
    }

    /// Each command's help lists the options it does something with, and no other.
    @Test(arguments: [
        (
            "slots", ["--json", "--display NAME", "--no-display", "--no-files", "--namespace NAME", "--slots N"],
            ["--policy", "--consent", "--mirror", "--vendor", "--app"]
        ),
        (
            "consent", ["--app ID", "--json", "--namespace NAME"],
            ["--display", "--no-display", "--no-files", "--policy", "--mirror", "--vendor", "--slots", "--consent"]
        ),
        (
            "opt-out", ["--app ID", "--all", "--undo", "--status", "--json", "--namespace NAME"],
            ["--display", "--no-display", "--no-files", "--policy", "--mirror", "--vendor", "--slots", "--consent"]
        ),
        ("reset", ["--namespace NAME", "--json"], ["--app", "--display"]),
        ("forget", ["--all", "--dry-run", "--json"], ["--app", "--namespace", "--display"])
    ])
    func helpListsOnlyTheOptionsOfItsCommand(command: String, listed: [String], unlisted: [String]) throws {
        let help = try run([command, "--help"], in: try TestSession(display: nil))
        #expect(help.status == 0)
        for option in listed + ["-h, --help", "-V, --version"] {
            #expect(
                help.standardOutput.contains("\n  \(option) ") || help.standardOutput.contains("\n  \(option)\n"), "\(command): \(option)")
        }
        for option in unlisted { #expect(!help.standardOutput.contains("\n  \(option)"), "\(command) lists \(option)") }
    }

    /// Scripts pass one set of options to every command: an option a command does
    /// nothing with is still accepted, though its help leaves it out.
    @Test func anOptionTheCommandIgnoresIsStillAccepted() throws {
        let session = try TestSession(display: nil)
        let slots = try session.run(["slots", "--json", "--mirror", "none", "--policy", "keep"])
        #expect(slots.status == 0, "\(slots.standardError)")
        let optOut = try session.run(["opt-out", "--app", "com.acme.notes", "--mirror", "file", "--no-display"])
        #expect(optOut.status == 0, "\(optOut.standardError)")
    }
}

/// `--json` wherever a script reads an answer, and the user-wide opt-out that
/// `opt-out --status` reports.
@Suite struct CommandLineJSONTests {
    /// Runs `openudid arguments` in `session` (with its namespace where the command takes one) and parses its JSON.
    private func json(_ arguments: [String], in session: TestSession, namespaced: Bool = true) throws -> [String: Any] {
        let result =
            namespaced
            ? try session.run(arguments) : try runCommand(Tools.product("openudid"), arguments, environment: session.environment)
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        else {
            throw HarnessError("openudid \(arguments) failed (\(result.status)): \(result.standardError)\(result.standardOutput)")
        }
        return object
    }

    @Test func optOutStatusReportsTheUserAndTheApp() throws {
        let session = try TestSession(display: nil)
        #expect(try session.run(["opt-out", "--status"]).standardOutput == "every app: not opted out\n")
        #expect(try json(["opt-out", "--status", "--json"], in: session) as NSDictionary == ["optedOutEverywhere": false])

        // One app opts out: the user has not.
        let app = try json(["opt-out", "--app", "com.acme.notes", "--json", "--no-display"], in: session)
        #expect(app as NSDictionary == ["optedOutEverywhere": false, "app": "com.acme.notes", "appOptedOut": true])
        let status = try session.run(["opt-out", "--status", "--app", "com.acme.notes"])
        #expect(status.standardOutput == "every app: not opted out\ncom.acme.notes: opted out\n")
        #expect(
            try json(["opt-out", "--status", "--app", "org.indie.chess", "--json"], in: session) as NSDictionary
                == ["optedOutEverywhere": false, "app": "org.indie.chess", "appOptedOut": false])

        // The user opts out, and back in.
        #expect(try json(["opt-out", "--all", "--json"], in: session) as NSDictionary == ["optedOutEverywhere": true])
        #expect(try session.run(["opt-out", "--status"]).standardOutput == "every app: opted out\n")
        #expect(try json(["opt-out", "--status", "--all", "--json"], in: session) as NSDictionary == ["optedOutEverywhere": true])
        #expect(OpenUDID.User(environment: session.environment).isOptedOut)
        #expect(try json(["opt-out", "--all", "--undo", "--json"], in: session) as NSDictionary == ["optedOutEverywhere": false])
        #expect(!OpenUDID.User(environment: session.environment).isOptedOut)
    }

    @Test func theStatusChangesNothing() throws {
        let session = try TestSession(display: nil)
        #expect(try session.run(["opt-out", "--status", "--app", "com.acme.notes", "--json"]).status == 0)
        #expect(try allFiles(under: session.home.root.path).isEmpty)
    }

    @Test func consentPrintsTheAppsConsentAfterEachAction() throws {
        let session = try TestSession(display: nil)
        let absent: NSDictionary = ["app": "com.acme.notes", "consent": "absent"]
        let granted: NSDictionary = ["app": "com.acme.notes", "consent": "granted"]
        #expect(try json(["consent", "--app", "com.acme.notes", "status", "--json"], in: session) as NSDictionary == absent)
        #expect(try json(["consent", "--app", "com.acme.notes", "grant", "--json"], in: session) as NSDictionary == granted)
        #expect(try session.run(["consent", "--app", "com.acme.notes", "status"]).standardOutput == "granted\n")
        #expect(try json(["consent", "--app", "com.acme.notes", "withdraw", "--json"], in: session) as NSDictionary == absent)
        // Without --json, grant and withdraw print nothing, as before.
        #expect(try session.run(["consent", "--app", "com.acme.notes", "grant"]).standardOutput.isEmpty)
    }

    @Test func resetPrintsItsGenerationAndWhatItRemoved() throws {
        let session = try TestSession(display: nil)
        _ = try session.get("com.acme.notes", ["--mirror", "file"])
        let reset = try json(["reset", "--json"], in: session)
        #expect(Set(reset.keys) == ["generation", "files", "keyringItems", "problems"])
        #expect((reset["generation"] as? Int ?? 0) >= 1, "\(reset)")
        let files = reset["files"] as? [String] ?? []
        #expect(files.contains { $0.hasSuffix("/slots/com.acme.notes.json") }, "\(files)")
        for file in files { #expect(!FileManager.default.fileExists(atPath: file), "\(file)") }
        #expect(reset["problems"] as? [String] == [])
    }

    @Test func forgetListsWhatItWouldRemoveAndThenRemovesIt() throws {
        let session = try TestSession(display: nil)
        _ = try session.get("com.acme.notes", ["--mirror", "file"])
        let dryRun = try json(["forget", "--all", "--dry-run", "--json"], in: session, namespaced: false)
        #expect(dryRun["dryRun"] as? Bool == true)
        let listed = dryRun["files"] as? [String] ?? []
        #expect(listed.contains { $0.hasSuffix("/slots/com.acme.notes.json") }, "\(listed)")
        for file in listed { #expect(FileManager.default.fileExists(atPath: file), "the dry run removed \(file)") }

        let forget = try json(["forget", "--all", "--json"], in: session, namespaced: false)
        #expect(forget["dryRun"] as? Bool == false)
        #expect(forget["files"] as? [String] == listed)
        #expect(forget["problems"] as? [String] == [])
        for file in listed { #expect(!FileManager.default.fileExists(atPath: file), "\(file)") }
    }
}

/// Messages that fit the situation.
@Suite struct CommandLineMessageTests {
    /// With DISPLAY set, `slots --no-display` says the display is left unused on purpose, not that DISPLAY is unset.
    @Test func slotsWithNoDisplaySaysWhyTheSelectionsWereNotRead() throws {
        let session = try TestSession(display: ":4242")
        let result = try session.run(["slots", "--no-display"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("--no-display leaves the X display unused"), "\(result.standardError)")
        #expect(!result.standardError.contains("DISPLAY is unset"), "\(result.standardError)")
        let json = try session.run(["slots", "--no-display", "--json"])
        #expect(!json.standardOutput.contains("DISPLAY is unset"), "\(json.standardOutput)")
    }

    @Test func slotsWithoutADisplayStillSaysDISPLAYIsUnset() throws {
        let session = try TestSession(display: nil)
        let result = try session.run(["slots"])
        #expect(result.standardError.contains("DISPLAY is unset"), "\(result.standardError)")
    }

    @Test func slotsWithNoFilesListsNoFileSlot() throws {
        let session = try TestSession(display: nil)
        _ = try session.get("com.acme.notes", ["--mirror", "none"])
        #expect(try session.run(["slots", "--json"]).standardOutput.contains("com.acme.notes"))
        let result = try session.run(["slots", "--json", "--no-files"])
        #expect(result.status == 0)
        #expect(!result.standardOutput.contains("com.acme.notes"), "\(result.standardOutput)")
    }
}
