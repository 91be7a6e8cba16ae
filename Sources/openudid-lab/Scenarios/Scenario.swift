/// Where an app runs: whose files it uses and which X server shows it.
enum Place: String, Sendable {
    /// This machine: its home, its X server.
    case here
    /// Another machine, with its own home and its own X server.
    case apart
    /// An app of the other machine shown on this machine's X server (as `ssh -X` does):
    /// the other machine's home and machine id, this display.
    case visiting
    /// This machine, in a sandbox as Flatpak arranges one: the app's own data,
    /// config and cache directories under `~/.var/app/<app-id>/`, the X11 socket,
    /// and the session bus with the Secret Service (`--talk-name=org.freedesktop.secrets`).
    case sandboxed = "sandboxed"
    /// As `sandboxed`, but without the X11 socket (`--nosocket=x11`): no X display at all.
    case sandboxedWithoutX11 = "sandboxed-no-x11"
    /// This machine in a Wayland session without Xwayland: the home and the session
    /// bus, but no X display.
    case noXServer = "no-x-server"

    /// Whether an app here sees an X display.
    var hasDisplay: Bool { self != .sandboxedWithoutX11 && self != .noXServer }
    /// Whether an app here runs on this machine (rather than on the other one).
    var isThisMachine: Bool { self != .apart && self != .visiting }
}

/// One thing that happens in a scenario.
enum Action: Sendable {
    /// The apps start, one after another, each once the one before it is up.
    case start([LabApp], Place = .here)
    /// The apps quit.
    case stop([LabApp])
    /// The apps are uninstalled with their data: the process stops, `openudid remove-app`
    /// runs, the app's preferences go.
    case remove([LabApp])
    /// The app opts out (or, with `false`, back in). The app should not be running:
    /// the tool's `serve` reads the choice when it starts.
    case optOut(LabApp, Bool = true)
    /// The X server is killed and a new one starts on the same display (a reboot).
    /// Every app must have quit before.
    case restartXServer
    /// Everything on this machine is wiped, as a factory reset does: every app's data,
    /// the secret store, the machine id; then it reboots. Every app must have quit before.
    case resetDevice
    /// The user erases all content and settings, as iOS's reset does: every app with
    /// its data, the home, the secret store and the system's settings (advertising
    /// and vendor identifiers) go; the hardware and the machine id stay; then it
    /// reboots. Every app must have quit before.
    case eraseContent
    /// The user resets the advertising identifier in the system's settings.
    case resetAdvertisingID
    /// The user limits ad tracking (or, with `false`, allows it again) in the system's settings.
    case limitAdTracking(Bool = true)
    /// The user resets OpenUDID's shared identifier (`openudid reset`) while the apps run.
    case resetOpenUDID
    /// The user opts out of OpenUDID for every app (`openudid opt-out --all`; or,
    /// with `false`, back in). Apps read the choice when they start, so none may run.
    case optOutEverywhere(Bool = true)
    /// The user's keyring is lost, as when a forgotten password makes the desktop
    /// start a new, empty one: every item the apps kept in it goes, and so does a
    /// file mirror kept in its place.
    case loseKeyring

    /// Whether the action happens to the machine once rather than to each mechanism's apps.
    var isMachineWide: Bool {
        switch self {
        case .restartXServer, .resetDevice, .eraseContent, .resetAdvertisingID, .limitAdTracking, .resetOpenUDID, .optOutEverywhere,
            .loseKeyring:
            true
        case .start, .stop, .remove, .optOut: false
        }
    }

    /// Whether the user asks for a new OpenUDID identifier with it (`openudid reset`).
    var resetsOpenUDID: Bool {
        if case .resetOpenUDID = self { true } else { false }
    }

    /// A few words for reports, such as `start notes, photos`.
    var description: String {
        func names(_ apps: [LabApp]) -> String { apps.map(\.name).joined(separator: ", ") }
        switch self {
        case .start(let apps, .here): return "start \(names(apps))"
        case .start(let apps, .apart): return "start \(names(apps)) on another machine"
        case .start(let apps, .visiting): return "start \(names(apps)) from the other machine on this display"
        case .start(let apps, .sandboxed): return "start \(names(apps)), each sandboxed with its own data directory and the X11 socket"
        case .start(let apps, .sandboxedWithoutX11):
            return "start \(names(apps)), each sandboxed with its own data directory and no X11 socket"
        case .start(let apps, .noXServer): return "start \(names(apps)) in a session without an X server"
        case .stop(let apps): return "quit \(names(apps))"
        case .remove(let apps): return "remove \(names(apps))"
        case .optOut(let app, true): return "opt \(app.name) out"
        case .optOut(let app, false): return "opt \(app.name) back in"
        case .restartXServer: return "restart the X server"
        case .resetDevice: return "wipe the machine: app data, secret store, system settings, machine id; restart the X server"
        case .eraseContent: return "erase all content and settings: app data, secret store, system settings; restart the X server"
        case .resetAdvertisingID: return "reset the advertising identifier"
        case .limitAdTracking(true): return "limit ad tracking"
        case .limitAdTracking(false): return "allow ad tracking again"
        case .resetOpenUDID: return "reset the OpenUDID identifier for every app (openudid reset)"
        case .optOutEverywhere(true): return "opt the user out for every app (openudid opt-out --all)"
        case .optOutEverywhere(false): return "opt the user back in (openudid opt-out --all --undo)"
        case .loseKeyring: return "lose the user's keyring: every item in it (and a file mirror's files) goes"
        }
    }
}

/// A named moment of a scenario: what happens, after which every running app looks at its identifier.
struct Step: Sendable {
    /// A stable key for scripts, unique within its scenario, such as `reboot`.
    let key: String
    /// A word or two for the picture, such as `reboot`.
    let label: String
    /// What the table's row says.
    let title: String
    /// What happens, in order.
    let actions: [Action]
}

/// A story told to every mechanism alike, each time on a fresh machine.
struct Scenario: Sendable {
    /// A stable key for scripts, such as `break`.
    let key: String
    /// The scenario's name in tables.
    let title: String
    /// What it shows, in a sentence.
    let purpose: String
    /// The steps, in order.
    let steps: [Step]
    /// Whether `--quick` runs it too.
    let isQuick: Bool
}
