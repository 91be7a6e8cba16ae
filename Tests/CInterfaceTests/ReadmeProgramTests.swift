import Foundation
import TestSupport
import Testing

/// The README's C, C++ and Python examples, and the Python binding's, as
/// pasted: compiled without a warning against the installed library (the
/// Python ones run with the installed binding), and run to the end.
@Suite struct ReadmeProgramTests {
    /// The first block of `language` in `file` (a path under the package's root).
    static func example(_ language: String, in file: String = "README.md") throws -> String {
        let text = try String(contentsOf: Installation.packageRoot.appendingPathComponent(file), encoding: .utf8)
        let start = try #require(text.range(of: "```\(language)\n"), "\(file) shows no \(language)")
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound]) + "\n"
    }

    /// Compiles the README's `language` block with `compiler` and `flags`, warnings as errors, and runs it
    /// in a private home without a display; returns the lines it printed.
    private func compileAndRun(_ language: String, with compiler: String, flags: [String]) throws -> [String] {
        let installation = try Installation.shared.get()
        let source = installation.binaries.appendingPathComponent("readme-example.\(language)")
        let program = installation.binaries.appendingPathComponent("readme-example-\(language)")
        try Self.example(language).write(to: source, atomically: true, encoding: .utf8)
        let compiled = try runCommand(
            Tools.find(compiler),
            flags + ["-Wall", "-Wextra", "-pedantic", "-Werror", source.path, "-o", program.path]
                + (try installation.pkgConfig(["--cflags", "--libs"])),
            environment: installation.environment(), timeout: 120)
        #expect(compiled.status == 0, "\(compiled.standardError)")
        #expect(compiled.standardError.isEmpty, "\(compiled.standardError)")

        let run = try runCommand(program, [], environment: installation.environment(try PrivateHome().environment()))
        #expect(run.status == 0, "\(run.standardError)")
        return run.standardOutput.split(separator: "\n").map(String.init)
    }

    private static func isIdentifier(_ text: some StringProtocol) -> Bool {
        text.count == 40 && text.allSatisfy(\.isHexDigit) && text != String(repeating: "0", count: 40)
    }

    @Test func theReadmesCExampleIsAProgramWhoseCallbackHearsTheIdentifier() throws {
        let lines = try compileAndRun("c", with: "cc", flags: [])
        #expect(lines.count == 2 && Self.isIdentifier(lines[0]), "\(lines)")
        #expect(lines.last == "org.example.app now \(lines.first ?? "")", "on_change heard the same identifier: \(lines)")
    }

    @Test func theReadmesCxxExampleIsCxx11WithoutWarningsAndPrintsTheIdentifier() throws {
        let lines = try compileAndRun("cpp", with: "c++", flags: ["-std=c++11"])
        #expect(lines.count == 1 && Self.isIdentifier(lines[0]), "\(lines)")
    }

    /// Both Python examples print the identifier their callback heard before they end.
    @Test(arguments: ["README.md", "bindings/python/README.md"])
    func thePythonExampleRunsAndItsCallbackHearsTheIdentifier(file: String) throws {
        var environment = try Installation.shared.get().environment(try PrivateHome().environment())
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let code = try Self.example("python", in: file)
        let run = try runCommand(try PythonPackage.shared.get().python, ["-c", code], environment: environment)
        #expect(run.status == 0, "\(run.standardError)")
        let heard = run.standardOutput.split(separator: "\n").first { $0.hasPrefix("now ") }?.dropFirst(4)
        #expect(heard.map(Self.isIdentifier) == true, "\(run.standardOutput)")
        #expect(run.standardOutput.hasPrefix(heard.map(String.init) ?? "-"), "the callback heard the identifier printed first")
    }
}
