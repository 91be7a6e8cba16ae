import Foundation
import Testing

@Suite struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The lines of every ```swift block of `markdown`, trimmed, blank lines and imports left out.
    static func swiftLines(_ markdown: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else if current != nil {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if !trimmed.isEmpty && !trimmed.hasPrefix("import ") { current!.append(trimmed) }
            }
        }
        return blocks
    }

    @Test func theReadmesSwiftExampleIsTheOneThatCompiles() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let compiled = try String(contentsOf: Self.root.appendingPathComponent("Tests/APIClientTests/ReadmeExample.swift"), encoding: .utf8)
        let compiledLines = compiled.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let blocks = Self.swiftLines(readme)
        #expect(!blocks.isEmpty, "the README shows no Swift")
        for block in blocks {
            // Every line of the block, in order, in the compiled example.
            var position = compiledLines.startIndex
            for line in block {
                let found = compiledLines[position...].firstIndex(of: line)
                #expect(found != nil, "README line not in Tests/APIClientTests/ReadmeExample.swift: \(line)")
                position = found.map { $0 + 1 } ?? position
            }
        }
    }
}
