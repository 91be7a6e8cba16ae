import Foundation

/// The ways an app can come by an identifier that the lab compares, one column each.
///
/// They run in the order of the story they retell: the hardware identifier and
/// the MAC address that iOS took away, what apps did next, what the system
/// offered instead, and the shared approaches of this project.
enum MechanismKind: String, Sendable, CaseIterable {
    case hardwareID = "hardware-id"
    case macAddress = "mac-address"
    case randomisedMAC = "mac-randomised"
    case freshUUID = "fresh-uuid"
    case cachedUUID = "cached-uuid"
    case advertising = "advertising-id"
    case vendorID = "vendor-id"
    case pushToken = "push-token"
    case selection = "selection"
    case selectionAndFile = "selection-file"
    case vendorMirror = "vendor-mirror"
    case machineScoped = "machine-scoped"

    /// The column's heading.
    var title: String {
        switch self {
        case .hardwareID: "hardware id"
        case .macAddress: "MAC address"
        case .randomisedMAC: "MAC, randomised"
        case .freshUUID: "fresh UUID per call"
        case .cachedUUID: "per-app cached UUID"
        case .advertising: "advertising id"
        case .vendorID: "per-vendor id"
        case .pushToken: "push-token hash"
        case .selection: "selection alone"
        case .selectionAndFile: "selection + file slot"
        case .vendorMirror: "+ vendor mirror"
        case .machineScoped: "app-scoped machine id"
        }
    }

    /// What the column stands for, in the words of the systems it imitates.
    var likeness: String {
        switch self {
        case .hardwareID: "UDID-style, the banned one"
        case .macAddress: "the UDID's stand-in until iOS 7"
        case .randomisedMAC: "iOS 7 on: no longer the device's"
        case .freshUUID: "what apps did once UDID was banned"
        case .cachedUUID: "a UUID in the app's preferences"
        case .advertising: "IDFA-style, held by the system"
        case .vendorID: "IDFV-style, held by the system"
        case .pushToken: "needs a network service"
        case .selection: "shared while an app runs"
        case .selectionAndFile: "OpenUDID-style"
        case .vendorMirror: "keychain-style"
        case .machineScoped: "systemd-style, like a vendor identifier"
        }
    }

    /// How the lab makes the column, so that a reader can check it.
    var method: String {
        switch self {
        case .hardwareID:
            "the machine id read raw from the machine's `/etc/machine-id` (the lab's private copy): one value for every app; no user setting changes it; a new one only when the system is installed afresh"
        case .macAddress:
            "the address of the first non-loopback interface whose address is permanent (`addr_assign_type` 0), read from the machine's `/sys/class/net` (the lab's private copy, with a made-up burned-in address)"
        case .randomisedMAC:
            "the same reading for an interface whose address the system draws afresh at every boot (`addr_assign_type` 1, as NetworkManager's `cloned-mac-address=random` does)"
        case .freshUUID:
            "a new random UUID every time the app looks"
        case .cachedUUID:
            "a random UUID the app keeps in a preferences file in its own data directory, created on first use, deleted when the app is removed"
        case .advertising:
            "one UUID per user that the system keeps in its own settings file, outside the apps' reach; the user can reset it, and when the user limits ad tracking every app reads zeros"
        case .vendorID:
            "one UUID per vendor that the system keeps while any app of that vendor is installed, and forgets when the last one is removed"
        case .pushToken:
            "SHA-256 of the endpoint a UnifiedPush distributor on the session bus would hand out; offline there is none, so the cell says *unavailable* rather than inventing a value"
        case .selection:
            "`openudid serve --no-files --mirror none`: the X selections alone, held by the serve process of each running app; nothing of its own on disk, though it follows the user's opt-out and reset"
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
    /// The X display that shows the app; nil in a session without one.
    let display: String?
    /// The session bus with the Secret Service, if there is one.
    let bus: String?
    /// For a sandboxed app, its id: its data, config and cache live under
    /// `~/.var/app/<id>/`, as Flatpak arranges them.
    var sandbox: String? = nil

    /// `XDG_DATA_HOME` of the app: the home's, or the sandbox's own.
    var dataHome: String { sandboxDirectory.map { $0 + "/data" } ?? machine.home.data }

    private var sandboxDirectory: String? { sandbox.map { machine.home.root + "/.var/app/" + $0 } }

    /// Creates the sandbox's own directories, as Flatpak does before the app starts.
    func createDirectories() throws(LabError) {
        guard let directory = sandboxDirectory else { return }
        for name in ["data", "config", "cache"] { try makeDirectory(directory + "/" + name) }
    }

    /// Deletes the sandbox's directories, as `flatpak uninstall --delete-data` does.
    func removeSandbox() {
        guard let directory = sandboxDirectory else { return }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The environment of the app's processes.
    var environment: [String: String] {
        var environment = machine.home.environment(display: display, bus: bus)
        if let directory = sandboxDirectory {
            environment["XDG_DATA_HOME"] = directory + "/data"
            environment["XDG_CONFIG_HOME"] = directory + "/config"
            environment["XDG_CACHE_HOME"] = directory + "/cache"
            environment["FLATPAK_ID"] = sandbox
        }
        return environment
    }
}

/// The reading of a column that has no value to give (the push token offline).
let unavailableIdentifier = "unavailable"

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
    /// The user resets the column's shared identifier; a column that has no such
    /// switch leaves this alone.
    func resetByUser(at site: Site) throws(LabError)
    /// Waits until the running apps have nothing more to say about the last change.
    func settle()
    /// What the running app sees now.
    func observe(_ app: LabApp, at site: Site) throws(LabError) -> String
    /// Stops whatever still runs.
    func shutDown()
}

extension Mechanism {
    /// Most identifiers have no reset the user can reach.
    func resetByUser(at site: Site) throws(LabError) {}
}

/// The identifier an opted-out app reports in the lab's own columns.
let optedOutUUID = "00000000-0000-0000-0000-000000000000"
