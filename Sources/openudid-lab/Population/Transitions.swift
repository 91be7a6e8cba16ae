import Foundation

/// An event of a user's life that the population draws, in the situation that decides what it does.
///
/// Each is one step of the lab's scenarios "A desktop's events" and "A sandboxed
/// desktop's events" (`Catalogue.life`): the step, the app whose look it judges
/// (the app the event happens to), and an app that only looks on (nil where the
/// step leaves none running).
enum Situation: String, CaseIterable, Codable, Sendable {
    case firstRun = "first-run"
    case installBesideSameVendor = "install-beside-same-vendor"
    case installBesideOtherVendor = "install-beside-other-vendor"
    case restart
    case relaunch
    case reboot
    case reinstallBesideSameVendor = "reinstall-beside-same-vendor"
    case reinstallBesideOtherVendor = "reinstall-beside-other-vendor"
    case reset
    case keyringLost = "keyring-lost"
    case reinstallAlone = "reinstall-alone"
    case installAloneNewVendor = "install-alone-new-vendor"
    case installAloneSameVendor = "install-alone-same-vendor"
    case keyringLostAlone = "keyring-lost-alone"
    case optOut = "opt-out"

    /// The lab's step that measures it, the app it happens to, and an app that looks on.
    var cell: (step: String, actor: LabApp, bystander: LabApp?) {
        switch self {
        case .firstRun: ("first-run", .notes, nil)
        case .installBesideSameVendor: ("install", .photos, .notes)
        case .installBesideOtherVendor: ("install", .chess, .notes)
        case .restart: ("restart", .notes, .photos)
        case .relaunch: ("relaunch", .notes, .photos)
        case .reboot: ("reboot", .notes, .photos)
        case .reinstallBesideSameVendor: ("reinstall-same-vendor", .photos, .notes)
        case .reinstallBesideOtherVendor: ("reinstall-other-vendor", .chess, .notes)
        case .reset: ("reset", .notes, .photos)
        case .keyringLost: ("keyring-lost", .notes, .photos)
        case .reinstallAlone: ("alone-same-app", .notes, nil)
        case .installAloneNewVendor: ("alone-new-vendor", .sketch, nil)
        case .installAloneSameVendor: ("alone-same-vendor", .maps, nil)
        case .keyringLostAlone: ("keyring-lost-alone", .sketch, nil)
        case .optOut: ("opt-out", .sketch, nil)
        }
    }

    /// Whether the app it happens to looks for the first time since it was installed,
    /// so that its identifier comes from somewhere else than its own last look.
    var isInstall: Bool {
        switch self {
        case .firstRun, .installBesideSameVendor, .installBesideOtherVendor, .reinstallBesideSameVendor,
            .reinstallBesideOtherVendor, .reinstallAlone, .installAloneNewVendor, .installAloneSameVendor, .keyringLostAlone:
            true
        case .restart, .relaunch, .reboot, .reset, .keyringLost, .optOut: false
        }
    }
}

/// Whether the user's apps are sandboxed (without the X11 socket) or not: each measured by a scenario of its own.
enum Environment: String, CaseIterable, Codable, Sendable {
    case plain
    case sandboxed

    /// The lab scenario that measures the events in this environment.
    var scenario: String { self == .plain ? Catalogue.lifeKeys.plain : Catalogue.lifeKeys.sandboxed }
}

/// What an event gives an app that looks after it, read from the identifiers the lab recorded.
enum Effect: String, Codable, Sendable, CaseIterable {
    /// What the app saw the last time it looked.
    case keep
    /// A new identifier of its own.
    case fresh
    /// A new identifier, the same for every app that gets a new one in this event.
    case freshShared = "fresh-shared"
    /// Zeros: the user opted out (from then on, every app of the user reads zeros).
    case zero
    /// No value at all.
    case unavailable
    /// What an installed app of its vendor sees.
    case vendorPeer = "vendor-peer"
    /// What another installed app sees.
    case peer
    /// What an app of its vendor last saw, installed or not.
    case vendorMemory = "vendor-memory"
    /// What this very app saw before it was removed.
    case own
    /// What any app last saw.
    case anyMemory = "any-memory"

    /// A few words for the tables.
    var words: String {
        switch self {
        case .keep: "same"
        case .fresh: "**new**"
        case .freshShared: "**new**, shared"
        case .zero: "zero"
        case .unavailable: "*none*"
        case .vendorPeer: "its vendor's app's"
        case .peer: "the other apps'"
        case .vendorMemory: "its vendor's last"
        case .own: "its own earlier"
        case .anyMemory: "the last one seen"
        }
    }
}

/// What each event does to each scheme, for the app it happens to and for the apps
/// that look on, in both environments: measured by the lab, never written by hand.
struct TransitionTable: Codable, Equatable, Sendable {
    /// The effects on the app an event happens to and on the others.
    struct Pair: Codable, Equatable, Sendable {
        let actor: Effect
        let bystander: Effect
    }

    /// The lab's cell each situation was read from, so that a reader (or a test) can look it up in `lab.json`.
    struct Cell: Codable, Equatable, Sendable {
        /// The step's key, in each environment's scenario.
        let step: String
        /// The app the event happens to, and the one that looks on (nil where none runs).
        let actor: String
        let bystander: String?
    }

    /// Where the lab's vendor mirror lived when it measured these (`secret-service` or `file`).
    let mirrorStore: String
    /// The scenario of each environment, by raw value.
    let scenarios: [String: String]
    /// The cell of each situation, by raw value.
    let cells: [String: Cell]
    /// `effects[environment][situation][scheme]`, by raw values, so that the JSON reads plainly.
    let effects: [String: [String: [String: Pair]]]

    /// The effects of `situation` on `scheme` in `environment`.
    func pair(_ environment: Environment, _ situation: Situation, _ scheme: MechanismKind) -> Pair {
        // `measure` fills every entry, and `decode` checks that a file does.
        effects[environment.rawValue]![situation.rawValue]![scheme.rawValue]!
    }

    /// The table as JSON with sorted keys: the same bytes for the same measurements.
    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return ((try? encoder.encode(self)) ?? Data()) + Data("\n".utf8)
    }

    /// Reads a table that `encoded()` wrote, checking that it has every entry.
    static func decode(_ data: Data, from path: String) throws(LabError) -> TransitionTable {
        guard let table = try? JSONDecoder().decode(TransitionTable.self, from: data) else {
            throw LabError("\(path) is not a table of transitions; scripts/lab writes one (docs/lab/transitions.json)")
        }
        for environment in Environment.allCases {
            for situation in Situation.allCases {
                for scheme in MechanismKind.allCases
                where table.effects[environment.rawValue]?[situation.rawValue]?[scheme.rawValue] == nil {
                    throw LabError(
                        "\(path) has no transition for \(situation.rawValue) / \(scheme.rawValue) (\(environment.rawValue)); "
                            + "run scripts/lab again to measure them")
                }
            }
        }
        return table
    }

    /// Reads every transition from the lab's JSON report (`lab.json`, or what `openudid-lab --json` prints).
    ///
    /// - Throws: `LabError` when the report lacks one of the steps (a run without the life scenarios).
    static func measure(fromLabJSON data: Data) throws(LabError) -> TransitionTable {
        guard let report = try? JSONDecoder().decode(LabJSON.self, from: data) else {
            throw LabError("the lab's JSON report cannot be read")
        }
        let vendors = Dictionary(report.apps.map { ($0.id, $0.vendor) }, uniquingKeysWith: { first, _ in first })
        var effects: [String: [String: [String: Pair]]] = [:]
        for environment in Environment.allCases {
            guard let scenario = report.scenarios.first(where: { $0.key == environment.scenario }) else {
                throw LabError("the lab's report has no scenario \(environment.scenario), which measures the population's events")
            }
            for situation in Situation.allCases {
                let cell = situation.cell
                guard let index = scenario.steps.firstIndex(where: { $0.key == cell.step }) else {
                    throw LabError("the lab's scenario \(scenario.key) has no step \(cell.step)")
                }
                for scheme in MechanismKind.allCases {
                    let history = History(scenario: scenario, step: index, column: scheme.rawValue, vendors: vendors)
                    let actor = try history.effect(on: cell.actor.id, install: situation.isInstall)
                    let bystander = try cell.bystander.map { app throws(LabError) in try history.effect(on: app.id, install: false) }
                    effects[environment.rawValue, default: [:]][situation.rawValue, default: [:]][scheme.rawValue] =
                        Pair(actor: actor, bystander: bystander ?? actor)
                }
            }
        }
        return TransitionTable(
            mirrorStore: report.mirrorStore,
            scenarios: Dictionary(uniqueKeysWithValues: Environment.allCases.map { ($0.rawValue, $0.scenario) }),
            cells: Dictionary(
                uniqueKeysWithValues: Situation.allCases.map { situation in
                    let cell = situation.cell
                    return (situation.rawValue, Cell(step: cell.step, actor: cell.actor.id, bystander: cell.bystander?.id))
                }),
            effects: effects)
    }
}

/// What the lab's report says, as far as the transitions need it.
private struct LabJSON: Decodable {
    struct App: Decodable {
        let id: String
        let vendor: String
    }
    struct Scenario: Decodable {
        let key: String
        let steps: [Step]
    }
    struct Step: Decodable {
        let key: String
        let columns: [String: Column]
    }
    struct Column: Decodable {
        let apps: [String: Look]
    }
    struct Look: Decodable {
        let identifier: String
        let outcome: String
    }

    let mirrorStore: String
    let apps: [App]
    let scenarios: [Scenario]
}

/// One column of one scenario up to one step: what each app saw there and before.
private struct History {
    let vendors: [String: String]
    /// What each app saw at the step.
    let now: [String: LabJSON.Look]
    /// What each app saw at the step before.
    let before: [String: LabJSON.Look]
    /// The last identifier each app saw before the step, zeros left out.
    let last: [String: String]
    let context: String

    init(scenario: LabJSON.Scenario, step: Int, column: String, vendors: [String: String]) {
        self.vendors = vendors
        now = scenario.steps[step].columns[column]?.apps ?? [:]
        before = step > 0 ? scenario.steps[step - 1].columns[column]?.apps ?? [:] : [:]
        var last: [String: String] = [:]
        for earlier in scenario.steps[..<step] {
            for (app, look) in earlier.columns[column]?.apps ?? [:] where look.outcome == "same" || look.outcome == "new" {
                last[app] = look.identifier
            }
        }
        self.last = last
        context = "\(scenario.key) / \(scenario.steps[step].key) / \(column)"
    }

    /// Where the identifier `app` saw came from. For an app that looks for the first
    /// time since it was installed, the first of these that held it: an app of its
    /// vendor still running, another app still running, an app of its vendor
    /// before, itself before, any app before; else it is new.
    func effect(on app: String, install: Bool) throws(LabError) -> Effect {
        guard let look = now[app] else { throw LabError("\(context): \(app) did not look") }
        switch look.outcome {
        case "unavailable": return .unavailable
        case "zero": return .zero
        default: break
        }
        let value = look.identifier
        let vendor = vendors[app]
        if install {
            let running = before.filter { $0.key != app && now[$0.key] != nil && $0.value.identifier == value }.keys
            if running.contains(where: { vendors[$0] == vendor }) { return .vendorPeer }
            if !running.isEmpty { return .peer }
            if last.contains(where: { $0.key != app && vendors[$0.key] == vendor && $0.value == value }) { return .vendorMemory }
            if last[app] == value { return .own }
            if last.values.contains(value) { return .anyMemory }
            return .fresh
        }
        if last[app] == value { return .keep }
        let sharers = now.filter { $0.key != app && $0.value.identifier == value && last[$0.key] != value }
        return sharers.isEmpty ? .fresh : .freshShared
    }
}
