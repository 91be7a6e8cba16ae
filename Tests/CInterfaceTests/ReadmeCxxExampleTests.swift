import Foundation
import TestSupport
import Testing

/// The README's C++ example, as pasted: C++11 without a warning, linked with
/// the installed library, and run.
@Suite struct ReadmeCxxExampleTests {
    /// The README's ```cpp block.
    static func example() throws -> String {
        let readme = try String(contentsOf: Installation.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "```cpp\n"), "the README shows no C++")
        let end = try #require(readme.range(of: "\n```", range: start.upperBound..<readme.endIndex))
        return String(readme[start.upperBound..<end.lowerBound]) + "\n"
    }

    @Test func theReadmesCxxExampleIsCxx11WithoutWarningsAndPrintsTheIdentifier() throws {
        let installation = try Installation.shared.get()
        let source = installation.binaries.appendingPathComponent("readme-example.cpp")
        let program = installation.binaries.appendingPathComponent("readme-example-cxx")
        try Self.example().write(to: source, atomically: true, encoding: .utf8)
        let flags = ["-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]
        let compiled = try runCommand(
            Tools.find("c++"), flags + [source.path, "-o", program.path] + (try installation.pkgConfig(["--cflags", "--libs"])),
            environment: installation.environment(), timeout: 120)
        #expect(compiled.status == 0, "\(compiled.standardError)")
        #expect(compiled.standardError.isEmpty, "\(compiled.standardError)")

        let home = try PrivateHome()
        let run = try runCommand(program, [], environment: installation.environment(home.environment()))
        #expect(run.status == 0, "\(run.standardError)")
        let line = run.standardOutput.trimmingCharacters(in: .newlines)
        #expect(line.count == 40 && line.allSatisfy(\.isHexDigit) && line != String(repeating: "0", count: 40), "\(run.standardOutput)")
    }
}
