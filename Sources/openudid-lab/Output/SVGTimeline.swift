import Foundation

/// The lab's result as a picture: steps across, apps down, one panel per
/// mechanism, one colour per identifier. Along a row, a change of colour is an
/// app whose identifier changed; the picture is written by hand, as SVG text.
///
/// Colours go by the order in which identifiers first appear within a scenario
/// and panel, so two runs that tell the same story draw the same picture even
/// though their identifiers differ.
enum SVGTimeline {
    private static let left = 128.0, top = 84.0
    private static let cellWidth = 34.0, cellHeight = 14.0, stepGap = 3.0, scenarioGap = 18.0
    private static let rowGap = 2.0, panelTitle = 22.0, panelGap = 14.0
    /// The fill of an app that was not running: a pale grey, so that black stays for zeros.
    private static let idle = "#ececec"
    private static let highlighted: Set<MechanismKind> = [.selectionAndFile, .vendorMirror]
    private static let palette = [
        "#3b78c4", "#e8872a", "#3a9e5a", "#c0392b", "#8e5fb5", "#17a2b8",
        "#d4a017", "#e377c2", "#7f7f7f", "#2c3e50", "#a0522d", "#9acd32"
    ]

    /// The picture as SVG text.
    static func render(_ report: LabReport) -> String {
        let apps = LabApp.all
        // Where each step's column starts.
        var columns: [(scenario: Int, step: Int, x: Double)] = []
        var x = left
        for (s, scenario) in report.scenarios.enumerated() {
            if s > 0 { x += scenarioGap - stepGap }
            for index in scenario.steps.indices {
                columns.append((s, index, x))
                x += cellWidth + stepGap
            }
        }
        let width = x - stepGap + 16
        let panelHeight = panelTitle + Double(apps.count) * (cellHeight + rowGap)
        let panelsBottom = top + Double(report.mechanisms.count) * (panelHeight + panelGap)
        let height = panelsBottom + 64

        var svg = Picture(width: width, height: height)
        svg.rect(0, 0, width, height, fill: "#ffffff")
        svg.text(
            12, 22, "What each app saw, step by step: one colour per identifier, a new colour in a row is a new identifier",
            size: 13, weight: "bold")

        // Scenario names, and each step's label at a slant above its column.
        for (s, scenario) in report.scenarios.enumerated() {
            let own = columns.filter { $0.scenario == s }
            guard let first = own.first, let last = own.last else { continue }
            let right = last.x + cellWidth
            svg.line(first.x, 44, right, 44, stroke: "#555555", width: 1)
            svg.text((first.x + right) / 2, 40, scenario.scenario.title, size: 10.5, weight: "bold", anchor: "middle")
            // Labels alternate between two lines, so each may be twice as wide as its column.
            for column in own {
                let cx = column.x + cellWidth / 2
                let y = column.step % 2 == 0 ? top - 22 : top - 9
                svg.line(cx, y + 2, cx, top - 2, stroke: "#bbbbbb", width: 1)
                svg.text(cx, y, scenario.steps[column.step].step.label, size: 9.5, anchor: "middle", fill: "#333333")
            }
        }

        for (p, kind) in report.mechanisms.enumerated() {
            let y0 = top + Double(p) * (panelHeight + panelGap)
            if highlighted.contains(kind) {
                svg.rect(4, y0 - 3, width - 8, panelHeight + 4, fill: "#fff7d6", stroke: "#e0c060", radius: 4)
            }
            svg.text(12, y0 + 14, kind.title, size: 11.5, weight: "bold")
            svg.text(left + 62, y0 + 14, kind.likeness, size: 10, fill: "#666666")
            for (r, app) in apps.enumerated() {
                let y = y0 + panelTitle + Double(r) * (cellHeight + rowGap)
                svg.text(left - 8, y + cellHeight - 3, app.name, size: 10, anchor: "end", fill: "#333333")
                for column in columns {
                    let step = report.scenarios[column.scenario].steps[column.step]
                    let cell = step.cells[kind]?.first { $0.app == app }
                    draw(cell, at: column.x, y, into: &svg)
                }
            }
            annotate(kind, report: report, columns: columns, y0: y0, into: &svg)
        }

        // The legend.
        let ly = panelsBottom + 6
        var lx = 12.0
        for (rank, name) in ["1st identifier", "2nd", "3rd", "4th"].enumerated() {
            svg.rect(lx, ly, 14, 12, fill: colour(rank))
            svg.text(lx + 18, ly + 10, name, size: 10)
            lx += 18 + Double(name.count) * 5.8 + 14
        }
        svg.rect(lx, ly, 14, 12, fill: "#111111")
        svg.text(lx + 18, ly + 10, "zero (opted out)", size: 10)
        lx += 18 + 16 * 5.8 + 14
        svg.rect(lx + 0.5, ly + 0.5, 13, 11, fill: "#ffffff", stroke: "#999999")
        svg.line(lx + 1, ly + 11, lx + 13, ly + 1, stroke: "#999999", width: 1)
        svg.text(lx + 18, ly + 10, "unavailable", size: 10)
        lx += 18 + 11 * 5.8 + 14
        svg.rect(lx, ly, 14, 12, fill: idle)
        svg.text(lx + 18, ly + 10, "not running", size: 10)
        lx += 18 + 11 * 5.8 + 14
        svg.rect(lx + 1, ly + 1, 12, 10, fill: "none", stroke: "#000000", strokeWidth: 2)
        svg.text(lx + 18, ly + 10, "an app's identifier changed", size: 10)
        svg.text(
            12, ly + 30,
            "Colours count afresh in each scenario and panel (every scenario starts on a fresh machine). "
                + "Highlighted: the two columns that the removal of every app tells apart.",
            size: 10, fill: "#444444")
        svg.text(12, ly + 45, report.mirrorSentence, size: 10, fill: "#444444")
        return svg.finished()
    }

    /// One app's look: its identifier's colour, black for zeros, hatched when it did not run;
    /// a heavy frame when the app had another identifier before.
    private static func draw(_ cell: Cell?, at x: Double, _ y: Double, into svg: inout Picture) {
        guard let cell else {
            svg.rect(x, y, cellWidth, cellHeight, fill: idle)
            return
        }
        // The rank, not the identifier, so that the picture changes only when the story does.
        let title = "\(cell.app.name): \(cell.outcome.rawValue)" + (cell.colour.map { ", identifier no. \($0 + 1)" } ?? "")
        switch cell.outcome {
        case .zero:
            svg.rect(x, y, cellWidth, cellHeight, fill: "#111111", title: title)
        case .unavailable:
            // White, crossed out: the app looked and there was nothing to see.
            svg.rect(x + 0.5, y + 0.5, cellWidth - 1, cellHeight - 1, fill: "#ffffff", stroke: "#999999", title: title)
            svg.line(x + 1, y + cellHeight - 1, x + cellWidth - 1, y + 1, stroke: "#999999", width: 1)
        case .same, .new:
            svg.rect(x, y, cellWidth, cellHeight, fill: colour(cell.colour ?? 0), title: title)
        }
        if cell.outcome == .new, cell.changed {
            svg.rect(x + 1, y + 1, cellWidth - 2, cellHeight - 2, fill: "none", stroke: "#000000", strokeWidth: 2)
        }
    }

    /// The highlighted panels say in words what the break did to them, taken from the cells.
    private static func annotate(
        _ kind: MechanismKind, report: LabReport, columns: [(scenario: Int, step: Int, x: Double)],
        y0: Double, into svg: inout Picture
    ) {
        guard highlighted.contains(kind) else { return }
        let notes: [(scenario: String, step: String, app: LabApp, row: Int, same: String, new: String)] = [
            ("break", "all-removed", .notes, 3, "all removed: notes gets the same id", "all removed: notes gets a new id"),
            ("mirror", "same-vendor", .photos, 4, "photos gets notes' id", "photos gets a new id")
        ]
        for note in notes {
            guard let s = report.scenarios.firstIndex(where: { $0.scenario.key == note.scenario }),
                let index = report.scenarios[s].steps.firstIndex(where: { $0.step.key == note.step }),
                let column = columns.first(where: { $0.scenario == s && $0.step == index }),
                let cell = report.scenarios[s].steps[index].cells[kind]?.first(where: { $0.app == note.app })
            else { continue }
            let row = Double(LabApp.all.firstIndex(of: note.app) ?? 0)
            let y = y0 + panelTitle + row * (cellHeight + rowGap)
            svg.rect(column.x - 2, y - 2, cellWidth + 4, cellHeight + 4, fill: "none", stroke: "#d62728", strokeWidth: 2, radius: 3)
            // In the rows of group two, which these scenarios leave empty.
            let textRow = y0 + panelTitle + Double(note.row) * (cellHeight + rowGap)
            let text = cell.outcome == .same ? note.same : note.new
            let textWidth = Double(text.count) * 6.2 + 8
            svg.line(column.x + cellWidth / 2, y + cellHeight + 2, column.x + cellWidth / 2, textRow, stroke: "#d62728", width: 1.5)
            svg.rect(column.x - 4, textRow, textWidth, cellHeight, fill: "#ffffff", stroke: "#d62728", radius: 3)
            svg.text(column.x, textRow + cellHeight - 3.5, text, size: 10, weight: "bold", fill: "#b01f1f")
        }
    }

    /// The colour of the identifier of rank `rank`: a fixed palette, then hues spread by the golden angle.
    static func colour(_ rank: Int) -> String {
        if rank < palette.count { return palette[rank] }
        let hue = (Double(rank) * 137.508).truncatingRemainder(dividingBy: 360)
        return "hsl(\(Int(hue)),60%,52%)"
    }

    /// `value` as SVG writes it: whole numbers bare, others to one decimal.
    static func f(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    /// `text` made safe for SVG text and attribute values.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// SVG text under construction.
    struct Picture {
        private var parts: [String]

        /// An empty picture of that size.

        init(width: Double, height: Double) {
            parts = [
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(f(width))\" height=\"\(f(height))\" "
                    + "viewBox=\"0 0 \(f(width)) \(f(height))\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">"
            ]
        }

        mutating func add(_ element: String) { parts.append(element) }

        mutating func rect(
            _ x: Double, _ y: Double, _ width: Double, _ height: Double, fill: String,
            stroke: String? = nil, strokeWidth: Double = 1, radius: Double = 0, title: String? = nil
        ) {
            var element = "<rect x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(width))\" height=\"\(f(height))\" fill=\"\(fill)\""
            if let stroke { element += " stroke=\"\(stroke)\" stroke-width=\"\(f(strokeWidth))\"" }
            if radius > 0 { element += " rx=\"\(f(radius))\"" }
            if let title {
                element += "><title>\(escape(title))</title></rect>"
            } else {
                element += "/>"
            }
            parts.append(element)
        }

        mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double) {
            parts.append(
                "<line x1=\"\(f(x1))\" y1=\"\(f(y1))\" x2=\"\(f(x2))\" y2=\"\(f(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(f(width))\"/>")
        }

        mutating func text(
            _ x: Double, _ y: Double, _ content: String, size: Double, weight: String? = nil,
            anchor: String? = nil, fill: String = "#111111"
        ) {
            var element = "<text x=\"\(f(x))\" y=\"\(f(y))\" font-size=\"\(f(size))\" fill=\"\(fill)\""
            if let weight { element += " font-weight=\"\(weight)\"" }
            if let anchor { element += " text-anchor=\"\(anchor)\"" }
            parts.append(element + ">\(escape(content))</text>")
        }

        func finished() -> String { (parts + ["</svg>"]).joined(separator: "\n") + "\n" }
    }
}
