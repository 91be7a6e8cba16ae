/// The lab's result as a Markdown table, one row per step and one column per mechanism.
enum MarkdownTable {
    /// The table, its legend and notes; `picture`, if given, is the path of the SVG to show under it.
    static func render(_ report: LabReport, picture: String? = nil) -> String {
        var lines = seedTable(report)
        let headings = report.mechanisms.map { "\($0.title)<br><sub>\($0.likeness)</sub>" }
        lines.append("| Scenario | Step | " + headings.joined(separator: " | ") + " |")
        lines.append("|---|---|" + String(repeating: "---|", count: headings.count))
        for scenario in report.scenarios where scenario.scenario.key != Catalogue.seedKey {
            for (index, step) in scenario.steps.enumerated() {
                let name = index == 0 ? "**\(scenario.scenario.title)**" : ""
                let cells = report.mechanisms.map { text(Summary(step.cells[$0] ?? [])) }
                lines.append("| \(name) | \(step.step.title) | " + cells.joined(separator: " | ") + " |")
            }
        }
        lines.append("")
        lines.append(
            """
            Each cell is what the apps running after that step saw, measured from real processes and judged against \
            what each had before: **same** (for an app's first look: an identifier an app had at an earlier step), \
            **new** (for a first look: one no app had before), **zero** (the app or the user opted out, or the user \
            limited ad tracking), *unavailable* (no service gives a value). \
            *shared*: every app that looked saw one identifier; *3 ids*: they saw three different ones; \
            (photos: **new**): the apps that fared otherwise. \
            Apps: notes and photos of one vendor (com.acme), chess of another (org.indie); \
            sketch and maps (net.tinker) are group two. Every scenario starts on a fresh machine.
            """)
        lines.append("")
        for kind in report.mechanisms {
            lines.append("- **\(kind.title)** (\(kind.likeness)): \(kind.method).")
        }
        lines.append("")
        lines.append(([report.mirrorSentence] + report.notes).joined(separator: " "))
        // The run's duration stays out: this text goes into tracked files (docs/lab, the
        // README), which must not change from one run to the next with the same outcome.
        let steps = report.scenarios.reduce(0) { $0 + $1.steps.count }
        lines.append("")
        lines.append(
            "\(report.scenarios.count) scenarios, \(steps) steps, \(report.mechanisms.count) columns, "
                + "\(report.processCount) `openudid` processes.")
        if report.quick {
            lines.append("")
            lines.append("This was a `--quick` run: only some scenarios ran.")
        }
        if let picture {
            lines.append("")
            lines.append("![Timeline: steps across, apps down, one colour per identifier](\(picture))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The four events of the classic comparison, one row per column, or nothing
    /// when that scenario did not run.
    static func seedTable(_ report: LabReport) -> [String] {
        guard let seed = report.scenarios.first(where: { $0.scenario.key == Catalogue.seedKey }) else { return [] }
        let apps = LabApp.all.filter { app in seed.steps.contains { $0.cells.values.contains { $0.contains { $0.app == app } } } }
        var lines = [
            "**\(seed.scenario.title)**: \(seed.scenario.purpose) (\(apps.map(\.name).joined(separator: ", ")), alone on a fresh machine).",
            "",
            "| | " + seed.steps.map(\.step.title).joined(separator: " | ") + " |",
            "|---|" + String(repeating: "---|", count: seed.steps.count)
        ]
        for kind in report.mechanisms {
            let cells = seed.steps.map { text(Summary($0.cells[kind] ?? [])) }
            lines.append("| \(kind.title) <sub>\(kind.likeness)</sub> | " + cells.joined(separator: " | ") + " |")
        }
        lines.append("")
        return lines
    }

    /// One cell: `same`, `**new** (photos: same) · shared`, and so on.
    static func text(_ summary: Summary?) -> String {
        guard let summary else { return "—" }
        var text = word(summary.main)
        if !summary.exceptions.isEmpty {
            let parts = summary.exceptions.map { group in
                group.apps.map(\.name).joined(separator: ", ") + ": " + word(group.outcome)
            }
            text += " (" + parts.joined(separator: "; ") + ")"
        }
        if let distinct = summary.distinct {
            text += distinct == 1 ? " · *shared*" : " · *\(distinct) ids*"
        }
        return text
    }

    private static func word(_ outcome: Outcome) -> String {
        switch outcome {
        case .same: "same"
        case .new: "**new**"
        case .zero: "zero"
        case .unavailable: "*unavailable*"
        }
    }
}
