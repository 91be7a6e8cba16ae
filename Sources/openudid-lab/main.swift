// openudid-lab: the experiment. Every mechanism by which an app can come by an
// identifier lives through the same scenarios, with real processes on a private
// X server, a private keyring and private homes; every cell of the result is what
// a process reported.
import CommandLineKit
import Foundation
import Synchronization

let lab = Command(
    "openudid-lab",
    abstract: "every way an app can come by an identifier, side by side",
    discussion: """
        Runs every scenario against every mechanism on a private Xvfb, a private
        session bus with gnome-keyring (or the file store when none can start) and
        private machines (a home, a machine id, network interfaces and system
        settings, all made up for the run), and writes DIR/lab.md (the tables),
        DIR/lab.json (every identifier, for scripts) and DIR/lab.svg (the
        timeline). Then it runs the population (openudid-lab population --help)
        with what it measured, and writes DIR/transitions.json, population.md,
        population.svg and population-sweep.svg. It prints a short summary: what
        ran and how long it took, where the shared approaches broke, and where the
        files are; with --json, the lab's JSON instead.
        """,
    options: [
        .value("out", "DIR", help: "where to write", default: "out/lab", mayRepeat: true),
        .flag("json", help: "print the JSON instead of the summary"),
        .flag("quick", help: "run only the scenarios the tests need"),
        .flag(
            "file-mirror",
            help: "keep the vendor mirror in the file store even where a keyring could start "
                + "(what happens without a Secret Service)"),
        .value(
            "readme", "FILE",
            help: "also put the table and picture between the lab:begin and lab:end comment "
                + "lines of FILE, if it has them", mayRepeat: true),
        .value(
            "population-users", "N", help: "users of the population run that follows the lab (0: none)", default: "20000",
            check: .integer(in: 0...100_000_000))
    ],
    subcommands: [PopulationRun.command],
    epilogue: """
        It needs the openudid tool built beside it (swift build), Xvfb, and for the
        Secret Service dbus-daemon and gnome-keyring-daemon (scripts/bootstrap).
        Exit status: 0 success, 1 the lab failed (the message says why), 2 bad usage.
        """)

func say(_ text: String) {
    FileHandle.standardError.write(Data("openudid-lab: \(text)\n".utf8))
}

/// The private tree to remove if the run is interrupted.
let cleanupRoot = Mutex<String?>(nil)

/// Takes every child down and removes the private tree: the lab leaves nothing behind.
func cleanUpAfterInterruption() {
    killEveryChild()
    guard let root = cleanupRoot.withLock({ $0 }) else { return }
    // A child dies a moment after SIGKILL, and the run's own thread may still be
    // writing: try again until the tree is gone.
    for _ in 0..<20 {
        try? FileManager.default.removeItem(atPath: root)
        if !FileManager.default.fileExists(atPath: root) { return }
        usleep(50_000)
    }
}

// MARK: Arguments

let arguments = lab.parseOrExit()
if arguments.name == PopulationRun.command.name { PopulationRun.main(arguments) }
let outDirectory = arguments["out"]! // it has a default
let printsJSON = arguments.has("json")
let quick = arguments.has("quick")
let fileMirror = arguments.has("file-mirror")
let readme = arguments["readme"]

var signalSources: [DispatchSourceSignal] = []
for number in [SIGINT, SIGTERM] {
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        cleanUpAfterInterruption()
        say("interrupted; stopped every process the lab had started")
        exit(130)
    }
    source.resume()
    signalSources.append(source)
}

// MARK: The run

func runLab(quick: Bool, fileMirror: Bool) throws(LabError) -> LabReport {
    let tool = try Tools.openudid()
    let root = try PrivateRoot()
    cleanupRoot.withLock { $0 = root.path }
    defer { root.remove() }
    let xServer = try XServer()
    defer { xServer.stop() }
    var notes: [String] = []
    var keyring: PrivateKeyring?
    if fileMirror {
        notes.append("The lab was asked to keep the vendor mirror in files (`--file-mirror`).")
    } else {
        do {
            keyring = try PrivateKeyring(directory: try root.directory("keyring"))
        } catch {
            notes.append("No private Secret Service could start (\(error.description)), so the vendor mirror used the file store.")
            say("no Secret Service (\(error.description)); the vendor mirror uses the file store")
        }
    }
    defer { keyring?.stop() }
    let runner = Runner(equipment: Equipment(root: root, xServer: xServer, keyring: keyring, tool: tool))
    defer { runner.finish() }
    let scenarios = Catalogue.scenarios.filter { !quick || $0.isQuick }
    var results: [ScenarioResult] = []
    for scenario in scenarios {
        let began = Date()
        results.append(judge(try runner.run(scenario)))
        say("\(scenario.key): \(scenario.steps.count) steps in " + String(format: "%.1f s", Date().timeIntervalSince(began)))
    }
    notes += runner.notes
    say("the columns ran \(runner.processCount) openudid processes")
    return LabReport(
        scenarios: results, mirrorStore: keyring == nil ? "file" : "secret-service", notes: notes, quick: quick,
        processCount: runner.processCount)
}

let began = Date()
var report: LabReport
do {
    report = try runLab(quick: quick, fileMirror: fileMirror)
} catch {
    // Interrupted: the signal handler has killed the children, which is why the run
    // failed; it removes the tree and exits, and this thread must not race it.
    if ChildProcess.isStopping { while true { pause() } }
    cleanUpAfterInterruption()
    say(error.description)
    exit(1)
}
let seconds = Date().timeIntervalSince(began)
report.seconds = seconds

// MARK: Writing

var population: PopulationResult?
do {
    try Output.write(report, to: outDirectory)
    if let readme {
        say(try Output.splice(report, into: readme, pictureDirectory: outDirectory))
    }
    // The population, with what this run measured: the lab's own JSON is its input.
    if let users = arguments.integer("population-users"), users > 0 {
        let transitions = try TransitionTable.measure(fromLabJSON: JSONReport.data(report))
        var parameters = PopulationParameters()
        parameters.users = users
        let result = Population.run(parameters, transitions: transitions)
        let remove = Rate.named("remove")!
        // A quarter of the users at each value of the sweep: the population part of scripts/lab stays at a few seconds.
        var sweepBase = parameters
        sweepBase.users = max(1, users / 4)
        let sweep = Sweep(remove, values: Sweep.defaultValues(of: remove), base: sweepBase, transitions: transitions)
        try PopulationRun.write(result, sweep: sweep, transitions: transitions, to: outDirectory, includeTransitions: true)
        population = result
    }
} catch {
    say(error.description)
    exit(1)
}
if printsJSON {
    FileHandle.standardOutput.write(JSONReport.data(report))
    let steps = report.scenarios.reduce(0) { $0 + $1.steps.count }
    say(
        "\(report.scenarios.count) scenarios, \(steps) steps, \(report.mechanisms.count) columns in "
            + String(format: "%.1f s", seconds) + "; wrote \(outDirectory)/lab.md, lab.json, lab.svg")
} else {
    // The tables are too wide for a terminal: they are in the files, and the summary says where.
    print(TerminalSummary.render(report, population: population, directory: outDirectory), terminator: "")
}
exit(0)
