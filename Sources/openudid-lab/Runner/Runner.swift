import Foundation
import Synchronization

/// What every running app saw at the end of one step, column by column.
struct StepRecord: Sendable {
    /// The step that was run.
    let step: Step
    /// For each column, the running apps in table order with what each saw and where it ran.
    let sightings: [MechanismKind: [Sighting]]
}

/// What one app saw.
struct Sighting: Sendable {
    /// The app that looked.
    let app: LabApp
    /// What it saw, exactly as the process printed or the app's code computed it.
    let identifier: String
    /// Where the app was running.
    let place: Place
}

/// One scenario's steps as they were run.
struct ScenarioRecord: Sendable {
    /// The scenario that was run.
    let scenario: Scenario
    /// Its steps, in order.
    let steps: [StepRecord]
}

/// The machinery a run shares across scenarios: the X server, the keyring, the tool.
struct Equipment: Sendable {
    /// The private tree that holds every machine's files.
    let root: PrivateRoot
    /// This machine's X server, restarted by reboots.
    let xServer: XServer
    /// The Secret Service, when one could start.
    let keyring: PrivateKeyring?
    /// The path of the `openudid` tool.
    let tool: String

    /// The vendor-mirror column's `--mirror` choice.
    var mirrorChoice: String { keyring == nil ? "file" : "secret-service" }
}

/// Runs scenarios: tells each step to every column alike, the columns side by
/// side on threads of their own, then asks every running app what it sees.
final class Runner: @unchecked Sendable {
    // Touched only by the thread that calls `run`; the columns get immutable copies.
    private let equipment: Equipment
    private var secondServer: XServer?
    /// How many processes the columns started, for the closing line.
    private(set) var processCount = 0
    /// What happened that the reader should know, such as a display number that changed.
    private(set) var notes: [String] = []

    /// A runner that uses `equipment` for every scenario.
    init(equipment: Equipment) {
        self.equipment = equipment
    }

    /// Stops what the runner started for itself.
    func finish() {
        secondServer?.stop()
        secondServer = nil
    }

    /// Runs `scenario` on fresh machines and records what every app saw at every step.
    func run(_ scenario: Scenario) throws(LabError) -> ScenarioRecord {
        let directory = try equipment.root.directory("scenarios/\(scenario.key)")
        let here = try Machine(name: "this machine", directory: directory + "/here")
        let apart = try Machine(name: "another machine", directory: directory + "/apart")
        try here.installHardware()
        try apart.installHardware()
        // Each column keeps its keyring items under a namespace of its own: start from none.
        let namespaces = MechanismKind.allCases.map { "\(scenario.key)-\($0.rawValue)" }
        try equipment.keyring?.clear(vendors: LabApp.vendors, namespaces: namespaces)

        var columns: [any Mechanism] = []
        for kind in MechanismKind.allCases {
            let namespace = "\(scenario.key)-\(kind.rawValue)"
            switch kind {
            case .freshUUID, .cachedUUID, .machineScoped:
                columns.append(LocalMechanism(kind, namespace: namespace))
            case .selection, .selectionAndFile, .vendorMirror:
                columns.append(ToolMechanism(kind, tool: equipment.tool, mirror: equipment.mirrorChoice, namespace: namespace))
            case .hardwareID, .macAddress, .randomisedMAC, .advertising, .vendorID, .pushToken:
                columns.append(try SystemMechanism(kind, namespace: namespace))
            }
        }
        defer { for column in columns { column.shutDown() } }
        // Each app started, removed or opted out costs one tool process per such column.
        let toolColumns = columns.filter { $0 is ToolMechanism }.count

        // Where each installed app lives, and which of them run.
        var installed: [LabApp: Place] = [:]
        var running: Set<LabApp> = []

        func site(_ place: Place, for app: LabApp) throws(LabError) -> Site {
            let bus = equipment.keyring?.address
            switch place {
            case .here: return Site(machine: here, display: equipment.xServer.display, bus: bus)
            case .visiting: return Site(machine: apart, display: equipment.xServer.display, bus: bus)
            case .apart:
                if secondServer == nil { secondServer = try XServer() }
                return Site(machine: apart, display: secondServer!.display, bus: bus)
            case .sandboxed, .sandboxedWithoutX11:
                let sandbox = Site(
                    machine: here, display: place.hasDisplay ? equipment.xServer.display : nil, bus: bus, sandbox: app.id)
                try sandbox.createDirectories()
                return sandbox
            case .noXServer: return Site(machine: here, display: nil, bus: bus)
            }
        }

        /// Reboots this machine: every app must have quit; the X server comes back, the wireless address is drawn again.
        func reboot(_ context: String) throws(LabError) {
            if let note = try equipment.xServer.restart() { notes.append("\(context): \(note).") }
            try here.boot()
        }

        var records: [StepRecord] = []
        for step in scenario.steps {
            for action in step.actions {
                let context = "\(scenario.title) / \(step.title) / \(action.description)"
                switch action {
                case .start(let apps, let place):
                    var sites: [LabApp: Site] = [:]
                    for app in apps { sites[app] = try site(place, for: app) }
                    let fixed = sites
                    try everyColumn(columns, context) { column throws(LabError) in
                        for app in apps { try column.start(app, at: fixed[app]!) }
                    }
                    processCount += apps.count * toolColumns
                    for app in apps {
                        installed[app] = place
                        running.insert(app)
                    }
                case .stop(let apps):
                    try everyColumn(columns, context) { column throws(LabError) in
                        for app in apps { try column.stop(app) }
                    }
                    running.subtract(apps)
                case .remove(let apps):
                    var sites: [LabApp: Site] = [:]
                    for app in apps { sites[app] = try site(installed[app] ?? .here, for: app) }
                    let fixed = sites
                    try everyColumn(columns, context) { column throws(LabError) in
                        for app in apps {
                            try column.stop(app)
                            try column.remove(app, at: fixed[app]!)
                        }
                    }
                    // A sandboxed app goes with its whole sandbox, every column's files in it.
                    for site in fixed.values { site.removeSandbox() }
                    processCount += apps.count * toolColumns
                    running.subtract(apps)
                    for app in apps { installed[app] = nil }
                case .optOut(let app, let optedOut):
                    guard !running.contains(app) else {
                        throw LabError("\(context): \(app.name) must quit before it changes its choice")
                    }
                    let location = try site(installed[app] ?? .here, for: app)
                    try everyColumn(columns, context) { column throws(LabError) in
                        try column.setOptedOut(optedOut, app: app, at: location)
                    }
                    processCount += toolColumns
                case .restartXServer:
                    guard running.isEmpty else { throw LabError("\(context): every app must quit before a reboot") }
                    try reboot(context)
                case .resetDevice:
                    guard running.isEmpty else { throw LabError("\(context): every app must quit before a reset") }
                    try here.home.wipe()
                    try equipment.keyring?.clear(vendors: LabApp.vendors, namespaces: namespaces)
                    here.eraseSettings()
                    try here.newMachineID()
                    try reboot(context)
                    installed = installed.filter { !$0.value.isThisMachine }
                case .eraseContent:
                    guard running.isEmpty else { throw LabError("\(context): every app must quit before a reset") }
                    try here.home.wipe()
                    try equipment.keyring?.clear(vendors: LabApp.vendors, namespaces: namespaces)
                    here.eraseSettings()
                    try reboot(context)
                    installed = installed.filter { !$0.value.isThisMachine }
                case .loseKeyring:
                    try equipment.keyring?.clear(vendors: LabApp.vendors, namespaces: namespaces)
                    try here.home.removeFileMirrors()
                case .resetAdvertisingID:
                    here.resetAdvertisingIdentifier()
                case .limitAdTracking(let limited):
                    try here.limitAdTracking(limited)
                case .resetOpenUDID:
                    let location = try site(.here, for: LabApp.notes)
                    try everyColumn(columns, context) { column throws(LabError) in try column.resetByUser(at: location) }
                    processCount += toolColumns
                case .optOutEverywhere(let optedOut):
                    guard running.isEmpty else {
                        throw LabError("\(context): every app must quit before the user changes the choice for all of them")
                    }
                    // One marker in the user's config directory, never namespaced: every column's apps read it.
                    let arguments = ["opt-out", "--all"] + (optedOut ? [] : ["--undo"])
                    let location = try site(.here, for: LabApp.notes)
                    let result = try runCommand(equipment.tool, arguments, environment: location.environment)
                    guard result.status == 0 else {
                        throw LabError(
                            "\(context): openudid \(arguments.joined(separator: " ")) failed (status \(result.status)): \(result.standardError)"
                        )
                    }
                    processCount += 1
                }
            }
            try everyColumn(columns, "\(scenario.title) / \(step.title)") { column throws(LabError) in column.settle() }

            let lookers = LabApp.all.filter(running.contains)
            var lookerSites: [LabApp: Site] = [:]
            for app in lookers { lookerSites[app] = try site(installed[app] ?? .here, for: app) }
            let fixedSites = lookerSites
            var lookerPlaces: [LabApp: Place] = [:]
            for app in lookers { lookerPlaces[app] = installed[app] ?? .here }
            let places = lookerPlaces
            let seen = Mutex<[MechanismKind: [Sighting]]>([:])
            try everyColumn(columns, "\(scenario.title) / \(step.title)") { column throws(LabError) in
                var sightings: [Sighting] = []
                for app in lookers {
                    let identifier = try column.observe(app, at: fixedSites[app]!)
                    sightings.append(Sighting(app: app, identifier: identifier, place: places[app]!))
                }
                seen.withLock { $0[column.kind] = sightings }
            }
            records.append(StepRecord(step: step, sightings: seen.withLock { $0 }))
        }
        return ScenarioRecord(scenario: scenario, steps: records)
    }

    /// Runs `body` for every column at once, one thread each, and waits for all of them.
    ///
    /// Plain threads rather than Dispatch workers: a child inherits the signal mask
    /// of the thread that starts it, and Dispatch's workers block signals.
    private func everyColumn(
        _ columns: [any Mechanism], _ context: String,
        _ body: @escaping @Sendable (any Mechanism) throws(LabError) -> Void
    ) throws(LabError) {
        let failures = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for column in columns {
            let thread = Thread {
                do throws(LabError) {
                    try body(column)
                } catch {
                    failures.withLock { $0.append("\(column.kind.title): \(error.description)") }
                }
                done.signal()
            }
            thread.start()
        }
        for _ in columns { done.wait() }
        let found = failures.withLock { $0 }
        if !found.isEmpty {
            throw LabError("\(context): " + found.joined(separator: "; "))
        }
    }
}
