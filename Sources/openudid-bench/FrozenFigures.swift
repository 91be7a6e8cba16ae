import Foundation
import OpenUDIDKit

extension Bench {
    // MARK: 4b. A frozen participant

    /// `openudid get` for a new app while three apps serve, against the same
    /// with one of them stopped by SIGSTOP (a frozen app, a process in a
    /// debugger), with one client that owns 90 slots and never answers, and
    /// the unsettled case, where the frozen app's answer could decide and the
    /// pass waits to its deadline.
    func frozenParticipant() throws {
        log("openudid get beside three serving apps, one of them frozen")
        let namespace = "frozen"
        let common = ["--namespace", namespace, "--mirror", "none"]
        let servers = try serveThree("com.bench.serve", common)
        defer {
            servers.forEach {
                $0.signal(SIGCONT)
                $0.stop()
            }
        }
        let identifiers = servers.map { $0.nextLine(timeout: 30) }
        guard let shared = identifiers.last ?? nil else { throw BenchError("a serving app printed no identifier") }
        // Later starters adopt the first one's identifier; wait until all serve it.
        let converged = ContinuousClock.now + .seconds(10)
        var current = identifiers
        while Set(current).count > 1, ContinuousClock.now < converged {
            for (index, server) in servers.enumerated() {
                _ = server.drain()
                if let line = server.takeLines().last { current[index] = line }
            }
            usleep(20_000)
        }
        guard Set(current).count == 1 else { throw BenchError("the serving apps did not converge: \(current)") }

        let get = ["get", "--app", "com.bench.viewer"] + common
        let none = try getSamples(get, namespace: namespace, expected: current[0] ?? shared)
        results.add(Figure("busy.frozen.none", "openudid get beside 3 serving apps", samples: none))

        servers[2].signal(SIGSTOP)
        results.add(
            Figure(
                "busy.frozen", "the same with one of the 3 stopped (SIGSTOP): settled",
                samples: try getSamples(get, namespace: namespace, expected: current[0] ?? shared),
                baseline: "busy.frozen.none", target: .atMostTimesBaseline(1.5)))
        servers[2].signal(SIGCONT)

        let silent = try Child(
            tools.helper, ["stall-many", "--prefix", "_OPENUDID_\(namespace)_SLOT_", "--start", "10", "--count", "90"],
            environment: environment, scratch: scratch.path)
        defer { silent.stop() }
        guard let ready = silent.nextLine(timeout: 30), ready.hasPrefix("ready") else {
            throw BenchError("xselection-helper stall-many did not start: \(silent.standardError)")
        }
        results.add(
            Figure(
                "busy.silent90", "the same beside one client that owns 90 slots and never answers",
                samples: try getSamples(get, namespace: namespace, expected: current[0] ?? shared),
                baseline: "busy.frozen.none", target: .atMostTimesBaseline(1.5)))

        // Unsettled: two selection-only apps of different identifiers, one
        // frozen; its answer could tie the other's, so the pass must wait.
        let other = "_OPENUDID_unsettled_SLOT_"
        let live = try startOwner([
            "--prefix", other, "--count", "1", "--target", "_OPENUDID_RECORD",
            "--text", Self.recordTemplate(id: Identifier.random())
        ])
        let frozen = try startOwner([
            "--prefix", other, "--start", "1", "--count", "1", "--target", "_OPENUDID_RECORD",
            "--text", Self.recordTemplate(id: Identifier.random())
        ])
        defer {
            frozen.signal(SIGCONT)
            [live, frozen].forEach { $0.stop() }
        }
        frozen.signal(SIGSTOP)
        results.add(
            Figure(
                "busy.frozen.unsettled", "2 selection-only apps of different identifiers, one stopped: unsettled, waits",
                samples: try getSamples(
                    ["get", "--app", "com.bench.viewer", "--namespace", "unsettled", "--no-files", "--mirror", "none"],
                    namespace: nil, expected: nil),
                baseline: "busy.frozen.none", target: .atMost(0.25 + 0.1)))
    }

    /// Wall time of `openudid arguments` from spawn to exit, checking that it
    /// printed `expected`; the app's files are removed after each run, so every
    /// run is a new app's first.
    private func getSamples(_ arguments: [String], namespace: String?, expected: String?) throws -> [Double] {
        var wall: [Double] = []
        for pass in 0..<(plan.processes.warmup + plan.processes.reps) {
            let start = ContinuousClock.now
            let child = try Child(tools.openudid, arguments, environment: environment, scratch: scratch.path)
            let status = child.wait().status
            let elapsed = seconds(ContinuousClock.now - start)
            _ = child.drain()
            let printed = child.takeLines().first
            guard status == 0, expected == nil || printed == expected else {
                throw BenchError(
                    "openudid \(arguments.joined(separator: " ")) gave \(printed ?? "nothing") (\(status)): \(child.standardError)")
            }
            if let namespace {
                try OpenUDID.User(namespace: namespace, environment: environment).removeApp("com.bench.viewer")
            }
            if pass >= plan.processes.warmup { wall.append(elapsed) }
        }
        return wall
    }
}
