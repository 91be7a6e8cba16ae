import Foundation

/// What a figure measures, which decides how it prints and which tail is the bad one.
enum Unit: String {
    /// Seconds; smaller is better.
    case time
    /// Events per second; larger is better.
    case rate
    /// Bytes; smaller is better.
    case bytes
    /// Events counted; fewer is better.
    case count

    func format(_ value: Double) -> String {
        switch self {
        case .time:
            let magnitude = abs(value)
            if magnitude < 1e-3 { return String(format: "%.1f µs", value * 1e6) }
            if magnitude < 1 { return String(format: "%.2f ms", value * 1e3) }
            return String(format: "%.2f s", value)
        case .rate:
            return String(format: "%.0f/s", value)
        case .bytes:
            return String(format: "%.2f MiB", value / 1_048_576)
        case .count:
            return String(format: "%.0f", value)
        }
    }
}

/// A target a figure should meet, on its median.
enum Target {
    /// The median is at most this (seconds or bytes).
    case atMost(Double)
    /// The median is at least this.
    case atLeast(Double)
    /// The median is at most this many times its baseline's.
    case atMostTimesBaseline(Double)
    /// The median is at least this many times its baseline's.
    case atLeastTimesBaseline(Double)

    func describe(_ unit: Unit) -> String {
        switch self {
        case .atMost(let limit): "< \(unit.format(limit))"
        case .atLeast(let limit): "≥ \(unit.format(limit))"
        case .atMostTimesBaseline(let factor): "≤ \(String(format: "%g", factor))× base"
        case .atLeastTimesBaseline(let factor): "≥ \(String(format: "%g", factor))× base"
        }
    }
}

/// One figure: its samples, its baseline and its target.
struct Figure {
    let id: String
    let name: String
    let unit: Unit
    var samples: [Double]
    /// The figure this one is compared with, or several joined by ` + `, whose
    /// medians are added up (a floor made of two parts).
    var baseline: String?
    var target: Target?
    /// Trials that did not produce a sample (a convergence that never came); any makes the target missed.
    var failures = 0
    /// A figure that could not be measured here (a tool missing), and why.
    var skipped: String?

    init(_ id: String, _ name: String, unit: Unit = .time, samples: [Double], baseline: String? = nil, target: Target? = nil) {
        self.id = id
        self.name = name
        self.unit = unit
        self.samples = samples
        self.baseline = baseline
        self.target = target
    }

    static func skipped(_ id: String, _ name: String, unit: Unit = .time, because reason: String) -> Figure {
        var figure = Figure(id, name, unit: unit, samples: [])
        figure.skipped = reason
        return figure
    }

    var median: Double? { Self.percentile(samples, 0.5) }

    /// The figures `baseline` names.
    var baselineIDs: [String]? {
        baseline.map { $0.split(separator: "+").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// The bad tail: the 95th percentile of times and sizes, the 5th of rates.
    var p95: Double? { Self.percentile(samples, unit == .rate ? 0.05 : 0.95) }

    /// Linear interpolation between closest ranks.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        let weight = position - Double(lower)
        return sorted[lower] * (1 - weight) + sorted[upper] * weight
    }
}

/// Every figure of a run, in the order they were measured.
final class Results {
    private(set) var figures: [Figure] = []
    var scaling: [ScalingPoint] = []
    var notes: [String] = []

    func add(_ figure: Figure) {
        figures.append(figure)
    }

    func figure(_ id: String) -> Figure? { figures.first { $0.id == id } }

    /// The figure's median over its baseline's median (the sum of their medians for several).
    func ratio(_ figure: Figure) -> Double? {
        guard let ids = figure.baselineIDs, let median = figure.median else { return nil }
        var base = 0.0
        for id in ids {
            guard let part = self.figure(id)?.median else { return nil }
            base += part
        }
        return base == 0 ? nil : median / base
    }

    /// Whether the figure meets its target; nil when it has none or could not be measured.
    func met(_ figure: Figure) -> Bool? {
        guard let target = figure.target, let median = figure.median else { return figure.target == nil ? nil : false }
        guard figure.failures == 0 else { return false }
        switch target {
        case .atMost(let limit): return median < limit
        case .atLeast(let limit): return median >= limit
        case .atMostTimesBaseline(let factor): return ratio(figure).map { $0 <= factor }
        case .atLeastTimesBaseline(let factor): return ratio(figure).map { $0 >= factor }
        }
    }

    // MARK: Table

    func table() -> String {
        let header = ["figure", "median", "p95", "n", "baseline", "ratio", "target", "met?"]
        var rows: [[String]] = []
        for figure in figures {
            if let reason = figure.skipped {
                rows.append([figure.id, "skipped: \(reason)", "", "", "", "", "", ""])
                continue
            }
            let n = figure.failures > 0 ? "\(figure.samples.count)/\(figure.samples.count + figure.failures)" : "\(figure.samples.count)"
            let met = self.met(figure).map { $0 ? "yes" : "NO" } ?? ""
            rows.append([
                figure.id, figure.median.map(figure.unit.format) ?? "-", figure.p95.map(figure.unit.format) ?? "-", n,
                figure.baseline ?? "", ratio(figure).map { String(format: "%.2f×", $0) } ?? "",
                figure.target?.describe(figure.unit) ?? "", met
            ])
        }
        var widths = header.map(\.count)
        for row in rows where !row[1].hasPrefix("skipped") {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: max(widths[index] - cell.count, 0))
                // Numbers right-aligned, words left-aligned.
                return [1, 2, 3, 5].contains(index) ? pad + cell : cell + pad
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        var text = line(header) + "\n" + line(widths.map { String(repeating: "-", count: $0) }) + "\n"
        for row in rows {
            text += (row[1].hasPrefix("skipped") ? row[0] + "  " + row[1] : line(row)) + "\n"
        }
        return text
    }

    /// The figures as a Markdown table, for docs/BENCHMARKS.md.
    func markdown() -> String {
        var text = "| figure | what | median | p95 | n | baseline | ratio | target | met? |\n|---|---|--:|--:|--:|---|--:|---|---|\n"
        for figure in figures {
            if let reason = figure.skipped {
                text += "| `\(figure.id)` | \(figure.name) | skipped: \(reason) | | | | | | |\n"
                continue
            }
            let n = figure.failures > 0 ? "\(figure.samples.count)/\(figure.samples.count + figure.failures)" : "\(figure.samples.count)"
            let met = self.met(figure).map { $0 ? "yes" : "**no**" } ?? ""
            let median: String = figure.median.map(figure.unit.format) ?? "-"
            let p95: String = figure.p95.map(figure.unit.format) ?? "-"
            let baseline: String = figure.baselineIDs.map { $0.map { "`\($0)`" }.joined(separator: " + ") } ?? ""
            let ratio: String = self.ratio(figure).map { String(format: "%.2f×", $0) } ?? ""
            let target: String = figure.target?.describe(figure.unit) ?? ""
            let cells: [String] = ["`\(figure.id)`", figure.name, median, p95, n, baseline, ratio, target, met]
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return text
    }

    // MARK: JSON

    func json(context: [String: Any]) -> Data {
        func number(_ value: Double?) -> Any { value.map { NSNumber(value: $0) } ?? NSNull() }
        let figures = self.figures.map { figure -> [String: Any] in
            var object: [String: Any] = [
                "id": figure.id, "name": figure.name,
                "unit": figure.unit == .time ? "seconds" : figure.unit == .rate ? "per second" : "bytes",
                "median": number(figure.median), "p95": number(figure.p95), "n": figure.samples.count,
                "failures": figure.failures, "samples": figure.samples
            ]
            object["baseline"] = figure.baseline ?? NSNull()
            object["ratio"] = number(ratio(figure))
            object["target"] = figure.target?.describe(figure.unit) ?? NSNull()
            object["met"] = met(figure).map { NSNumber(value: $0) } ?? NSNull()
            object["skipped"] = figure.skipped ?? NSNull()
            return object
        }
        var object = context
        object["figures"] = figures
        object["scaling"] = scaling.map { point -> [String: Any] in
            ["slots": point.slots, "series": point.series, "median": point.median, "p95": point.p95]
        }
        object["notes"] = notes
        return (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data("{}".utf8)
    }
}

/// One point of the scaling plot.
struct ScalingPoint {
    var slots: Int
    var series: String
    var median: Double
    var p95: Double
}
