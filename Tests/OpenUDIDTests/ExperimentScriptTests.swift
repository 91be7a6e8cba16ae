import Foundation
import TestSupport
import Testing

/// Runs the shell experiments in Examples/experiments against the built
/// `openudid`, and proves that they can fail: against a stand-in that answers
/// everything with one constant, every one of them must report a surprise.
@Suite(.requiresXvfb) struct ExperimentScriptTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/experiments")

    static let scripts: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".sh") }.sorted()
    }()

    private func run(_ script: String, openudid: String) throws -> CommandResult {
        let environment = [
            "OPENUDID": openudid,
            "DISPLAY": SharedDisplay.display,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "TMPDIR": FileManager.default.temporaryDirectory.path
        ]
        return try runCommand(
            Tools.find("sh"), [Self.directory.appendingPathComponent(script).path],
            environment: environment, timeout: 60)
    }

    @Test func thereAreExperimentsToRun() {
        // Guards the tests below against passing because they found nothing.
        #expect(Self.scripts.count >= 5, "found \(Self.scripts) in \(Self.directory.path)")
    }

    @Test(arguments: scripts)
    func everyExperimentHappensAsExpected(_ script: String) throws {
        let result = try run(script, openudid: Tools.product("openudid").path)
        #expect(result.status == 0, "\(script) failed: \(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.hasSuffix("as expected\n"))
        #expect(!result.standardError.contains("SURPRISE"))
    }

    @Test(arguments: scripts)
    func everyExperimentReportsASurpriseWhenTheToolLies(_ script: String) throws {
        let home = try PrivateHome()
        let fake = home.root.appendingPathComponent("openudid")
        try """
        #!/bin/sh
        # Answers every question with one valid-looking constant, and serves it forever.
        echo 0123456789abcdef0123456789abcdef01234567
        [ "$1" = serve ] && exec sleep 30
        exit 0

        """.write(to: fake, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        let result = try run(script, openudid: fake.path)
        #expect(result.status == 1, "\(script) did not fail against a constant: \(result.standardOutput)")
        #expect(result.standardError.contains("SURPRISE"))
        #expect(!result.standardOutput.contains("as expected"))
    }
}
