// openudid-bench: every performance figure of OpenUDID, side by side with its
// baseline, in one run on a private X server. See docs/BENCHMARKS.md.
import Foundation
import OpenUDIDKit

let usage = """
usage: openudid-bench [--quick] [--json] [--write-json PATH] [--svg PATH] [--update-doc PATH] [--only LIST]

Starts a private Xvfb (and, for one figure, a private session bus with
gnome-keyring), measures every figure with warm-up and repetitions, and prints
a table: median, p95, n, the baseline and the ratio to it, the target and
whether it is met.

  --quick             few repetitions; a check that the benchmark works (< 1 min)
  --json              print JSON instead of the table
  --write-json PATH   also write the JSON to PATH
  --svg PATH          write the scaling plot to PATH
  --update-doc PATH   replace the results block of PATH (docs/BENCHMARKS.md)
  --invoked-as TEXT   the command to name in --update-doc (default: this command line)
  --only LIST         comma-separated sections: floor,read,scale,busy,serve,flood,converge

Exit status: 0 when every figure was measured (whether or not its target was
met), 1 when the set-up failed, 2 on a usage error.

It needs openudid and xselection-helper beside it: swift build -c release.
"""

// MARK: The host program of the footprint figure

/// `openudid-bench host --app ID --namespace NS [--participate] [--no-settle]`: resolves once,
/// optionally takes part, lets its threads settle, prints `rss <KiB> hwm <KiB>`
/// from /proc/self/status, the slot it serves and how long its first value()
/// took (`first-value-ns`), and exits.
func runHost(_ words: [String]) -> Never {
    func value(_ name: String) -> String? {
        guard let index = words.firstIndex(of: name), index + 1 < words.count else { return nil }
        return words[index + 1]
    }
    do {
        let configuration = OpenUDID.Configuration(namespace: value("--namespace"), mirror: .file)
        // Timed from before the handle exists: the first value() of a process
        // also pays for loading what the library needs on first use.
        let started = ContinuousClock.now
        let udid = try OpenUDID(app: value("--app") ?? "com.bench.host", configuration: configuration)
        _ = udid.value()
        let firstValue = ContinuousClock.now - started
        var participation: Participation?
        if words.contains("--participate") {
            let started = udid.participate()
            let deadline = ContinuousClock.now + .seconds(10)
            while started.slot == nil && ContinuousClock.now < deadline { usleep(5_000) }
            guard started.slot != nil else {
                FileHandle.standardError.write(Data("openudid-bench host: participate() found no slot to serve\n".utf8))
                exit(1)
            }
            participation = started
        }
        // Let the participation's threads settle before measuring them.
        if !words.contains("--no-settle") { usleep(300_000) }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> String {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }?
                .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "0"
        }
        let (whole, attoseconds) = firstValue.components
        print("rss \(field("VmRSS")) hwm \(field("VmHWM")) slot \(participation?.slot.map(String.init) ?? "none") first-value-ns \(whole * 1_000_000_000 + attoseconds / 1_000_000_000)")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("openudid-bench host: \(error)\n".utf8))
        exit(1)
    }
}

// MARK: Arguments
var words = Array(CommandLine.arguments.dropFirst())
if words.first == "host" { runHost(Array(words.dropFirst())) }

var quick = false, printJSON = false
var jsonPath: String?, svgPath: String?, docPath: String?, invokedAs: String?
var sections: Set<String> = ["floor", "read", "scale", "busy", "serve", "flood", "converge"]
while !words.isEmpty {
    let word = words.removeFirst()
    func value() -> String {
        guard !words.isEmpty else {
            FileHandle.standardError.write(Data("openudid-bench: \(word) needs a value\n".utf8))
            exit(2)
        }
        return words.removeFirst()
    }
    switch word {
    case "--quick": quick = true
    case "--json": printJSON = true
    case "--write-json": jsonPath = value()
    case "--svg": svgPath = value()
    case "--update-doc": docPath = value()
    case "--invoked-as": invokedAs = value()
    case "--only": sections = Set(value().split(separator: ",").map(String.init))
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("openudid-bench: unknown argument \(word)\n\(usage)\n".utf8))
        exit(2)
    }
}

let known: Set<String> = ["floor", "read", "scale", "busy", "serve", "flood", "converge"]
if !sections.isSubset(of: known) {
    FileHandle.standardError.write(Data("openudid-bench: unknown section(s) \(sections.subtracting(known).sorted().joined(separator: ", ")); use \(known.sorted().joined(separator: ","))\n".utf8))
    exit(2)
}
if quick && docPath != nil {
    FileHandle.standardError.write(Data("openudid-bench: --update-doc takes the figures of a full run; drop --quick\n".utf8))
    exit(2)
}

// MARK: The run

Cleanup.stopChildrenOnSignals()
let loadAtStart = Machine.loadAverage()
let started = ContinuousClock.now
let results: Results
do {
    let bench = try Bench(plan: Plan(quick: quick))
    var first = true
    func section(_ name: String, _ body: () throws -> Void) throws {
        guard sections.contains(name) else { return }
        if !first { try bench.freshServer() }
        first = false
        try body()
    }
    try section("floor") { try bench.floor() }
    try section("read") { try bench.readHundred() }
    try section("scale") { try bench.scaling() }
    try section("busy") {
        let identifier = try bench.prepareBusyNamespace()
        try bench.coldValue(expected: identifier)
        try bench.footprint(expected: identifier)
        try bench.cHostFootprint()
        bench.stopOwners()
    }
    try section("serve") { try bench.serving() }
    try section("flood") { try bench.floods() }
    try section("converge") { try bench.convergence() }
    results = bench.results
} catch {
    FileHandle.standardError.write(Data("openudid-bench: \(error)\n".utf8))
    exit(1)
}
let elapsed = seconds(ContinuousClock.now - started)

var machine = Machine.describe()
machine["loadAtStart"] = loadAtStart
machine["loadAtEnd"] = Machine.loadAverage()
let command = invokedAs ?? (["openudid-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
let date = ISO8601DateFormatter().string(from: Date())
let context: [String: Any] = ["mode": quick ? "quick" : "full", "command": command, "date": date, "machine": machine,
                              "seconds": elapsed]
let json = results.json(context: context)
if let jsonPath { try? json.write(to: URL(fileURLWithPath: jsonPath)) }
if let svgPath, !results.scaling.isEmpty {
    let subtitle = "\(quick ? "quick run" : "full run"), \(machine["cpu"] as? String ?? "") × \(machine["cores"] ?? "?"), private Xvfb"
    try? ScalingPlot.svg(results.scaling, subtitle: subtitle).write(toFile: svgPath, atomically: true, encoding: .utf8)
}
if let docPath {
    do {
        try Machine.updateDocument(docPath, results: results, command: command, date: date, machine: machine, seconds: elapsed)
    } catch {
        FileHandle.standardError.write(Data("openudid-bench: \(error)\n".utf8))
        exit(1)
    }
}
if printJSON {
    FileHandle.standardOutput.write(json + Data("\n".utf8))
} else {
    print(results.table(), terminator: "")
    for note in results.notes { print("note: \(note)") }
    print(String(format: "%@ run in %.1f s; p95 is the worse tail (the 5th percentile for rates)", quick ? "quick" : "full", elapsed))
}
exit(0)
