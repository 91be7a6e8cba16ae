/// The ways an app can come by an identifier that the lab compares, one column each.
enum MechanismKind: String, Sendable, CaseIterable {
    case freshUUID = "fresh-uuid"
    case cachedUUID = "cached-uuid"
    case selection = "selection"
    case selectionAndFile = "selection-file"
    case vendorMirror = "vendor-mirror"
    case machineScoped = "machine-scoped"

    /// The column's heading.
    var title: String {
        switch self {
        case .freshUUID: "fresh UUID per call"
        case .cachedUUID: "per-app cached UUID"
        case .selection: "selection alone"
        case .selectionAndFile: "selection + file slot"
        case .vendorMirror: "+ vendor mirror"
        case .machineScoped: "app-scoped machine id"
        }
    }

    /// What the column stands for, in the words of the systems it imitates.
    var likeness: String {
        switch self {
        case .freshUUID: "what apps did once UDID was banned"
        case .cachedUUID: "a UUID in the app's preferences"
        case .selection: "shared while an app runs"
        case .selectionAndFile: "OpenUDID-style"
        case .vendorMirror: "keychain-style"
        case .machineScoped: "systemd-style, like a vendor identifier"
        }
    }

    /// How the lab makes the column, so that a reader can check it.
    var method: String {
        switch self {
        case .freshUUID:
            "a new random UUID every time the app looks"
        case .cachedUUID:
            "a random UUID the app keeps in a preferences file in its own data directory, created on first use, deleted when the app is removed"
        case .selection:
            "`openudid serve --no-files --mirror none`: the X selections alone, held by the serve process of each running app; nothing on disk, not even an opt-out"
        case .selectionAndFile:
            "`openudid serve --mirror none`: the selections plus each app's file slot and local cache"
        case .vendorMirror:
            "`openudid serve --mirror secret-service` (or `--mirror file` without a keyring): plus one copy per vendor"
        case .machineScoped:
            "HMAC-SHA256 keyed by the machine id over the app id, first 16 bytes, UUID version 4 bits (systemd's sd_id128_get_machine_app_specific construction); nothing stored"
        }
    }
}

/// Where one app runs in one scenario: the machine whose files it uses and the
/// X display and session bus it talks to.
struct Site: Sendable {
    /// The machine whose home and machine id the app uses.
    let machine: Machine
    /// The X display that shows the app.
    let display: String
    /// The session bus with the Secret Service, if there is one.
    let bus: String?

    /// The environment of the app's processes.
    var environment: [String: String] { machine.home.environment(display: display, bus: bus) }
}

/// One column of the lab, acting for every app in one scenario.
///
/// The runner calls it from one thread at a time, but from a different thread
/// for each step, so implementations guard their state.
protocol Mechanism: AnyObject, Sendable {
    /// Which column this is.
    var kind: MechanismKind { get }
    /// The app starts at `site`.
    func start(_ app: LabApp, at site: Site) throws(LabError)
    /// The app quits.
    func stop(_ app: LabApp) throws(LabError)
    /// The app, which has quit, is uninstalled with its data from `site`.
    func remove(_ app: LabApp, at site: Site) throws(LabError)
    /// The app, which has quit, opts out (or back in).
    func setOptedOut(_ optedOut: Bool, app: LabApp, at site: Site) throws(LabError)
    /// Waits until the running apps have nothing more to say about the last change.
    func settle()
    /// What the running app sees now.
    func observe(_ app: LabApp, at site: Site) throws(LabError) -> String
    /// Stops whatever still runs.
    func shutDown()
}

/// The identifier an opted-out app reports in the lab's own columns.
let optedOutUUID = "00000000-0000-0000-0000-000000000000"
