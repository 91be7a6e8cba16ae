import Foundation
import Testing

@Suite struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every ```swift block of `markdown`, as written.
    static func swiftBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if let lines = current, line.hasPrefix("```") {
                blocks.append(lines.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func readme() throws -> String {
        try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// The README's app example: the block that imports the library.
    static func example() throws -> String {
        try #require(swiftBlocks(try readme()).first { $0.contains("import OpenUDIDKit") }, "the README shows no Swift example")
    }

    /// The README's `Package.swift`.
    static func manifest() throws -> String {
        try #require(swiftBlocks(try readme()).first { $0.contains("import PackageDescription") }, "the README shows no Package.swift")
    }

    @Test func theReadmesSwiftExampleIsTheOneThatCompiles() throws {
        let compiled = try String(contentsOf: Self.root.appendingPathComponent("Tests/APIClientTests/ReadmeExample.swift"), encoding: .utf8)
        let compiledLines = compiled.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        // Every line of the example, in order, in the compiled copy; `@main` is the
        // one line the copy leaves out (a test target has an entry point of its own).
        let lines = try Self.example().split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("import ") && $0 != "@main" }
        #expect(lines.count >= 10)
        var position = compiledLines.startIndex
        for line in lines {
            let found = compiledLines[position...].firstIndex(of: line)
            #expect(found != nil, "README line not in Tests/APIClientTests/ReadmeExample.swift: \(line)")
            position = found.map { $0 + 1 } ?? position
        }
    }

    /// The README's Package.swift, with its `path:` form in place of the URL, and its
    /// example as `Sources/Notes/Notes.swift`, exactly as pasted, build against this
    /// checkout without a warning. The package lives beside a link named `openudid`
    /// to the checkout, as the README's `../openudid` says; it is rewritten on every
    /// run, and its build directory is kept so a second run builds only what changed.
    @Test(.timeLimit(.minutes(20)))
    func theReadmesPackageBuildsItsExampleAsPastedWithoutWarnings() throws {
        let manifest = try Self.manifest()
        #expect(manifest.contains(#"branch: "main")"#), "the README's package follows no branch")
        let url = try #require(manifest.firstRange(of: #/\.package\(url: "[^"]*", branch: "[^"]*"\)/#), "no .package(url:branch:)")
        let path = try #require(manifest.firstMatch(of: #/\.package\(path: "\.\./openudid"\)/#), "no .package(path:) form")
        let local = manifest.replacingCharacters(in: url, with: path.output)

        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "openudid-readme" + Self.root.path.replacingOccurrences(of: "/", with: "-"))
        let package = base.appendingPathComponent("notes")
        let link = base.appendingPathComponent("openudid")
        let sources = package.appendingPathComponent("Sources/Notes")
        try? FileManager.default.removeItem(at: sources)
        try? FileManager.default.removeItem(at: link)
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: Self.root)
        try local.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try Self.example().write(to: sources.appendingPathComponent("Notes.swift"), atomically: true, encoding: .utf8)

        // The example's own objects go, so that it compiles again and says its warnings again.
        let scratch = package.appendingPathComponent(".build")
        for triple in (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? [] {
            try? FileManager.default.removeItem(at: scratch.appendingPathComponent("\(triple)/debug/Notes.build"))
        }
        let (status, output) = try Self.run(["swift", "build", "--package-path", package.path])
        #expect(status == 0, "swift build of the README's package failed:\n\(output)")
        let warnings = output.split(separator: "\n").filter { $0.contains("warning:") && $0.contains("/notes/") }
        #expect(warnings.isEmpty, "\(warnings.joined(separator: "\n"))")
    }

    /// Runs `arguments` through env to completion: its status and its output and errors together.
    static func run(_ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
