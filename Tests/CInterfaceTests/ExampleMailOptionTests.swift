import Foundation
import TestSupport
import Testing

/// Example Mail takes `--help` and `--version` as every program of the package
/// does, and names what is wrong with any other command line; none of these
/// needs a display.
@Suite struct ExampleMailOptionTests {
    private func run(_ arguments: [String]) throws -> CommandResult {
        let program = try GtkMailTests.built.get()
        let home = try PrivateHome()
        return try runCommand(program, arguments, environment: try Installation.shared.get().environment(home.environment()))
    }

    @Test(arguments: [["--help"], ["-h"], ["--namespace", "demo", "--help"]])
    func helpListsTheOptions(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.hasPrefix("usage: gtk-mail [--namespace NAME] [--mirror automatic|secret-service|file|none]"))
        for option in ["--namespace NAME", "--mirror", "-h, --help", "-V, --version"] {
            #expect(result.standardOutput.contains(option), "\(option)")
        }
        #expect(result.standardError.isEmpty)
    }

    @Test(arguments: [["--version"], ["-V"]])
    func versionPrintsTheProgramAndTheVersion(arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == 0)
        #expect(result.standardOutput == "gtk-mail 0.5.0\n")
    }

    @Test(arguments: [
        (["--namespace"], "gtk-mail: --namespace NAME needs a value"),
        (["--mirror", "cloud"], "gtk-mail: --mirror must be automatic, secret-service, file or none, not 'cloud'"),
        (["--mirror=cloud"], "gtk-mail: --mirror must be automatic, secret-service, file or none, not 'cloud'"),
        (["stray"], "gtk-mail: unexpected argument 'stray': gtk-mail takes no arguments"),
        (["--bogus"], "gtk-mail: unknown option --bogus")
    ])
    func aWrongCommandLineNamesTheWordAndExitsWithStatusTwo(arguments: [String], message: String) throws {
        let result = try run(arguments)
        #expect(result.status == 2)
        #expect(result.standardError.hasPrefix(message), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }
}
