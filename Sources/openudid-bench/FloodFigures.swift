import Foundation
import OpenUDIDKit
import XSelection

extension Bench {
    // MARK: 5b. Floods

    /// Peak memory of a serving app under a flood from a client that reads its
    /// answers (the baseline) and from one that never does, and how long
    /// another reader waits for the slot meanwhile.
    func floods() throws {
        log("floods: peak RSS of openudid serve under a reading and an unread flood")
        let reading = try floodedServe(namespace: "floodread") { slot in
            let child = try Child(
                tools.helper,
                [
                    "flood-rate", "--selection", slot, "--target", "_OPENUDID_RECORD", "--window", "64",
                    "--interval-ms", "\(plan.unreadFloodMilliseconds)", "--intervals", "1"
                ],
                environment: environment, scratch: scratch.path)
            _ = child.allLines(timeout: 120)
            child.wait()
            return []
        }
        results.add(
            Figure(
                "flood.read.rss", "peak RSS of an `openudid serve` app under a flood that reads its answers", unit: .bytes,
                samples: [reading.peak]))

        let unread = try floodedServe(namespace: "floodunread") { slot in
            let flood = try Child(
                tools.helper,
                [
                    "flood", "--unread", "--selection", slot, "--target", "_OPENUDID_RECORD",
                    "--seconds", "\(Double(plan.unreadFloodMilliseconds) / 1000)"
                ],
                environment: environment, scratch: scratch.path)
            defer { flood.stop() }
            guard flood.nextLine(timeout: 10)?.hasPrefix("ready") == true else {
                throw BenchError("the unread flood did not start: \(flood.standardError)")
            }
            // Another client reads the slot over and over while the flood runs.
            let reader = try SelectionReader(display: display)
            let end = ContinuousClock.now + .milliseconds(plan.unreadFloodMilliseconds)
            var answers: [Double?] = []
            while ContinuousClock.now < end {
                let asked = ContinuousClock.now
                let outcome = try reader.read(SelectionName(slot), target: "_OPENUDID_RECORD", options: .init(deadline: .seconds(5)))
                if outcome.kind == .value { answers.append(seconds(.now - asked)) } else { answers.append(nil) }
            }
            return answers
        }
        results.add(
            Figure(
                "flood.unread.rss", "the same under a flood that never reads its answers", unit: .bytes,
                samples: [unread.peak], baseline: "flood.read.rss", target: .atMost(64 * 1024 * 1024)))
        var answer = Figure(
            "flood.unread.answer", "another reader's wait for that app's slot during the unread flood",
            samples: unread.answers.compactMap { $0 }, baseline: "read100.pipelined", target: .atMost(1))
        answer.failures = unread.answers.filter { $0 == nil }.count
        results.add(answer)
    }

    /// Starts an `openudid serve` app in `namespace`, runs `flood` against its
    /// slot 0, and returns the app's peak RSS (VmHWM) in bytes and what `flood` returned.
    private func floodedServe(namespace: String, _ flood: (String) throws -> [Double?]) throws -> (peak: Double, answers: [Double?]) {
        let participant = try Child(
            tools.openudid, ["serve", "--app", "com.bench.flooded", "--namespace", namespace, "--mirror", "none"],
            environment: environment, scratch: scratch.path)
        defer { participant.stop() }
        guard let identifier = participant.nextLine(timeout: 30), identifier.count == 40 else {
            throw BenchError("openudid serve printed no identifier: \(participant.standardError)")
        }
        let answers = try flood("_OPENUDID_\(namespace)_SLOT_0")
        guard let status = try? String(contentsOfFile: "/proc/\(participant.pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else {
            throw BenchError("cannot read the peak RSS of openudid serve (pid \(participant.pid))")
        }
        return (kilobytes * 1024, answers)
    }
}
