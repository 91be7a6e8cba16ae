import Foundation
import OpenUDIDKit
import XSelection

/// How many warm-up passes and repetitions each figure gets.
struct Plan {
    let quick: Bool

    var floor: (warmup: Int, reps: Int) { quick ? (20, 200) : (200, 2000) }
    var pipelined: (warmup: Int, reps: Int) { quick ? (10, 50) : (50, 500) }
    var sequential: (warmup: Int, reps: Int) { quick ? (3, 15) : (10, 100) }
    var tk: (warmup: Int, reps: Int) { quick ? (2, 10) : (5, 50) }
    func scaling(_ slots: Int, pipelined: Bool) -> (warmup: Int, reps: Int) {
        let base = pipelined ? self.pipelined : sequential
        return slots >= 1000 ? (max(base.warmup / 5, 1), max(base.reps / 5, 5)) : base
    }
    var cold: (warmup: Int, reps: Int) { quick ? (3, 20) : (10, 200) }
    var coldSecretService: (warmup: Int, reps: Int) { quick ? (2, 10) : (5, 50) }
    var processes: (warmup: Int, reps: Int) { quick ? (2, 10) : (5, 60) }
    var hostPairs: Int { quick ? 3 : 12 }
    var flood: (intervals: Int, milliseconds: Int) { quick ? (4, 250) : (11, 500) }
    var unreadFloodMilliseconds: Int { quick ? 3000 : 12000 }
    var convergenceTrials: Int { quick ? 3 : 20 }
    var convergenceTrials100: Int { quick ? 1 : 10 }
    var convergenceSettle: Duration { quick ? .milliseconds(300) : .milliseconds(500) }
    var ownerProcesses: Int { 100 }
    /// Windows in which an idle participant's wake-ups are counted, and their length in seconds.
    var idle: (windows: Int, seconds: Double) { quick ? (1, 5) : (3, 10) }
}

/// Seconds in a duration.
func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) * 1e-18
}

/// Runs `body` `warmup` times untimed, then `reps` times timed; `check` looks at
/// each result outside the timed part, so a pass that went wrong is never counted.
func measure<T>(warmup: Int, reps: Int, _ body: () throws -> T, check: (T) throws -> Void = { _ in }) throws -> [Double] {
    for _ in 0..<warmup { try check(try body()) }
    var samples: [Double] = []
    samples.reserveCapacity(reps)
    for _ in 0..<reps {
        let start = ContinuousClock.now
        let result = try body()
        samples.append(seconds(ContinuousClock.now - start))
        try check(result)
    }
    return samples
}

/// The whole run: a private desktop, every figure, and the results.
final class Bench {
    let plan: Plan
    let tools: Tools
    /// An `openudid` of an earlier build, measured beside this one where set.
    let baselineBuild: String?
    let scratch: Scratch
    /// The X server of the current section; each section gets a fresh one (see `freshServer`).
    private(set) var server: PrivateXServer
    let home: PrivateHome
    let results = Results()
    /// Owner processes started for a figure, stopped when it is done.
    var owners: [Child] = []

    var display: String { server.display }

    init(plan: Plan, baselineBuild: String? = nil) throws {
        self.plan = plan
        self.baselineBuild = baselineBuild
        tools = try Tools()
        scratch = try Scratch()
        server = try PrivateXServer(scratch: scratch)
        home = try PrivateHome(scratch: scratch, name: "home")
    }

    /// The environment of this run's processes.
    var environment: [String: String] { home.environment(display: display) }

    /// Replaces the X server with a new one, so that no section measures the
    /// leftovers of another: the server never forgets a selection once owned
    /// and looks selections up in a list, so every selection an earlier section
    /// used (a thousand for the scaling figure) would slow every later request.
    func freshServer() throws {
        server = try PrivateXServer(scratch: scratch)
    }

    func log(_ message: String) {
        FileHandle.standardError.write(Data("openudid-bench: \(message)\n".utf8))
    }

    // MARK: Processes

    /// Starts `xselection-helper own` and waits until it serves.
    func startOwner(_ arguments: [String]) throws -> Child {
        let child = try Child(tools.helper, ["own"] + arguments, environment: environment, scratch: scratch.path)
        guard let line = child.nextLine(timeout: 30), line.hasPrefix("ready") else {
            throw BenchError("xselection-helper own \(arguments.joined(separator: " ")) did not start serving: \(child.standardError)")
        }
        return child
    }

    /// Starts three `openudid serve` apps, `<prefix>1` to `<prefix>3`, with `options`.
    func serveThree(_ prefix: String, _ options: [String]) throws -> [Child] {
        try (1...3).map { index in
            try Child(
                tools.openudid, ["serve", "--app", "\(prefix)\(index)"] + options, environment: environment, scratch: scratch.path)
        }
    }

    /// Starts `count` owners at once and waits until every one serves.
    func startOwners(_ argumentLists: [[String]]) throws -> [Child] {
        let children = try argumentLists.map { try Child(tools.helper, ["own"] + $0, environment: environment, scratch: scratch.path) }
        for child in children {
            guard let line = child.nextLine(timeout: 60), line.hasPrefix("ready") else {
                throw BenchError("an xselection-helper owner did not start serving: \(child.standardError)")
            }
        }
        return children
    }

    /// Runs a plain-Xlib timing of xselection-helper and returns its samples in seconds.
    func helperTiming(_ what: String, prefix: String, count: Int, warmup: Int, reps: Int, target: String = "UTF8_STRING") throws -> [Double]
    {
        let child = try Child(
            tools.helper,
            [
                "time", "--what", what, "--prefix", prefix, "--count", "\(count)", "--target", target,
                "--warmup", "\(warmup)", "--reps", "\(reps)"
            ],
            environment: environment, scratch: scratch.path)
        let lines = child.allLines(timeout: 120)
        child.wait()
        let samples = lines.compactMap { Double($0).map { $0 * 1e-9 } }
        guard child.succeeded, samples.count == reps else {
            throw BenchError("xselection-helper time --what \(what) failed: \(lines.joined(separator: "; ")) \(child.standardError)")
        }
        return samples
    }

    /// A slot record as a participant would serve it, with `{i}` where the helper puts the slot number.
    static func recordTemplate(id: Identifier, vendor: String = "com.bench") -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let record = SlotRecord(id: id, app: "com.bench.slot{i}", vendor: vendor, born: now - 86_400_000, written: now, optOut: false)
        return String(decoding: record.encoded(), as: UTF8.self)
    }
}
