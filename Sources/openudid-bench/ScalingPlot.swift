import Foundation

/// The scaling figure as an SVG: median time against the number of slots, both
/// axes logarithmic, one line per way of reading, the p95 as a whisker.
enum ScalingPlot {
    private struct Style {
        var label: String
        var color: String
        var dash: String?
    }

    private static let styles: [String: Style] = [
        "sequential": Style(label: "sequential (one conversion awaited at a time)", color: "#c0392b"),
        "pipelined": Style(label: "pipelined (SelectionReader)", color: "#2471a3"),
        "unowned": Style(label: "floor: unowned selections, server answers", color: "#7f8c8d", dash: "6 4")
    ]
    private static let order = ["sequential", "pipelined", "unowned"]

    static func svg(_ points: [ScalingPoint], subtitle: String) -> String {
        let width = 720.0
        let height = 460.0
        let left = 96.0
        let right = 24.0
        let top = 58.0
        let bottom = 118.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let slots = points.map { Double($0.slots) }
        let times = points.flatMap { [$0.median, $0.p95] }.filter { $0 > 0 }
        guard let minSlots = slots.min(), let maxSlots = slots.max(), let minTime = times.min(), let maxTime = times.max() else {
            return ""
        }
        let xLow = log10(minSlots) - 0.15
        let xHigh = log10(maxSlots) + 0.15
        let yLow = floor(log10(minTime))
        let yHigh = ceil(log10(maxTime))
        func x(_ value: Double) -> Double { left + (log10(value) - xLow) / (xHigh - xLow) * plotWidth }
        func y(_ value: Double) -> Double { top + plotHeight - (log10(value) - yLow) / (yHigh - yLow) * plotHeight }
        func f(_ value: Double) -> String { String(format: "%.1f", value) }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(width / 2))" y="22" text-anchor="middle" font-size="15" font-weight="bold">Reading N occupied selection slots</text>
            <text x="\(f(width / 2))" y="40" text-anchor="middle" fill="#555">\(escape(subtitle))</text>

            """
        // Grid and axes: one line per decade of time, one tick per slot count measured.
        var decade = yLow
        while decade <= yHigh {
            let value = pow(10, decade)
            svg += "<line x1=\"\(f(left))\" y1=\"\(f(y(value)))\" x2=\"\(f(left + plotWidth))\" y2=\"\(f(y(value)))\" stroke=\"#ddd\"/>\n"
            svg += "<text x=\"\(f(left - 8))\" y=\"\(f(y(value) + 4))\" text-anchor=\"end\">\(decadeLabel(value))</text>\n"
            decade += 1
        }
        for count in Set(points.map(\.slots)).sorted() {
            let position = x(Double(count))
            svg += "<line x1=\"\(f(position))\" y1=\"\(f(top))\" x2=\"\(f(position))\" y2=\"\(f(top + plotHeight))\" stroke=\"#eee\"/>\n"
            svg += "<text x=\"\(f(position))\" y=\"\(f(top + plotHeight + 18))\" text-anchor=\"middle\">\(count)</text>\n"
        }
        svg +=
            "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(plotHeight))\" fill=\"none\" stroke=\"#333\"/>\n"
        svg +=
            "<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(top + plotHeight + 38))\" text-anchor=\"middle\">slots read in one pass (log scale)</text>\n"
        svg +=
            "<text transform=\"translate(20 \(f(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">median time per pass (log scale; whisker: p95)</text>\n"

        for (row, series) in order.enumerated() {
            guard let style = styles[series] else { continue }
            let line = points.filter { $0.series == series }.sorted { $0.slots < $1.slots }
            guard !line.isEmpty else { continue }
            let path = line.map { "\(f(x(Double($0.slots)))),\(f(y($0.median)))" }.joined(separator: " ")
            svg +=
                "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(style.color)\" stroke-width=\"2\"\(style.dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>\n"
            for point in line {
                let px = x(Double(point.slots))
                if point.p95 > point.median {
                    svg +=
                        "<line x1=\"\(f(px))\" y1=\"\(f(y(point.median)))\" x2=\"\(f(px))\" y2=\"\(f(y(point.p95)))\" stroke=\"\(style.color)\"/>\n"
                }
                svg += "<circle cx=\"\(f(px))\" cy=\"\(f(y(point.median)))\" r=\"3.5\" fill=\"\(style.color)\"/>\n"
                // Labels above the line for the slowest series, below for the floor, beside for the rest.
                var dy = series == "sequential" ? -8.0 : series == "unowned" ? 16.0 : 4.0
                if y(point.median) + dy > top + plotHeight - 4 { dy = -8 }
                svg +=
                    "<text x=\"\(f(px + 7))\" y=\"\(f(y(point.median) + dy))\" fill=\"\(style.color)\" font-size=\"11\">\(timeLabel(point.median))</text>\n"
            }
            // Legend under the plot, with the cost per slot between the two largest counts.
            let legendY = top + plotHeight + 62 + Double(row) * 17
            svg +=
                "<line x1=\"\(f(left))\" y1=\"\(f(legendY - 4))\" x2=\"\(f(left + 26))\" y2=\"\(f(legendY - 4))\" stroke=\"\(style.color)\" stroke-width=\"2\"\(style.dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>\n"
            var label = style.label
            if line.count >= 2 {
                let a = line[line.count - 2]
                let b = line[line.count - 1]
                let perSlot = (b.median - a.median) / Double(b.slots - a.slots)
                label += String(format: ": %.2f µs per extra slot (%d→%d)", perSlot * 1e6, a.slots, b.slots)
            }
            svg += "<text x=\"\(f(left + 34))\" y=\"\(f(legendY))\">\(escape(label))</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    /// A power of ten as a time: 100 µs, 1 ms, 10 ms, 1 s.
    private static func decadeLabel(_ value: Double) -> String {
        if value < 1e-3 { return String(format: "%.0f µs", value * 1e6) }
        if value < 1 { return String(format: "%.0f ms", value * 1e3) }
        return String(format: "%.0f s", value)
    }

    private static func timeLabel(_ value: Double) -> String {
        if value < 1e-3 { return String(format: value < 1e-5 ? "%.1f µs" : "%.0f µs", value * 1e6) }
        if value < 1 { return String(format: value < 1e-2 ? "%.2f ms" : "%.1f ms", value * 1e3) }
        return String(format: "%.2f s", value)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }
}
