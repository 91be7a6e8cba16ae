// openudid-bench: every performance figure of OpenUDID, side by side with its
// baseline, in one run on a private X server. See docs/BENCHMARKS.md.
import CommandLineKit
import Foundation
import OpenUDIDKit

/// The sections of the run, in the order they run.
let sectionNames = ["floor", "read", "scale", "busy", "serve", "idle", "flood", "converge", "population"]
/// Parts of a section that `--only` can name alone: `cold` is the start of
/// `busy` (the busy session and the cold values) without the rest.
let partNames = ["cold": "busy"]

let bench = Command(
    "openudid-bench",
    abstract: "every performance figure of OpenUDID beside its baseline",
    discussion: """
        Starts a private Xvfb (and, for one figure, a private session bus with
        gnome-keyring), measures every figure with warm-up and repetitions, and prints
        a table: median, p95, n, the baseline and the ratio to it, the target and
        whether it is met.
        """,
    options: [
        .flag("quick", help: "few repetitions; a check that the benchmark works (< 1 min)"),
        .flag("json", help: "print JSON instead of the table"),
        .value("write-json", "PATH", help: "also write the JSON to PATH"),
        .value("svg", "PATH", help: "write the scaling plot to PATH", mayRepeat: true),
        .value("update-doc", "PATH", help: "replace the results block of PATH (docs/BENCHMARKS.md)", mayRepeat: true),
        .value("invoked-as", "TEXT", help: "the command to name in --update-doc (default: this command line)", mayRepeat: true),
        .value(
            "baseline-build", "PATH",
            help: "an openudid of an earlier build (the two-connection 0.4.0, say): the convergence section measures it beside this one"),
        .value(
            "only", "LIST",
            help: "comma-separated sections: " + sectionNames.joined(separator: ",") + " (cold: the start of busy alone)",
            check: .custom { list in
                let unknown = Set(list.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
                    .subtracting(sectionNames).subtracting(partNames.keys)
                return unknown.isEmpty
                    ? nil
                    : "unknown section(s) \(unknown.sorted().map(quoted).joined(separator: ", ")); use \(sectionNames.joined(separator: ","))"
            })
    ],
    subcommands: [
        // Run by the footprint figure: a process that uses the library and reports its own cost.
        Command(
            "host", abstract: "resolve once, report the footprint and exit",
            options: [
                .value("app", "ID", help: "the app id", default: "com.bench.host"),
                .value("namespace", "NAME", help: "the namespace"),
                .flag("participate", help: "also take part until a slot is served"),
                .flag("no-settle", help: "measure at once instead of letting the threads settle")
            ], isHidden: true)
    ],
    epilogue: """
        Exit status: 0 when every figure was measured (whether or not its target was
        met), 1 when the set-up failed, 2 on a usage error.

        It needs openudid, xselection-helper and openudid-lab beside it: swift build -c release.
        """)

// MARK: The host program of the footprint figure

/// `openudid-bench host --app ID --namespace NS [--participate] [--no-settle]`: resolves once,
/// optionally takes part, lets its threads settle, prints `rss <KiB> hwm <KiB>`
/// from /proc/self/status, the slot it serves and how long its first value()
/// took (`first-value-ns`), and exits.
func runHost(_ arguments: ParsedCommand) -> Never {
    do {
        let configuration = OpenUDID.Configuration(namespace: arguments["namespace"], mirror: .file)
        // Timed from before the handle exists: the first value() of a process
        // also pays for loading what the library needs on first use.
        let started = ContinuousClock.now
        let udid = try OpenUDID(app: arguments["app"]!, configuration: configuration)
        _ = udid.value()
        let firstValue = ContinuousClock.now - started
        var participation: Participation?
        if arguments.has("participate") {
            let started = try udid.participate()
            let deadline = ContinuousClock.now + .seconds(10)
            while started.slot == nil && ContinuousClock.now < deadline { usleep(5_000) }
            guard started.slot != nil else {
                FileHandle.standardError.write(Data("openudid-bench host: participate() found no slot to serve\n".utf8))
                exit(1)
            }
            participation = started
        }
        // Let the participation's threads settle before measuring them.
        if !arguments.has("no-settle") { usleep(300_000) }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> String {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }?
                .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "0"
        }
        let (whole, attoseconds) = firstValue.components
        print(
            "rss \(field("VmRSS")) hwm \(field("VmHWM")) slot \(participation?.slot.map(String.init) ?? "none") first-value-ns \(whole * 1_000_000_000 + attoseconds / 1_000_000_000)"
        )
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("openudid-bench host: \(error)\n".utf8))
        exit(1)
    }
}

// MARK: Arguments

let arguments = bench.parseOrExit()
if arguments.name == "host" { runHost(arguments) }
let quick = arguments.has("quick")
let printJSON = arguments.has("json")
let jsonPath = arguments["write-json"]
let svgPath = arguments["svg"]
let docPath = arguments["update-doc"]
let invokedAs = arguments["invoked-as"]
let sections = Set(arguments["only"].map { $0.split(separator: ",").map(String.init) } ?? sectionNames)
if quick && docPath != nil {
    arguments.fail("--update-doc takes the figures of a full run; drop --quick")
}

// MARK: The run

Cleanup.stopChildrenOnSignals()
let loadAtStart = Machine.loadAverage()
let started = ContinuousClock.now
let results: Results
do {
    let bench = try Bench(plan: Plan(quick: quick), baselineBuild: arguments["baseline-build"])
    var first = true
    func section(_ name: String, _ body: () throws -> Void) throws {
        guard sections.contains(name) || partNames.contains(where: { $0.value == name && sections.contains($0.key) }) else { return }
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
        guard sections.contains("busy") else {
            bench.stopOwners()
            return
        }
        try bench.frozenParticipant()
        try bench.footprint(expected: identifier)
        try bench.cHostFootprint()
        bench.stopOwners()
    }
    try section("serve") {
        try bench.serving()
        try bench.userChoices()
    }
    try section("idle") { try bench.idleWakeups() }
    try section("flood") { try bench.floods() }
    try section("converge") { try bench.convergence() }
    try section("population") { try bench.population() }
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
let context: [String: Any] = [
    "mode": quick ? "quick" : "full", "command": command, "date": date, "machine": machine,
    "seconds": elapsed
]
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
