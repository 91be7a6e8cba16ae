import Foundation

/// The population's pictures: the survival curve of each scheme, and day-D
/// stability against one rate. Written by hand as SVG text, like the timeline,
/// with nothing in them that changes from run to run but the figures.
enum PopulationPlots {
    /// One line of a chart.
    struct Series {
        let scheme: MechanismKind
        let points: [(x: Double, y: Double)]
    }

    private static let colours: [MechanismKind: String] = [
        .hardwareID: "#7f7f7f", .macAddress: "#2c3e50", .randomisedMAC: "#17a2b8", .freshUUID: "#c0392b",
        .cachedUUID: "#e377c2", .advertising: "#8e5fb5", .vendorID: "#a0522d", .pushToken: "#999999",
        .selection: "#d4a017", .selectionAndFile: "#3b78c4", .vendorMirror: "#3a9e5a", .machineScoped: "#9acd32"
    ]
    private static let highlighted: Set<MechanismKind> = [.selectionAndFile, .vendorMirror]

    /// The schemes the pictures draw: every one that has a value to lose.
    static func drawn(_ result: PopulationResult) -> [MechanismKind] {
        MechanismKind.allCases.filter { result.noValue[MechanismKind.allCases.firstIndex(of: $0)!] < result.parameters.users }
    }

    /// Each scheme's share of users still on their day-0 identifier, day by day.
    static func survival(_ result: PopulationResult) -> String {
        let days = result.parameters.days
        let series = drawn(result).map { scheme in
            Series(scheme: scheme, points: result.stability(scheme).enumerated().map { (Double($0.offset), $0.element) })
        }
        let ticks = ([0] + result.parameters.checkpoints).map { (Double($0), "day \($0)") }
        let ceiling = result.installed.enumerated().map { (x: Double($0.offset), y: $0.element) }
        return chart(
            title: "Share of users whose app still sees its day-0 identifier",
            subtitle: description(result.parameters), xLabel: "days", ticks: ticks, xRange: 0...Double(days), series: series,
            ceiling: ceiling, footnote: footnote(result))
    }

    /// For each value of the swept rate, the share of the users whose app is still
    /// installed on the last day that are still on their day-0 identifier.
    static func sweep(_ sweep: Sweep) -> String {
        guard let first = sweep.results.first else { return "" }
        let day = first.parameters.days
        let series = drawn(first).map { scheme in
            Series(
                scheme: scheme,
                points: sweep.results.enumerated().map { (Double($0.offset), $0.element.stabilityOfInstalled(scheme, atDay: day)) })
        }
        let ticks = sweep.values.enumerated().map { (Double($0.offset), number($0.element)) }
        return chart(
            title: "Of the users whose app is still installed on day \(day), the share on their day-0 identifier",
            subtitle: sweep.rate.meaning + "; everything else as in population.md", xLabel: "--\(sweep.rate.key)", ticks: ticks,
            xRange: 0...Double(max(sweep.values.count - 1, 1)), series: series, footnote: footnote(first))
    }

    /// The run in a line: who was simulated, for how long, with which seed.
    static func description(_ parameters: PopulationParameters) -> String {
        "\(parameters.users) simulated users, \(parameters.days) days, \(parameters.apps) of \(parameters.groupSize) apps "
            + "(\(parameters.vendors) vendors) each on day 0, \(number(parameters[rate: "sandboxed"] * 100))% sandboxed, seed \(parameters.seed)"
    }

    private static func footnote(_ result: PopulationResult) -> String {
        let missing = MechanismKind.allCases.filter { !drawn(result).contains($0) }.map(\.title)
        return "What each event does to each identifier was measured by the lab (transitions.json)."
            + (missing.isEmpty ? "" : " Not drawn, having no value at all offline: \(missing.joined(separator: ", ")).")
    }

    private static func chart(
        title: String, subtitle: String, xLabel: String, ticks: [(Double, String)], xRange: ClosedRange<Double>,
        series: [Series], ceiling: [(x: Double, y: Double)] = [], footnote: String
    ) -> String {
        let width = 820.0
        let height = 492.0
        let left = 58.0
        let right = 610.0
        let top = 66.0
        let bottom = 400.0
        func x(_ value: Double) -> Double { left + (value - xRange.lowerBound) / (xRange.upperBound - xRange.lowerBound) * (right - left) }
        func y(_ share: Double) -> Double { bottom - share * (bottom - top) }
        var svg = SVGTimeline.Picture(width: width, height: height)
        svg.rect(0, 0, width, height, fill: "#ffffff")
        svg.text(12, 22, title, size: 14, weight: "bold")
        svg.text(12, 40, subtitle, size: 10.5, fill: "#444444")
        for step in 0...5 {
            let share = Double(step) / 5
            svg.line(left, y(share), right, y(share), stroke: step == 0 ? "#555555" : "#e4e4e4", width: 1)
            svg.text(left - 6, y(share) + 4, "\(step * 20)%", size: 10, anchor: "end", fill: "#444444")
        }
        for (value, label) in ticks {
            svg.line(x(value), top, x(value), bottom + 4, stroke: "#e4e4e4", width: 1)
            svg.text(x(value), bottom + 16, label, size: 10, anchor: "middle", fill: "#444444")
        }
        svg.text((left + right) / 2, bottom + 32, xLabel, size: 10.5, anchor: "middle", fill: "#444444")
        if !ceiling.isEmpty {
            let points = ceiling.map { "\(SVGTimeline.f(x($0.x))),\(SVGTimeline.f(y($0.y)))" }.joined(separator: " ")
            svg.add(
                "<polyline fill=\"none\" stroke=\"#bbbbbb\" stroke-width=\"6\" stroke-linejoin=\"round\" points=\"\(points)\">"
                    + "<title>the app is still installed</title></polyline>")
            if let first = ceiling.first(where: { $0.x >= xRange.upperBound * 0.55 }) {
                svg.text(x(first.x), y(first.y) - 9, "the app is still installed: no scheme can do better", size: 10, fill: "#888888")
            }
        }
        // The highlighted schemes last, so that they are drawn on top.
        let ordered = series.filter { !highlighted.contains($0.scheme) } + series.filter { highlighted.contains($0.scheme) }
        for line in ordered {
            let points = line.points.map { "\(SVGTimeline.f(x($0.x))),\(SVGTimeline.f(y($0.y)))" }.joined(separator: " ")
            let heavy = highlighted.contains(line.scheme)
            svg.add(
                "<polyline fill=\"none\" stroke=\"\(colours[line.scheme] ?? "#000000")\" stroke-width=\"\(heavy ? 3.5 : 1.8)\" "
                    + "stroke-linejoin=\"round\" points=\"\(points)\"><title>\(SVGTimeline.escape(line.scheme.title))</title></polyline>")
        }
        // Names at the right end of each line, pushed apart where lines end close together.
        var labels = series.compactMap { line in line.points.last.map { (line.scheme, y($0.y), $0.y) } }.sorted { $0.1 < $1.1 }
        for index in labels.indices.dropFirst() where labels[index].1 < labels[index - 1].1 + 13 {
            labels[index].1 = labels[index - 1].1 + 13
        }
        let overflow = (labels.last?.1 ?? 0) - (height - 60)
        if overflow > 0 { for index in labels.indices { labels[index].1 -= overflow } }
        for (scheme, labelY, share) in labels {
            let lineEnd = y(share)
            svg.line(right + 2, lineEnd, right + 14, labelY - 3.5, stroke: colours[scheme] ?? "#000000", width: 1)
            let name = "\(scheme.title) \(Int((share * 100).rounded()))%"
            svg.text(
                right + 18, labelY, name, size: 10.5, weight: highlighted.contains(scheme) ? "bold" : nil,
                fill: colours[scheme] ?? "#000000")
        }
        svg.text(12, height - 30, footnote, size: 10, fill: "#444444")
        svg.text(
            12, height - 14, "Heavy lines: the file slot (OpenUDID-style) and the vendor mirror (keychain-style).", size: 10,
            fill: "#444444")
        return svg.finished()
    }
}
