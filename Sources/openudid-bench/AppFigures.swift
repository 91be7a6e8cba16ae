import Foundation
import OpenUDIDKit
import XSelection

extension Bench {
    /// The namespace of the cold-value and footprint figures: 100 occupied
    /// selection slots, 100 file slots and a file mirror, as a busy session has.
    static let busyNamespace = "busy"

    /// Fills the busy namespace; the owner of its slots stays in `owners` until `stopOwners()`.
    func prepareBusyNamespace() throws -> Identifier {
        log("preparing a busy session: 100 occupied slots, 100 file slots, a file mirror")
        let configuration = OpenUDID.Configuration(
            usesSelections: false, namespace: Self.busyNamespace, mirror: .file,
            environment: environment)
        var identifier: Identifier?
        for index in 0..<100 {
            let report = try OpenUDID(app: "com.bench.file\(index)", configuration: configuration).resolve()
            guard identifier == nil || identifier == report.identifier else {
                throw BenchError("file-slot apps disagreed while preparing: \(report.identifier) against \(identifier!)")
            }
            identifier = report.identifier
        }
        guard let identifier else { throw BenchError("no identifier came out of preparing the file slots") }
        owners.append(
            try startOwner([
                "--prefix", "_OPENUDID_\(Self.busyNamespace)_SLOT_", "--count", "100",
                "--target", "_OPENUDID_RECORD", "--text", Self.recordTemplate(id: identifier)
            ]))
        return identifier
    }

    func stopOwners() {
        owners.forEach { $0.stop() }
        owners.removeAll()
    }

    // MARK: 4. A cold value()

    func coldValue(expected identifier: Identifier) throws {
        log("a cold value() for a new app in the busy session")
        var configuration = OpenUDID.Configuration(display: display, namespace: Self.busyNamespace, mirror: .file, environment: environment)
        let paths = try StoragePaths(environment: environment, namespace: Self.busyNamespace)
        var floorSamples: [Double] = []
        var firstReads: [Double] = []
        let slots = names("_OPENUDID_\(Self.busyNamespace)_SLOT_", 100)
        let coldValues = try coldSamples(
            configuration, expected: identifier, warmup: plan.cold.warmup, reps: plan.cold.reps,
            prefix: "com.bench.cold"
        ) { pass in
            floorSamples.append(try self.coldFloorPass(paths, pass: pass))
            firstReads.append(try self.firstRead(slots))
        }
        results.add(
            Figure(
                "cold.floor.file", "the durable writes a new app cannot skip (file slot and local cache), plain POSIX",
                samples: Array(floorSamples.dropFirst(plan.cold.warmup))))
        results.add(
            Figure(
                "cold.read.first", "the same slots read by a new SelectionReader: connecting, then its first pass",
                samples: Array(firstReads.dropFirst(plan.cold.warmup)), baseline: "read100.pipelined"))
        // What a cold value() cannot skip: those writes, and reading the slots.
        results.add(
            Figure(
                "cold.value.file", "cold value() of a new app: 100 occupied slots, 100 file slots, file mirror",
                samples: coldValues, baseline: "cold.floor.file + read100.pipelined", target: .atMostTimesBaseline(1.25)))

        let keyring: PrivateKeyring
        do {
            keyring = try PrivateKeyring(scratch: scratch)
        } catch {
            results.add(.skipped("cold.value.secret-service", "the same with the Secret Service mirror", because: "\(error)"))
            return
        }
        configuration.environment["DBUS_SESSION_BUS_ADDRESS"] = keyring.address
        configuration.mirror = .secretService
        // The vendor's item exists, as it would once any app of the vendor ran.
        let seeded = try OpenUDID(app: "com.bench.seed", configuration: configuration).resolve()
        guard seeded.mirrorStore == .secretService, seeded.identifier == identifier else {
            throw BenchError("seeding the Secret Service mirror went wrong: \(seeded.sources) \(seeded.repairs)")
        }
        try OpenUDID.User(namespace: Self.busyNamespace, environment: configuration.environment).removeApp("com.bench.seed")
        results.add(
            Figure(
                "cold.value.secret-service", "the same with the Secret Service mirror (gnome-keyring)",
                samples: try coldSamples(
                    configuration, expected: identifier, warmup: plan.coldSecretService.warmup,
                    reps: plan.coldSecretService.reps, prefix: "com.bench.coldss"),
                baseline: "cold.value.file"))
        withExtendedLifetime(keyring) {}
    }

    /// Times a new reader's connection and first pass over `slots`, as a new
    /// app's first `value()` makes them; its closing is not timed.
    private func firstRead(_ slots: [SelectionName]) throws -> Double {
        let start = ContinuousClock.now
        let reader = try SelectionReader(display: display)
        let outcomes = try reader.read(slots, target: "_OPENUDID_RECORD", options: .init(deadline: .seconds(5)))
        let elapsed = seconds(ContinuousClock.now - start)
        reader.close()
        guard outcomes.values.filter({ $0.value != nil }).count == slots.count else {
            throw BenchError("a new reader did not read every busy slot: \(outcomes.values.filter { $0.value == nil }.prefix(3))")
        }
        return elapsed
    }

    /// Times `value()` on a fresh handle of a never-seen app; after each pass the
    /// app's files are removed again, so every pass meets the same session.
    ///
    /// - Parameter after: Run after each pass (warm-up passes too), untimed, with the pass's number.
    private func coldSamples(
        _ configuration: OpenUDID.Configuration, expected identifier: Identifier, warmup: Int, reps: Int,
        prefix: String, after: ((Int) throws -> Void)? = nil
    ) throws -> [Double] {
        var pass = 0
        var checkedSources = false
        return try measure(
            warmup: warmup, reps: reps,
            { () throws -> (OpenUDID, Identifier) in
                pass += 1
                // The handle is returned so that closing its connection is not timed: apps keep theirs.
                let udid = try OpenUDID(app: "\(prefix)\(pass)", configuration: configuration)
                return (udid, udid.value())
            },
            check: { udid, value in
                guard value == identifier else {
                    throw BenchError("a cold value() gave \(value), not the session's \(identifier.hex): \(udid.resolve().sources)")
                }
                if !checkedSources {
                    let sources = udid.resolve().sources
                    guard sources.contains(.read(.selection, records: 100)), sources.contains(.read(.fileSlot, records: 100)),
                        sources.contains(.read(.mirror, records: 1))
                    else {
                        throw BenchError("the busy session is not what it should be: \(udid.resolve().sources)")
                    }
                    checkedSources = true
                }
                try OpenUDID.User(namespace: Self.busyNamespace, environment: configuration.environment).removeApp(udid.app.id)
                try after?(pass)
            })
    }

    // MARK: 7. Footprint

    func footprint(expected identifier: Identifier) throws {
        log("footprint: openudid get, and what participating costs a host")
        let get = ["get", "--app", "com.bench.getter", "--namespace", Self.busyNamespace, "--mirror", "file"]
        // A first run creates the app's files; later runs are an app starting again.
        let first = try Child(tools.openudid, get, environment: environment, scratch: scratch.path)
        let printed = first.allLines(timeout: 30)
        first.wait()
        guard first.succeeded, printed == [identifier.hex] else {
            throw BenchError("openudid get printed \(printed) instead of \(identifier.hex): \(first.standardError)")
        }
        results.add(
            Figure(
                "footprint.help.wall", "openudid --help: start-up of the same binary doing nothing",
                samples: try wallSamples(["--help"])))
        results.add(
            Figure(
                "footprint.get.wall", "openudid get in the busy session, spawn to exit",
                samples: try wallSamples(get), baseline: "footprint.help.wall", target: .atMost(0.030)))
        if let time = Tools.find("time").flatMap({ $0.hasPrefix("/") ? $0 : nil }) {
            results.add(
                Figure("footprint.help.rss", "openudid --help, peak RSS", unit: .bytes, samples: try peakRSSSamples(["--help"], time: time))
            )
            results.add(
                Figure(
                    "footprint.get.rss", "openudid get, peak RSS", unit: .bytes, samples: try peakRSSSamples(get, time: time),
                    baseline: "footprint.help.rss", target: .atMost(16 * 1_048_576)))
        } else {
            let reason = "needs GNU time (/usr/bin/time, Debian package time) to see a child's own peak RSS"
            results.add(.skipped("footprint.help.rss", "openudid --help, peak RSS", unit: .bytes, because: reason))
            results.add(.skipped("footprint.get.rss", "openudid get, peak RSS", unit: .bytes, because: reason))
        }

        // The first value() of a new app in a fresh process, timed inside it.
        var firstValues: [Double] = []
        for pass in 0..<(plan.processes.warmup + plan.processes.reps) {
            let app = "com.bench.fresh\(pass)"
            let run = try host(namespace: Self.busyNamespace, app: app, participate: false, settle: false)
            try OpenUDID.User(namespace: Self.busyNamespace, environment: environment).removeApp(app)
            if pass >= plan.processes.warmup { firstValues.append(run.firstValue) }
        }
        results.add(
            Figure(
                "cold.value.first-in-process", "the same cold value(), but the first call of a fresh process",
                samples: firstValues, baseline: "cold.value.file", target: .atMost(0.005)))

        // The host: this program's `host` mode, with and without participate(),
        // each in an empty namespace of its own, alternating so drift hits both.
        var without: [Double] = []
        var with: [Double] = []
        var gain: [Double] = []
        for pair in 0..<plan.hostPairs {
            let plain = try host(namespace: "host\(pair)a", app: "com.bench.host", participate: false, settle: true).rss
            let participating = try host(namespace: "host\(pair)b", app: "com.bench.host", participate: true, settle: true).rss
            without.append(plain)
            with.append(participating)
            gain.append(participating - plain)
        }
        results.add(Figure("footprint.host.rss", "a small host that calls value(), RSS", unit: .bytes, samples: without))
        results.add(
            Figure(
                "footprint.host.participating.rss", "the same host after participate() serves its slot, RSS", unit: .bytes,
                samples: with, baseline: "footprint.host.rss"))
        results.add(
            Figure(
                "footprint.participation.gain", "RSS participating adds to the host (paired runs)", unit: .bytes,
                samples: gain, target: .atMost(2 * 1_048_576)))
    }

    /// Wall time of `openudid arguments` from spawn to exit, output to /dev/null.
    private func wallSamples(_ arguments: [String]) throws -> [Double] {
        var wall: [Double] = []
        for pass in 0..<(plan.processes.warmup + plan.processes.reps) {
            let start = ContinuousClock.now
            let child = try Child(tools.openudid, arguments, environment: environment, captureOutput: false, scratch: scratch.path)
            let status = child.wait().status
            let elapsed = seconds(ContinuousClock.now - start)
            guard status == 0 else { throw BenchError("openudid \(arguments.joined(separator: " ")) failed: \(child.standardError)") }
            if pass >= plan.processes.warmup { wall.append(elapsed) }
        }
        return wall
    }

    /// Peak RSS of `openudid arguments`, as GNU time reports it.
    ///
    /// Not wait4's own figure: a child made by posix_spawn shares this process's
    /// memory until it executes, and the kernel carries that high-water mark
    /// (this benchmark's 30 MiB) into the child's. time forks from a small
    /// process, so the figure is the tool's own.
    private func peakRSSSamples(_ arguments: [String], time: String) throws -> [Double] {
        var rss: [Double] = []
        let output = scratch.path + "/time-output"
        for pass in 0..<(plan.processes.warmup + plan.processes.reps) {
            let child = try Child(
                time, ["-f", "%M", "-o", output, tools.openudid] + arguments, environment: environment,
                captureOutput: false, scratch: scratch.path)
            child.wait()
            guard child.succeeded, let text = try? String(contentsOfFile: output, encoding: .utf8),
                let kilobytes = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
            else {
                throw BenchError("time openudid \(arguments.joined(separator: " ")) failed: \(child.standardError)")
            }
            if pass >= plan.processes.warmup { rss.append(kilobytes * 1024) }
        }
        return rss
    }

    /// Runs this program's `host` mode; its RSS once settled and its first value() time.
    private func host(namespace: String, app: String, participate: Bool, settle: Bool) throws -> (rss: Double, firstValue: Double) {
        let child = try Child(
            tools.bench,
            ["host", "--app", app, "--namespace", namespace]
                + (participate ? ["--participate"] : []) + (settle ? [] : ["--no-settle"]),
            environment: environment, scratch: scratch.path)
        let line = child.nextLine(timeout: 30) ?? ""
        child.wait()
        let words = line.split(separator: " ").map(String.init)
        func number(after key: String) -> Double? {
            guard let index = words.firstIndex(of: key), index + 1 < words.count else { return nil }
            return Double(words[index + 1])
        }
        guard child.succeeded, let kilobytes = number(after: "rss"), let nanoseconds = number(after: "first-value-ns") else {
            throw BenchError("the host program reported nothing usable (\(line)): \(child.standardError)")
        }
        return (kilobytes * 1024, nanoseconds * 1e-9)
    }

    // MARK: 5. Serving

    func serving() throws {
        log("serving: SelectionRequests answered under a flood")
        let participant = try Child(
            tools.openudid, ["serve", "--app", "com.bench.server", "--namespace", "serve", "--mirror", "file"],
            environment: environment, scratch: scratch.path)
        defer { participant.stop() }
        guard let identifier = participant.nextLine(timeout: 30), identifier.count == 40 else {
            throw BenchError("openudid serve printed no identifier: \(participant.standardError)")
        }
        let record = Self.recordTemplate(id: try Identifier(parsing: identifier)).replacingOccurrences(of: "{i}", with: "0")
        let owner = try startOwner(["--prefix", "_BENCH_SERVED", "--target", "_OPENUDID_RECORD", "--text", record])
        defer { owner.stop() }

        results.add(
            Figure(
                "serve.unowned", "conversions the server answers itself (no owner), per second", unit: .rate,
                samples: try flood("_BENCH_NOBODY_0", expectAnswers: false)))
        results.add(
            Figure(
                "serve.participant", "requests an `openudid serve` app answers, per second, under a flood", unit: .rate,
                samples: try flood("_OPENUDID_serve_SLOT_0", expectAnswers: true),
                baseline: "serve.unowned", target: .atLeast(20_000)))
        results.add(
            Figure(
                "serve.owner", "the same for a bare SelectionOwner (xselection-helper own)", unit: .rate,
                samples: try flood("_BENCH_SERVED", expectAnswers: true), baseline: "serve.unowned"))
    }

    /// Rates of one flood, per interval, the first interval left out as warm-up.
    private func flood(_ selection: String, expectAnswers: Bool) throws -> [Double] {
        let child = try Child(
            tools.helper,
            [
                "flood-rate", "--selection", selection, "--target", "_OPENUDID_RECORD", "--window", "64",
                "--interval-ms", "\(plan.flood.milliseconds)", "--intervals", "\(plan.flood.intervals)"
            ],
            environment: environment, scratch: scratch.path)
        let lines = child.allLines(timeout: 120)
        child.wait()
        var rates: [Double] = []
        for line in lines.dropFirst() {
            let words = line.split(separator: " ")
            guard words.count == 4, let answered = Double(words[1]), let refused = Double(words[2]), let nanoseconds = Double(words[3])
            else {
                continue
            }
            if expectAnswers && refused > 0 { throw BenchError("\(selection) refused \(Int(refused)) requests under the flood") }
            rates.append((expectAnswers ? answered : refused) / (nanoseconds * 1e-9))
        }
        guard child.succeeded, rates.count == plan.flood.intervals - 1 else {
            throw BenchError("the flood of \(selection) failed: \(lines) \(child.standardError)")
        }
        return rates
    }

    // MARK: 6. Convergence

    func convergence() throws {
        for apps in [2, 10, 30, 100] {
            try convergence(apps: apps, tool: tools.openudid, suffix: "")
            // Side by side in the same run: an earlier build (`--baseline-build`),
            // for the sizes that have a target.
            if let earlier = baselineBuild, apps >= 30 { try convergence(apps: apps, tool: earlier, suffix: ".baseline-build") }
        }
    }

    private func convergence(apps: Int, tool: String, suffix: String) throws {
        // A hundred processes take a while to start: fewer trials of them.
        let trials = apps == 100 ? plan.convergenceTrials100 : plan.convergenceTrials
        log("convergence\(suffix): \(apps) apps started at once, \(trials) trials")
        var samples: [Double] = []
        var failures: [String] = []
        var clients: [Double] = []
        for trial in 0..<trials {
            switch try convergenceTrial(apps: apps, trial: trial, tool: tool) {
            case .success(let (time, connections)):
                samples.append(time)
                clients.append(Double(connections))
            case .failure(let problem): failures.append(problem.description)
            }
        }
        let name = "converge.\(apps)\(suffix)"
        var figure = Figure(
            name, "\(apps) apps started at once: last start until all report one identifier\(suffix.isEmpty ? "" : " (earlier build)")",
            samples: samples,
            baseline: suffix.isEmpty && baselineBuild != nil && apps >= 30 ? "\(name).baseline-build" : "footprint.get.wall",
            target: suffix.isEmpty ? (apps == 30 ? .atMost(0.25) : apps == 100 ? .atMost(1.5) : nil) : nil)
        figure.failures = failures.count
        if !failures.isEmpty {
            results.notes.append("\(name): \(failures.count) trial(s) did not converge: \(failures.joined(separator: "; "))")
        }
        results.add(figure)
        if apps == 100 {
            results.add(
                Figure(
                    "clients.100\(suffix)",
                    "X connections the 100 participants hold once they agree\(suffix.isEmpty ? "" : " (earlier build)")",
                    unit: .count, samples: clients,
                    baseline: suffix.isEmpty && baselineBuild != nil ? "clients.100.baseline-build" : nil,
                    target: suffix.isEmpty && baselineBuild != nil ? .atMostTimesBaseline(0.5) : nil))
        }
    }

    /// How many sockets process `pid` holds.
    static func sockets(of pid: pid_t) -> Int {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.count {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0))?.hasPrefix("socket:") == true
        }
    }

    /// Starts `apps` participants from an empty state (a new home, no slot owned) as
    /// fast as processes can be started; the time runs from the last start until
    /// every app has printed the same identifier and nothing changed for the settle time.
    ///
    /// Trials of one size share a namespace, so the slots they use are the same
    /// hundred selections each time rather than a hundred more for the server to
    /// keep and search on every request.
    ///
    /// - Returns: The time, and the X connections the apps hold then (each
    ///   socket of theirs is one: with the file mirror they talk to nothing else).
    private func convergenceTrial(apps: Int, trial: Int, tool: String) throws -> Result<(Double, Int), BenchError> {
        let namespace = "conv\(apps)"
        let home = try PrivateHome(scratch: scratch, name: "converge-\(apps)-\(trial)")
        defer { try? FileManager.default.removeItem(atPath: home.root) }
        let environment = home.environment(display: display)
        var children: [Child] = []
        defer {
            children.forEach { $0.signal(SIGTERM) }
            for child in children where child.wait(timeout: 3) == nil {
                child.signal(SIGKILL)
                child.wait()
            }
        }
        for index in 0..<apps {
            children.append(
                try Child(
                    tool,
                    [
                        "serve", "--app", "com.vendor\(index % 3).app\(index)", "--namespace", namespace,
                        "--mirror", "file"
                    ],
                    environment: environment, scratch: scratch.path))
        }
        let lastStart = ContinuousClock.now
        let deadline = lastStart + .seconds(20)
        var latest = [String?](repeating: nil, count: apps)
        var agreedAt: ContinuousClock.Instant?
        var lastLine = lastStart
        while true {
            let now = ContinuousClock.now
            if let agreedAt, now - lastLine >= plan.convergenceSettle {
                return .success((seconds(agreedAt - lastStart), children.map { Self.sockets(of: $0.pid) }.reduce(0, +)))
            }
            guard now < deadline else {
                let distinct = Set(latest.compactMap { $0 }).count
                return .failure(
                    BenchError(
                        "trial \(trial): after 20 s, \(latest.filter { $0 != nil }.count) of \(apps) apps had printed, \(distinct) distinct identifier(s)"
                    ))
            }
            if let dead = children.first(where: { $0.atEnd }) {
                return .failure(BenchError("trial \(trial): an app exited: \(dead.standardError)"))
            }
            waitForOutput(children, until: agreedAt == nil ? deadline : min(deadline, lastLine + plan.convergenceSettle))
            let woke = ContinuousClock.now
            var changed = false
            for (index, child) in children.enumerated() {
                child.drain()
                for line in child.takeLines() {
                    latest[index] = line
                    changed = true
                }
            }
            guard changed else { continue }
            lastLine = woke
            let agree = latest.allSatisfy { $0 != nil } && Set(latest.compactMap { $0 }).count == 1
            agreedAt = agree ? woke : nil
        }
    }
}
