import Foundation
import OpenUDIDKit

extension Bench {
    // MARK: 5b. The user's choices reach running apps

    /// How soon running apps follow the user: three apps serve, the user opts out
    /// for every app (the baseline: the same path through the choice files) or
    /// resets the identifier; the figure is the time from the command's start
    /// until every app has printed the same new value.
    func userChoices() throws {
        log("the user's opt-out and reset, heard by three serving apps")
        let namespace = "choices"
        let common = ["--namespace", namespace, "--mirror", "file"]
        let servers = try serveThree("com.bench.choice", common)
        defer { servers.forEach { $0.stop() } }
        let zeros = Identifier.optedOut.hex
        guard var current = agreed(servers, within: 30, on: { $0 != zeros })?.value else {
            throw BenchError("the serving apps did not agree on an identifier")
        }

        var optOuts: [Double] = []
        var resets: [Double] = []
        for _ in 0..<(plan.quick ? 2 : 10) {
            let optOut = try timedCommand(["opt-out", "--all"], servers) { $0 == zeros }
            optOuts.append(optOut.seconds)
            let before = current
            _ = try timedCommand(["opt-out", "--all", "--undo"], servers) { $0 == before }

            let reset = try timedCommand(["reset"] + ["--namespace", namespace], servers) { $0 != before && $0 != zeros }
            resets.append(reset.seconds)
            current = reset.value
        }
        results.add(
            Figure("choice.opt-out", "3 serving apps: openudid opt-out --all until all report zeros", samples: optOuts))
        results.add(
            Figure(
                "choice.reset", "the same for openudid reset, until all report one new identifier", samples: resets,
                baseline: "choice.opt-out", target: .atMost(1)))
    }

    /// Runs `openudid arguments` and waits until every server has printed one
    /// value that `wanted` accepts; the time counts from the command's start.
    private func timedCommand(
        _ arguments: [String], _ servers: [Child], wanted: (String) -> Bool
    ) throws -> (value: String, seconds: Double) {
        let start = ContinuousClock.now
        let command = try Child(tools.openudid, arguments, environment: environment, scratch: scratch.path)
        guard command.wait(timeout: 30) == 0 else {
            throw BenchError("openudid \(arguments.joined(separator: " ")) failed: \(command.standardError)")
        }
        guard let agreement = agreed(servers, within: 10, from: start, on: wanted) else {
            throw BenchError("after openudid \(arguments.joined(separator: " ")) the serving apps did not agree within 10 s")
        }
        return agreement
    }

    /// Reads the servers' lines until the last line of each is one value that
    /// `wanted` accepts: that value and the seconds since `start`, or nil at the deadline.
    private func agreed(
        _ servers: [Child], within limit: Double, from start: ContinuousClock.Instant = .now, on wanted: (String) -> Bool
    ) -> (value: String, seconds: Double)? {
        var latest = [String?](repeating: nil, count: servers.count)
        let deadline = start + .seconds(limit)
        while ContinuousClock.now < deadline {
            for (index, server) in servers.enumerated() {
                while let line = server.nextLine(timeout: 0) { latest[index] = line }
            }
            if let first = latest[0], wanted(first), latest.allSatisfy({ $0 == first }) {
                return (first, seconds(ContinuousClock.now - start))
            }
            // Block on one that has not got there yet, or briefly on any when they all
            // have a wanted value but still differ.
            let lagging = latest.firstIndex { !($0.map(wanted) ?? false) } ?? 0
            let wait = Double(milliseconds(until: deadline)) / 1000
            if let line = servers[lagging].nextLine(timeout: latest[lagging].map(wanted) ?? false ? min(wait, 0.01) : wait) {
                latest[lagging] = line
            }
        }
        return nil
    }
}
