/// How what an app saw compares with what came before.
enum Outcome: String, Sendable {
    /// The identifier the app had the last time it looked (for an app looking for
    /// the first time: one that an app had at an earlier step).
    case same
    /// Another identifier than the app had (for an app looking for the first time:
    /// one that no app had before).
    case new
    /// All zeros: the app opted out, or the user limited tracking.
    case zero
    /// No value to be had: the service that would give one is not there.
    case unavailable
}

/// One app's look at one step, judged.
struct Cell: Sendable {
    /// The app that looked.
    let app: LabApp
    /// What it saw.
    let identifier: String
    /// Where it ran.
    let place: Place
    /// How that compares with before.
    let outcome: Outcome
    /// Whether the app had another identifier the last time it looked (not counting zeros).
    let changed: Bool
    /// The identifier's rank by first appearance within its scenario and column
    /// (0 for the first one seen); nil for zeros and unavailable values. Pictures colour by it, so a
    /// run with other identifiers but the same story draws the same picture.
    let colour: Int?
}

/// One step, judged column by column.
struct StepResult: Sendable {
    /// The step.
    let step: Step
    /// For each column, the apps that looked, in table order.
    let cells: [MechanismKind: [Cell]]
}

/// One scenario, judged.
struct ScenarioResult: Sendable {
    /// The scenario.
    let scenario: Scenario
    /// Its steps, in order.
    let steps: [StepResult]
}

/// Judges every look of a scenario against what came before it, column by column.
///
/// Only identifiers are compared; nothing about the expected story is assumed.
func judge(_ record: ScenarioRecord) -> ScenarioResult {
    var cellsPerStep = Array(repeating: [MechanismKind: [Cell]](), count: record.steps.count)
    for kind in MechanismKind.allCases {
        var last: [LabApp: String] = [:]
        var seenBefore: Set<String> = []
        var colours: [String: Int] = [:]
        for (index, step) in record.steps.enumerated() {
            var seenNow: Set<String> = []
            var cells: [Cell] = []
            for sighting in step.sightings[kind] ?? [] {
                let value = sighting.identifier
                let outcome: Outcome
                if value == unavailableIdentifier {
                    outcome = .unavailable
                } else if isZero(value) {
                    outcome = .zero
                } else if let previous = last[sighting.app] {
                    outcome = previous == value ? .same : .new
                } else {
                    outcome = seenBefore.contains(value) ? .same : .new
                }
                var colour: Int?
                let changed = outcome == .new && last[sighting.app] != nil
                if outcome != .zero && outcome != .unavailable {
                    last[sighting.app] = value
                    seenNow.insert(value)
                    if colours[value] == nil { colours[value] = colours.count }
                    colour = colours[value]
                }
                cells.append(
                    Cell(app: sighting.app, identifier: value, place: sighting.place, outcome: outcome, changed: changed, colour: colour))
            }
            seenBefore.formUnion(seenNow)
            cellsPerStep[index][kind] = cells
        }
    }
    return ScenarioResult(
        scenario: record.scenario,
        steps: zip(record.steps, cellsPerStep).map { StepResult(step: $0.step, cells: $1) })
}

/// Whether `identifier` is the all-zero value of an opted-out app.
func isZero(_ identifier: String) -> Bool {
    !identifier.isEmpty && identifier.allSatisfy { $0 == "0" || $0 == "-" }
}

/// A step's cells of one column, told in a few words.
struct Summary: Sendable {
    /// What most apps saw (ties go to the app listed first).
    let main: Outcome
    /// The apps that fared otherwise, grouped by outcome, in table order.
    let exceptions: [(outcome: Outcome, apps: [LabApp])]
    /// How many different identifiers the apps that did not opt out saw, when two or more looked.
    let distinct: Int?

    /// Summarises one column's cells of one step; nil when no app looked.
    init?(_ cells: [Cell]) {
        guard let first = cells.first else { return nil }
        var counts: [Outcome: Int] = [:]
        for cell in cells { counts[cell.outcome, default: 0] += 1 }
        let best = counts.values.max() ?? 0
        main = cells.first { counts[$0.outcome] == best }?.outcome ?? first.outcome
        var groups: [(outcome: Outcome, apps: [LabApp])] = []
        for cell in cells where cell.outcome != main {
            if let index = groups.firstIndex(where: { $0.outcome == cell.outcome }) {
                groups[index].apps.append(cell.app)
            } else {
                groups.append((cell.outcome, [cell.app]))
            }
        }
        exceptions = groups
        let values = cells.filter { $0.outcome != .zero && $0.outcome != .unavailable }.map(\.identifier)
        distinct = values.count >= 2 ? Set(values).count : nil
    }
}
