import DesktopSandbox
import Foundation

/// A private D-Bus session bus, with or without a gnome-keyring Secret Service on
/// it, started for one test and torn down with it (see DesktopSandbox's `SessionBus`).
public final class PrivateSessionBus: Sendable {
    private let bus: SessionBus

    /// The private HOME and XDG directories the daemons use (the keyring files live in `dataHome/keyrings`).
    public let home: PrivateHome

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` would hold it.
    public var address: String { bus.address }

    /// The login keyring's password when the bus was started with one.
    public let password: String?

    /// What runs on the bus besides the bus itself.
    public enum Keyring: Sendable {
        /// No Secret Service at all.
        case none
        /// gnome-keyring, with its login keyring created (or unlocked) with this password.
        case unlocked(password: String)
        /// gnome-keyring started without a password, so no login keyring and no default collection.
        case withoutLoginKeyring
    }

    /// Starts a bus and, unless `.none`, a keyring daemon, and waits until the Secret Service owns its name.
    public init(keyring: Keyring = .unlocked(password: "correct horse"), timeout: TimeInterval = 10) throws {
        home = try PrivateHome()
        bus = try SessionBus(home: home.home, timeout: timeout)
        switch keyring {
        case .none:
            password = nil
        case .unlocked(let password):
            self.password = password
            try bus.startKeyring(password: password, timeout: timeout)
        case .withoutLoginKeyring:
            password = nil
            try bus.startKeyring(password: nil, timeout: timeout)
        }
    }

    /// The environment for a child that should use this bus and home (`secret-tool`, `dbus-send`), plus `extra`.
    public func environment(extra: [String: String] = [:]) -> [String: String] { bus.environment(extra: extra) }

    /// The keyring daemon's process id, or nil when none runs.
    public var keyringPID: Int32? { bus.keyringPID }

    /// Starts gnome-keyring-daemon on the bus; with a password it creates or unlocks the login keyring.
    public func startKeyring(password: String?, timeout: TimeInterval = 10) throws {
        try bus.startKeyring(password: password, timeout: timeout)
    }

    /// Kills the keyring daemon with SIGKILL, as a crash would, and waits until its name is gone.
    public func killKeyring(timeout: TimeInterval = 10) throws { try bus.killKeyring(timeout: timeout) }

    /// Asks the keyring daemon to quit cleanly, as `gnome-keyring-daemon --replace` does, and waits for it.
    public func stopKeyringGracefully(timeout: TimeInterval = 10) throws { try bus.stopKeyringGracefully(timeout: timeout) }

    /// Freezes the keyring daemon (SIGSTOP): it keeps its name but answers nothing, like a hung daemon.
    public func suspendKeyring() { bus.suspendKeyring() }

    /// Lets a suspended keyring daemon run again (SIGCONT).
    public func resumeKeyring() { bus.resumeKeyring() }

    /// Unlocks the login keyring of the running daemon with its password, through its control socket.
    public func unlock(password: String) throws { try bus.unlock(password: password) }

    /// Waits until `org.freedesktop.secrets` is (or is no longer) owned on the bus.
    public func waitForSecretService(owned: Bool, timeout: TimeInterval = 10) throws {
        try bus.waitForSecretService(owned: owned, timeout: timeout)
    }

    // MARK: - Locking

    /// The object path the `default` alias points to, or nil when there is no default collection.
    public func defaultCollectionPath() throws -> String? {
        let reply = try send(to: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", ["string:default"])
        guard let path = Self.quoted(after: "object path", in: reply) else {
            throw HarnessError("ReadAlias gave no object path: \(reply)")
        }
        return path == "/" ? nil : path
    }

    /// The object paths of the items whose attributes include `attributes`, as the
    /// Secret Service `SearchItems` method lists them (locked ones too).
    public func searchItems(_ attributes: [String: String]) throws -> (unlocked: [String], locked: [String]) {
        let pairs = attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }.joined(separator: ",")
        let reply = try send(
            to: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems",
            ["dict:string:string:\(pairs)"])
        let arrays = reply.components(separatedBy: "array [").dropFirst().map { array in
            array.components(separatedBy: "\n").compactMap { line in Self.quoted(after: "object path", in: line) }
        }
        guard arrays.count == 2 else { throw HarnessError("unexpected reply to SearchItems: \(reply)") }
        return (arrays[0], arrays[1])
    }

    /// Whether the default collection is locked, asked over D-Bus as any client would.
    public func isDefaultCollectionLocked() throws -> Bool {
        guard let path = try defaultCollectionPath() else { throw HarnessError("there is no default collection") }
        let reply = try send(
            to: path, "org.freedesktop.DBus.Properties.Get",
            ["string:org.freedesktop.Secret.Collection", "string:Locked"])
        if reply.contains("boolean true") { return true }
        if reply.contains("boolean false") { return false }
        throw HarnessError("unexpected reply to Get Locked: \(reply)")
    }

    /// Locks the default collection with the Secret Service `Lock` method, and checks that it took.
    public func lockDefaultCollection() throws {
        guard let path = try defaultCollectionPath() else { throw HarnessError("there is no default collection to lock") }
        _ = try send(to: "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock", ["array:objpath:\(path)"])
        guard try isDefaultCollectionLocked() else { throw HarnessError("Lock returned but \(path) is still unlocked") }
    }

    /// How many clients are connected to the bus, counting the one that asks.
    public func connectionCount() throws -> Int {
        let result = try runCommand(
            try Tools.find("dbus-send"),
            ["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"],
            environment: environment(), timeout: 10)
        guard result.status == 0 else { throw HarnessError("dbus-send ListNames failed: \(result.standardError)") }
        return result.standardOutput.components(separatedBy: "string \":").count - 1
    }

    // MARK: - Plumbing

    /// Calls a method of the Secret Service with dbus-send and returns the printed reply.
    private func send(to path: String, _ method: String, _ arguments: [String]) throws -> String {
        let result = try runCommand(
            try Tools.find("dbus-send"),
            ["--session", "--print-reply", "--dest=org.freedesktop.secrets", path, method] + arguments,
            environment: environment(), timeout: 10)
        guard result.status == 0 else {
            throw HarnessError("dbus-send \(method) failed: \(result.standardError)")
        }
        return result.standardOutput
    }

    /// The first double-quoted string after `marker` in dbus-send output.
    private static func quoted(after marker: String, in text: String) -> String? {
        guard let start = text.range(of: marker) else { return nil }
        let rest = text[start.upperBound...]
        guard let open = rest.firstIndex(of: "\"") else { return nil }
        let afterOpen = rest.index(after: open)
        guard let close = rest[afterOpen...].firstIndex(of: "\"") else { return nil }
        return String(rest[afterOpen..<close])
    }
}
