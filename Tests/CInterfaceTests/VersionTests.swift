import Foundation
import TestSupport
import Testing

/// The version lives in one place, include/openudid.h's `OPENUDID_VERSION`,
/// which the programs print; the header's number macros and the Python
/// package say it again, for their own users, and must agree with it. (Programs/header.c checks that the loaded
/// library's `openudid_version()` agrees with the macros.)
@Suite struct VersionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theHeaderThePythonPackageAndTheToolAgreeOnTheVersion() throws {
        let tool = try runCommand(Tools.product("openudid"), ["--version"], environment: ["PATH": "/usr/bin:/bin"])
        let version = try #require(tool.standardOutput.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.split(separator: ".").count == 3, "\(tool.standardOutput)")

        let header = try String(contentsOf: Self.root.appendingPathComponent("include/openudid.h"), encoding: .utf8)
        let parts = ["MAJOR", "MINOR", "PATCH"].map { part in
            header.split(separator: "\n").first { $0.hasPrefix("#define OPENUDID_VERSION_\(part) ") }?.split(separator: " ").last.map(
                String.init) ?? "?"
        }
        #expect(parts.joined(separator: ".") == version)
        #expect(header.contains("\n#define OPENUDID_VERSION \"\(version)\"\n"), "OPENUDID_VERSION is not \"\(version)\"")

        let project = try String(contentsOf: Self.root.appendingPathComponent("bindings/python/pyproject.toml"), encoding: .utf8)
        #expect(project.contains("version = \"\(version)\""))
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains("## \(version) - "), "CHANGELOG.md has no section for \(version)")
    }
}
