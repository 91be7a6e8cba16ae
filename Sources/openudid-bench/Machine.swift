import Foundation

/// What the figures were measured on, and where they are written down.
enum Machine {
    static func describe() -> [String: Any] {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let cpu =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let memoryKiB =
            meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }?
            .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) } ?? 0
        let release = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let os =
            release.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }?
            .dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? "unknown OS"
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return [
            "cpu": cpu,
            "cores": ProcessInfo.processInfo.activeProcessorCount,
            "memoryGiB": (memoryKiB / 1_048_576 * 10).rounded() / 10,
            "os": os,
            "kernel": kernel,
            "xserver": firstLine(of: "dpkg-query -W -f='Xvfb ${Version}' xvfb 2>/dev/null") ?? "Xvfb",
            "swift": firstLine(of: "swift --version 2>/dev/null") ?? "unknown"
        ]
    }

    /// The 1, 5 and 15 minute load averages: other work on a shared machine shows in every figure.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// One line a shell command prints, for the machine description only.
    private static func firstLine(of command: String) -> String? {
        guard let pipe = popen(command, "r") else { return nil }
        defer { pclose(pipe) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), pipe) != nil else { return nil }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return line.isEmpty ? nil : line
    }

    static let beginMarker = "<!-- bench-results:begin -->"
    static let endMarker = "<!-- bench-results:end -->"

    /// Replaces the block between the markers in `path` with this run's results.
    static func updateDocument(
        _ path: String, results: Results, command: String, date: String, machine: [String: Any],
        seconds: Double
    ) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let begin = text.range(of: beginMarker), let end = text.range(of: endMarker), begin.upperBound <= end.lowerBound else {
            throw BenchError("\(path) has no block between \(beginMarker) and \(endMarker) to put the results in; add the two lines")
        }
        var block = "\n"
        block += "Measured \(date) with `\(command)` (\(String(format: "%.0f", seconds)) s), on "
        block += "\(machine["cpu"] ?? "?") × \(machine["cores"] ?? "?") cores, \(machine["memoryGiB"] ?? "?") GiB, "
        block +=
            "\(machine["os"] ?? "?") (Linux \(machine["kernel"] ?? "?")), \(machine["xserver"] ?? "Xvfb"), \(machine["swift"] ?? "Swift"). "
        block +=
            "Load average (1, 5, 15 min) at the start: \(machine["loadAtStart"] ?? "?"), at the end: \(machine["loadAtEnd"] ?? "?").\n\n"
        block += results.markdown()
        if !results.notes.isEmpty {
            block += "\n" + results.notes.map { "- \($0)" }.joined(separator: "\n") + "\n"
        }
        block += "\n"
        let updated = text[..<begin.upperBound] + block + text[end.lowerBound...]
        try String(updated).write(toFile: path, atomically: true, encoding: .utf8)
    }
}
