import CommandLineKit
import Testing

/// A small program shaped like the package's tools: options of every kind, and subcommands.
private let program = Command(
    "tool",
    abstract: "a tool for the tests",
    subcommands: [
        Command(
            "get", abstract: "get a thing", discussion: "Gets the thing once.",
            options: [
                .value("app", "ID", help: "the app", required: true),
                .flag("json", help: "print JSON"),
                .value("scope", "SCOPE", help: "which value", default: "shared", check: .oneOf(["shared", "app"])),
                .value("slots", "N", help: "how many slots", check: .integer(in: 1...10_000)),
                .value("out", "DIR", help: "where to write", mayRepeat: true)
            ]),
        Command("remove", abstract: "remove a thing", options: [.value("app", "ID", help: "the app")], arguments: ["ID"]),
        Command("list", abstract: "list things", options: [.flag("json", help: "print JSON")]),
        Command("secret", abstract: "for the tool itself", isHidden: true)
    ])

/// Parses `words` and returns the command to run, failing the test on help or the version.
private func run(_ words: [String]) throws -> ParsedCommand {
    guard case .run(let parsed) = try program.parse(words) else {
        Issue.record("\(words) did not parse to a command to run")
        throw UsageError(command: "test", message: "not a run")
    }
    return parsed
}

/// The error `words` make, as the program would print it.
private func error(_ words: [String]) -> String? {
    do {
        _ = try program.parse(words)
        return nil
    } catch {
        return error.description
    }
}

@Suite struct ParserTests {
    @Test func takesAValueAfterASpaceOrAnEqualsSign() throws {
        #expect(try run(["get", "--app", "com.acme.notes"])["app"] == "com.acme.notes")
        #expect(try run(["get", "--app=com.acme.notes"])["app"] == "com.acme.notes")
        #expect(try run(["get", "--app=a=b"])["app"] == "a=b")
        #expect(try run(["get", "--app="])["app"] == "")
    }

    @Test func aValueThatLooksLikeAnOptionIsAForgottenValue() throws {
        #expect(error(["get", "--app", "--json"]) == "tool get: --app ID needs a value; see 'tool get --help'")
        #expect(error(["get", "--app"]) == "tool get: --app ID needs a value; see 'tool get --help'")
        #expect(try run(["get", "--app=--json"])["app"] == "--json")
    }

    @Test func flagsAndDefaults() throws {
        let parsed = try run(["get", "--json", "--app", "x"])
        #expect(parsed.has("json"))
        #expect(parsed["scope"] == "shared")
        #expect(!parsed.isGiven("scope"))
        #expect(parsed["slots"] == nil)
        #expect(try run(["get", "--app", "x", "--slots", "7"]).integer("slots") == 7)
        #expect(try !run(["get", "--app", "x"]).has("json"))
    }

    @Test func doubleDashEndsTheOptions() throws {
        let parsed = try run(["remove", "--", "--app"])
        #expect(parsed.arguments == ["--app"])
        #expect(parsed["app"] == nil)
        #expect(try run(["remove", "--", "-h"]).arguments == ["-h"])
        #expect(error(["remove", "--", "a", "b"]) == "tool remove: unexpected argument 'b': remove takes only ID; see 'tool remove --help'")
    }

    @Test func unknownOptionsAreNamedWithTheCommandAndTheNearestSpelling() {
        #expect(error(["get", "--ap", "x"]) == "tool get: unknown option '--ap' (did you mean '--app'?)")
        #expect(error(["get", "--app", "x", "--jsno"]) == "tool get: unknown option '--jsno' (did you mean '--json'?)")
        #expect(error(["get", "--app", "x", "--sc"]) == "tool get: unknown option '--sc' (did you mean '--scope'?)")
        #expect(error(["get", "--frobnicate"]) == "tool get: unknown option '--frobnicate'; see 'tool get --help'")
        #expect(error(["get", "-x"]) == "tool get: unknown option '-x'; see 'tool get --help'")
        // One dash where two belong, or capitals where the option has none.
        #expect(error(["get", "-app", "x"]) == "tool get: unknown option '-app' (did you mean '--app'?)")
        #expect(error(["get", "-app=x"]) == "tool get: unknown option '-app=x' (did you mean '--app=x'?)")
        #expect(error(["get", "--app", "x", "--JSON"]) == "tool get: unknown option '--JSON' (did you mean '--json'?)")
    }

    @Test func anOptionOfAnotherCommandSaysWhichCommandsTakeIt() {
        #expect(error(["remove", "--json"]) == "tool remove: remove does not take '--json'; get and list do; see 'tool remove --help'")
        #expect(error(["list", "--scope", "app"]) == "tool list: list does not take '--scope'; get does; see 'tool list --help'")
    }

    @Test func unknownCommandsAreNamed() {
        #expect(error(["gte"]) == "tool: unknown command 'gte' (did you mean 'get'?)")
        #expect(error(["GET"]) == "tool: unknown command 'GET' (did you mean 'get'?)")
        #expect(error(["List"]) == "tool: unknown command 'List' (did you mean 'list'?)")
        #expect(error(["frobnicate"]) == "tool: unknown command 'frobnicate'; see 'tool --help'")
        #expect(error([]) == "tool: needs a command: get, remove or list; see 'tool --help'")
        #expect(error(["--json"]) == "tool: needs a command: get, remove or list; see 'tool --help'")
    }

    @Test func valuesAreCheckedWhileParsing() {
        #expect(error(["get", "--app", "x", "--scope", "xx"]) == "tool get: --scope must be shared or app, not 'xx'; see 'tool get --help'")
        #expect(error(["get", "--app", "x", "--slots", "0"]) == "tool get: --slots must be 1 to 10000, not '0'; see 'tool get --help'")
        #expect(
            error(["get", "--app", "x", "--slots", "many"]) == "tool get: --slots must be 1 to 10000, not 'many'; see 'tool get --help'")
        #expect(error(["get", "--json=yes", "--app", "x"]) == "tool get: --json takes no value, not 'yes'; see 'tool get --help'")
    }

    @Test func customChecksAndNumbersSayWhatIsWrong() throws {
        let command = Command(
            "t", abstract: "",
            options: [
                .value("even", "N", help: "", check: .custom { Int($0).map { $0 % 2 == 0 } == true ? nil : "'\($0)' is odd" }),
                .value("seconds", "S", help: "", check: .number(atLeast: 0.5)),
                .value("count", "N", help: "", check: .integer(in: 0...Int.max))
            ])
        #expect(throws: UsageError(command: "t", message: "'3' is odd")) { try command.parse(["--even", "3"]) }
        #expect(throws: UsageError(command: "t", message: "--seconds must be a number of at least 0.5, not '0.1'")) {
            try command.parse(["--seconds", "0.1"])
        }
        #expect(throws: UsageError(command: "t", message: "--count must be a whole number of at least 0, not '-1'")) {
            try command.parse(["--count=-1"])
        }
        guard case .run(let parsed) = try command.parse(["--even", "4", "--seconds", "2.5"]) else {
            Issue.record("did not parse")
            return
        }
        #expect(parsed.number("seconds") == 2.5)
    }

    @Test func anOptionGivenTwiceIsAMistakeUnlessItMayRepeat() throws {
        #expect(error(["get", "--app", "a", "--app", "b"]) == "tool get: --app ID is given twice; see 'tool get --help'")
        #expect(error(["get", "--app", "a", "--json", "--json"]) == "tool get: --json is given twice; see 'tool get --help'")
        #expect(try run(["get", "--app", "a", "--out", "one", "--out", "two"])["out"] == "two")
    }

    @Test func requiredOptionsAndExtraWordsAreRefused() {
        #expect(error(["get"]) == "tool get: needs --app ID; see 'tool get --help'")
        #expect(
            error(["get", "--app", "x", "stray"]) == "tool get: unexpected argument 'stray': get takes no arguments; see 'tool get --help'")
    }

    @Test func helpAndVersionWinAnywhereBeforeTheDoubleDash() throws {
        for words in [["--help"], ["-h"], ["help"]] {
            guard case .help(let text) = try program.parse(words) else {
                Issue.record("\(words) gave no help")
                continue
            }
            #expect(text.hasPrefix("usage: tool <command> [options]"))
        }
        for words in [["get", "--help"], ["get", "--app", "--help"], ["get", "--frobnicate", "-h"], ["help", "get"]] {
            guard case .help(let text) = try program.parse(words) else {
                Issue.record("\(words) gave no help")
                continue
            }
            #expect(text.hasPrefix("usage: tool get --app ID [options]"), "\(words)")
        }
        for words in [["get", "--version"], ["-V"], ["get", "--app", "x", "-V"]] {
            guard case .version(let line) = try program.parse(words) else {
                Issue.record("\(words) gave no version")
                continue
            }
            #expect(line == "tool \(packageVersion)")
        }
        #expect(packageVersion == "0.5.0")
        #expect(error(["get", "--", "--help"]) == "tool get: unexpected argument '--help': get takes no arguments; see 'tool get --help'")
    }

    @Test func helpIsGeneratedFromTheDefinitions() throws {
        // The hidden command is left out.
        #expect(
            program.help(path: ["tool"]) == """
                usage: tool <command> [options]

                commands:
                  get     get a thing
                  remove  remove a thing
                  list    list things

                options:
                  -h, --help     show this help
                  -V, --version  print the version

                See 'tool <command> --help' for the options of a command.
                """)
        let get = program.subcommands[0].help(path: ["tool", "get"])
        #expect(
            get == """
                usage: tool get --app ID [options]

                Gets the thing once.

                options:
                  --app ID            the app
                  --json              print JSON
                  --scope shared|app  which value (default: shared)
                  --slots N           how many slots
                  --out DIR           where to write
                  -h, --help          show this help
                  -V, --version       print the version
                """)
        #expect(program.subcommands[1].help(path: ["tool", "remove"]).hasPrefix("usage: tool remove [options] [ID]"))
    }

    @Test func longHelpWrapsAndAWideLabelPutsItsTextOnTheNextLine() {
        let command = Command(
            "t", abstract: "",
            options: [
                .value(
                    "mirror", "M", help: String(repeating: "word ", count: 30),
                    check: .oneOf(["automatic", "secret-service", "file", "none"]))
            ])
        let lines = command.help(path: ["t"]).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.count <= 80 })
        let at = lines.firstIndex { $0.hasPrefix("  --mirror automatic|secret-service|file|none") }
        #expect(at.map { lines[$0] == "  --mirror automatic|secret-service|file|none" } == true)
        #expect(at.map { lines[$0 + 1].hasPrefix(String(repeating: " ", count: 26) + "word") } == true)
    }

    @Test func aHiddenCommandStillRunsAndAProgramWithOptionsNeedsNoCommand() throws {
        #expect(try run(["secret"]).name == "secret")
        let bench = Command(
            "bench", abstract: "", options: [.flag("quick", help: "")],
            subcommands: [Command("host", abstract: "", options: [.flag("participate", help: "")], isHidden: true)])
        guard case .run(let quick) = try bench.parse(["--quick"]), case .run(let host) = try bench.parse(["host", "--participate"]) else {
            Issue.record("did not parse")
            return
        }
        #expect(quick.name == "bench" && quick.has("quick"))
        #expect(host.fullName == "bench host" && host.has("participate"))
        #expect(throws: UsageError(command: "bench", message: "unexpected argument 'other': bench takes no arguments")) {
            try bench.parse(["other"])
        }
    }

    @Test func optionsBeforeTheCommandAreSaidToGoAfterIt() {
        #expect(error(["--app", "x", "get"]) == "tool: '--app' goes after the command (did you mean 'tool get --app x'?)")
        #expect(error(["--json", "list", "--json"]) == "tool: '--json' goes after the command (did you mean 'tool list --json --json'?)")
        #expect(error(["-app", "x", "get"]) == "tool: '-app' goes after the command (did you mean 'tool get --app x'?)")
        // No command among the words: the program needs one.
        #expect(error(["--app", "x"]) == "tool: needs a command: get, remove or list; see 'tool --help'")
    }

    @Test func theValueOfARequiredOptionGivenWithoutItIsPutAfterIt() {
        #expect(
            error(["get", "com.acme.notes"])
                == "tool get: 'com.acme.notes' goes after --app (did you mean 'tool get --app com.acme.notes'?)")
        #expect(
            error(["get", "--json", "com.acme.notes"])
                == "tool get: 'com.acme.notes' goes after --app (did you mean 'tool get --json --app com.acme.notes'?)")
        let consent = Command(
            "consent", abstract: "", options: [.value("app", "ID", help: "", required: true)], arguments: ["grant|withdraw"])
        #expect(
            throws: UsageError(
                command: "consent", message: "'org.example.mail' goes after --app", suggestion: "consent --app org.example.mail grant")
        ) { try consent.parse(["org.example.mail", "grant"]) }
        // Two words too many, or the option given: the plain error.
        #expect(error(["get", "a", "b"]) == "tool get: unexpected argument 'a': get takes no arguments; see 'tool get --help'")
        #expect(error(["get", "--app", "x", "y"]) == "tool get: unexpected argument 'y': get takes no arguments; see 'tool get --help'")
    }

    @Test func aHiddenOptionIsAcceptedButLeftOutOfHelp() throws {
        let command = Command(
            "t", abstract: "",
            options: [.flag("json", help: "print JSON"), Option.value("mirror", "M", help: "where", check: .oneOf(["a", "b"])).hidden])
        guard case .run(let parsed) = try command.parse(["--mirror", "a"]) else {
            Issue.record("did not parse")
            return
        }
        #expect(parsed["mirror"] == "a")
        #expect(throws: UsageError(command: "t", message: "--mirror must be a or b, not 'c'")) { try command.parse(["--mirror", "c"]) }
        let help = command.help(path: ["t"])
        #expect(!help.contains("--mirror"))
        #expect(help.hasPrefix("usage: t [options]"))
        // A command that only tolerates an option is not named as one that takes it.
        let tool = Command(
            "tool", abstract: "",
            subcommands: [
                Command("get", abstract: "", options: [.flag("json", help: "print JSON")]),
                Command("list", abstract: "", options: [Option.flag("json", help: "print JSON").hidden]),
                Command("remove", abstract: "")
            ])
        #expect(throws: UsageError(command: "tool remove", message: "remove does not take '--json'; get does")) {
            try tool.parse(["remove", "--json"])
        }
    }
}
