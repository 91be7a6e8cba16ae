import DesktopSandbox
import Foundation

extension Bench {
    // MARK: 8. The population

    /// How long `openudid-lab population` takes, and how much memory it holds, at
    /// 10^4, 10^5 and 10^6 users over 365 days, and at 10^5 users over 91 to 730
    /// days: the cost should grow in proportion to users × days.
    func population() throws {
        log("population: simulated users over days")
        let transitions = FileManager.default.currentDirectoryPath + "/docs/lab/transitions.json"
        guard FileManager.default.fileExists(atPath: transitions) else {
            results.add(
                .skipped("population.1e4", "10^4 users × 365 days", because: "no \(transitions): run from the repository's root"))
            return
        }
        let lab: String
        do {
            lab = try DesktopSandbox.Tools.product("openudid-lab")
        } catch {
            results.add(.skipped("population.1e4", "10^4 users × 365 days", because: "\(error)"))
            return
        }
        var perUserDay: [String] = []
        func run(users: Int, days: Int, reps: Int) throws -> (seconds: [Double], peakBytes: Double, cpu: Double) {
            var samples: [Double] = []
            var peak = 0.0
            var cpu = 0.0
            for _ in 0..<reps {
                let start = ContinuousClock.now
                let result = try runCommand(
                    lab, ["population", "--transitions", transitions, "--users", "\(users)", "--days", "\(days)", "--json"],
                    environment: environment, timeout: 600)
                let elapsed = seconds(ContinuousClock.now - start)
                guard result.status == 0,
                    let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
                    let bytes = object["peakMemoryBytes"] as? Double, let processor = object["cpuSeconds"] as? Double
                else {
                    throw BenchError("openudid-lab population --users \(users) --days \(days) failed: \(result.standardError)")
                }
                samples.append(elapsed)
                peak = max(peak, bytes)
                cpu = processor
            }
            let median = samples.sorted()[samples.count / 2]
            perUserDay.append("\(users)×\(days): " + String(format: "%.0f ns", median / Double(users * days) * 1e9))
            return (samples, peak, cpu)
        }
        let small = try run(users: 10_000, days: 365, reps: plan.quick ? 1 : 3)
        results.add(Figure("population.1e4", "openudid-lab population, 10^4 users × 365 days (whole process)", samples: small.seconds))
        let medium = try run(users: 100_000, days: 365, reps: plan.quick ? 1 : 3)
        results.add(
            Figure(
                "population.1e5", "the same, 10^5 users (10× the users: 10× the time if linear)", samples: medium.seconds,
                baseline: "population.1e4", target: .atMostTimesBaseline(12)))
        for days in [91, 182, 730] where !plan.quick || days == 91 {
            let part = try run(users: 100_000, days: days, reps: 1)
            results.add(
                Figure("population.1e5.\(days)d", "10^5 users × \(days) days", samples: part.seconds, baseline: "population.1e5"))
        }
        if plan.quick {
            results.add(.skipped("population.1e6", "10^6 users × 365 days", because: "a full run measures it"))
        } else {
            let large = try run(users: 1_000_000, days: 365, reps: 1)
            results.add(
                Figure(
                    "population.1e6", "10^6 users × 365 days (2 cores)", samples: large.seconds, baseline: "population.1e5",
                    target: .atMost(60)))
            // Processor time, which other work on the machine does not stretch as it stretches the wall clock.
            results.add(Figure("population.1e6.cpu", "its processor time, both threads together", samples: [large.cpu]))
            results.add(
                Figure(
                    "population.1e6.memory", "its peak resident memory (VmHWM)", unit: .bytes, samples: [large.peakBytes],
                    target: .atMost(1_073_741_824)))
        }
        results.notes.append("population cost per user-day: " + perUserDay.joined(separator: ", "))
    }
}
