import Foundation

/// What the lab prints on the terminal: a few short lines that say what ran, what
/// broke and where the files are. The tables, wide as they are, live in the files.
enum TerminalSummary {
    /// The widest line it prints.
    static let width = 100

    /// The columns of the shared approaches, whose breaks the summary names.
    static let sharedColumns: [MechanismKind] = [.selection, .selectionAndFile, .vendorMirror]

    /// The summary of `report`, and of the population run after it, whose files were written into `directory`.
    static func render(_ report: LabReport, population: PopulationResult? = nil, directory: String) -> String {
        let steps = report.scenarios.reduce(0) { $0 + $1.steps.count }
        let took = report.seconds.map { " in " + String(format: "%.1f s", $0) } ?? ""
        var lines = [
            "\(report.scenarios.count) scenarios, \(steps) steps, \(report.mechanisms.count) columns, "
                + "\(report.processCount) openudid processes\(took)" + (report.quick ? " (--quick: some scenarios)" : ""),
            "What broke: the scenarios in which, after the first step, an app saw another identifier",
            "than it or any app had before (other than one the user asked for), or the apps saw different ones:"
        ]
        for kind in sharedColumns {
            // The life scenarios measure every event for the population: each breaks something by design.
            let stories = report.scenarios.filter { ![Catalogue.lifeKeys.plain, Catalogue.lifeKeys.sandboxed].contains($0.scenario.key) }
            let broke = stories.filter { breaks($0, in: kind) }.map(\.scenario.title)
            lines += wrapped(
                "\(kind.title) (\(kind.likeness)): " + (broke.isEmpty ? "nothing; it held throughout" : broke.joined(separator: ", ")),
                indent: "  ", continuation: "      ")
        }
        lines += [
            "Every column, step by step, is in the files:",
            "  the tables:       \(directory)/lab.md",
            "  the timeline:     \(directory)/lab.svg",
            "  every identifier: \(directory)/lab.json"
        ]
        if let population {
            let day = population.parameters.days
            let shares = sharedColumns.dropFirst().map {
                "\($0.title) \(PopulationMarkdown.percent(population.stabilityOfInstalled($0, atDay: day)))"
            }
            lines.append("  the population:   \(directory)/population.md")
            lines += wrapped(
                "Of \(population.parameters.users) simulated users, \(PopulationMarkdown.percent(population.installed[day])) "
                    + "still have their app on day \(day); of those, on the day-0 identifier: " + shares.joined(separator: ", "),
                indent: "", continuation: "  ")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether `scenario` lost or split the identifier of `kind` after its first step.
    /// A new identifier after the user reset OpenUDID's is what the user asked for.
    static func breaks(_ scenario: ScenarioResult, in kind: MechanismKind) -> Bool {
        scenario.steps.dropFirst().contains { step in
            let cells = step.cells[kind] ?? []
            let asked = step.step.actions.contains { $0.resetsOpenUDID }
            return (!asked && cells.contains { $0.outcome == .new }) || (Summary(cells)?.distinct ?? 1) > 1
        }
    }

    /// `text` broken between words into lines of at most `width` characters, the
    /// first led by `indent`, the others by `continuation`.
    static func wrapped(_ text: String, indent: String, continuation: String) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let lead = lines.isEmpty ? indent : continuation
            if !line.isEmpty, lead.count + line.count + 1 + word.count > width {
                lines.append(lead + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        return lines + [(lines.isEmpty ? indent : continuation) + line]
    }
}
