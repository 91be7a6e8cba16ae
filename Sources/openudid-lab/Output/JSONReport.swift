import Foundation

/// The lab's result as JSON, for scripts and tests.
///
/// `scenarios[].steps[].columns[<mechanism key>]` holds the summary and, per app
/// that looked, its identifier and outcome; `scenarios[].tables[<mechanism key>]`
/// is the same as a grid, apps down and steps across, with `—` for an app
/// that was not running.
enum JSONReport {
    /// The report as a JSON object.
    static func object(_ report: LabReport) -> [String: Any] {
        [
            "version": 1,
            "quick": report.quick,
            "mirrorStore": report.mirrorStore,
            "notes": report.notes,
            "outcomes": [
                "same": "the identifier the app had the last time it looked (first look: one an app had at an earlier step)",
                "new": "another identifier (first look: one no app had before)",
                "zero": "all zeros: the app or the user opted out, or the user limited ad tracking",
                "unavailable": "no value: the service that would give one is not there"
            ],
            "seconds": report.seconds.map { NSNumber(value: ($0 * 10).rounded() / 10) } ?? NSNull(),
            "processes": report.processCount,
            "seedScenario": Catalogue.seedKey,
            "mechanisms": report.mechanisms.map { kind in
                ["key": kind.rawValue, "title": kind.title, "likeness": kind.likeness, "method": kind.method]
            },
            "apps": LabApp.all.map { ["id": $0.id, "name": $0.name, "vendor": $0.vendor] },
            "scenarios": report.scenarios.map(scenario)
        ]
    }

    /// The report as JSON text with sorted keys, ending in a newline.
    static func data(_ report: LabReport) -> Data {
        let data = try? JSONSerialization.data(withJSONObject: object(report), options: [.prettyPrinted, .sortedKeys])
        return (data ?? Data("{}".utf8)) + Data("\n".utf8)
    }

    private static func scenario(_ result: ScenarioResult) -> [String: Any] {
        var tables: [String: Any] = [:]
        for kind in MechanismKind.allCases {
            let apps = LabApp.all.filter { app in result.steps.contains { $0.cells[kind]?.contains { $0.app == app } ?? false } }
            tables[kind.rawValue] =
                [
                    "steps": result.steps.map(\.step.key),
                    "rows": apps.map { app -> [String: Any] in
                        [
                            "app": app.id,
                            "outcomes": result.steps.map { step in
                                step.cells[kind]?.first { $0.app == app }?.outcome.rawValue ?? "—"
                            }
                        ]
                    }
                ] as [String: Any]
        }
        return [
            "key": result.scenario.key,
            "title": result.scenario.title,
            "purpose": result.scenario.purpose,
            "steps": result.steps.map(step),
            "tables": tables
        ]
    }

    private static func step(_ result: StepResult) -> [String: Any] {
        var columns: [String: Any] = [:]
        for kind in MechanismKind.allCases {
            let cells = result.cells[kind] ?? []
            var apps: [String: Any] = [:]
            for cell in cells {
                apps[cell.app.id] =
                    [
                        "identifier": cell.identifier,
                        "outcome": cell.outcome.rawValue,
                        "place": cell.place.rawValue,
                        "colour": cell.colour.map { NSNumber(value: $0) } ?? NSNull()
                    ] as [String: Any]
            }
            let summary = Summary(cells)
            columns[kind.rawValue] =
                [
                    "summary": MarkdownTable.text(summary),
                    "outcome": summary?.main.rawValue ?? "—",
                    "distinctIdentifiers": summary?.distinct.map { NSNumber(value: $0) } ?? NSNull(),
                    "apps": apps
                ] as [String: Any]
        }
        return [
            "key": result.step.key,
            "title": result.step.title,
            "actions": result.step.actions.map(\.description),
            "columns": columns
        ]
    }
}
