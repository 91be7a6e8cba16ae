import Foundation
import ProcessSupport

/// A private D-Bus session bus, with or without a gnome-keyring Secret Service on
/// it, started for one test and torn down with it.
///
/// The bus has its own configuration with an empty service directory, so nothing
/// is activated behind the test's back: a keyring that was killed stays dead, and
/// a bus without a keyring really has no Secret Service. The keyring daemon runs in
/// the foreground as our child, with a private HOME and XDG_RUNTIME_DIR, so it never
/// finds or touches the user's real keyring.
public final class PrivateSessionBus: @unchecked Sendable {
    // `keyring` is replaced by `startKeyring` and cleared by `killKeyring` and
    // `stopKeyringGracefully`; every access holds `lock`. Everything else is
    // immutable after init.
    private let lock = NSLock()
    private var keyring: Process?
    private let bus: ChildProcess

    /// The private HOME and XDG directories the daemons use (the keyring files live in `dataHome/keyrings`).
    public let home: PrivateHome

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` would hold it.
    public let address: String

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
        let home = try PrivateHome()
        self.home = home
        let services = home.root.appendingPathComponent("dbus-services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        let config = home.root.appendingPathComponent("session-bus.conf")
        try Self.configuration(socketDirectory: home.runtimeDir, services: services)
            .write(to: config, atomically: true, encoding: .utf8)
        bus = try ChildProcess(
            try Tools.find("dbus-daemon"),
            ["--config-file=\(config.path)", "--print-address=1", "--nofork"],
            environment: home.environment())
        guard let line = bus.nextLine(timeout: timeout), line.hasPrefix("unix:") else {
            throw HarnessError("dbus-daemon printed no address within \(timeout) s: \(bus.standardError)")
        }
        address = line
        switch keyring {
        case .none:
            password = nil
        case .unlocked(let password):
            self.password = password
            try startKeyring(password: password, timeout: timeout)
        case .withoutLoginKeyring:
            password = nil
            try startKeyring(password: nil, timeout: timeout)
        }
    }

    private static func configuration(socketDirectory: URL, services: URL) -> String {
        privateSessionBusConfiguration(socketDirectory: socketDirectory.path, serviceDirectory: services.path)
    }

    /// The environment for a child that should use this bus and home (`secret-tool`, `dbus-send`), plus `extra`.
    public func environment(extra: [String: String] = [:]) -> [String: String] {
        var merged = ["DBUS_SESSION_BUS_ADDRESS": address]
        for (key, value) in extra { merged[key] = value }
        return home.environment(extra: merged)
    }

    /// The keyring daemon's process id, or nil when none runs.
    public var keyringPID: Int32? {
        lock.withLock { keyring.flatMap { $0.isRunning ? $0.processIdentifier : nil } }
    }

    /// Where the keyring daemon's output goes (it logs little; mostly to syslog).
    public var keyringLog: URL { home.root.appendingPathComponent("gnome-keyring.log") }

    // MARK: - The keyring daemon

    /// Starts gnome-keyring-daemon on the bus; with a password it creates or unlocks the login keyring.
    ///
    /// The password goes on stdin with no trailing newline (a newline would become part of it).
    public func startKeyring(password: String?, timeout: TimeInterval = 10) throws {
        let process = Process()
        process.executableURL = try Tools.find("gnome-keyring-daemon")
        process.arguments = (password == nil ? [] : ["--unlock"]) + ["--foreground", "--components=secrets"]
        process.environment = environment()
        if !FileManager.default.fileExists(atPath: keyringLog.path) {
            _ = FileManager.default.createFile(atPath: keyringLog.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: keyringLog)
        try log.seekToEnd()
        process.standardOutput = log
        process.standardError = log
        let input = Pipe()
        process.standardInput = password == nil ? FileHandle.nullDevice : input
        try process.run()
        try? log.close()
        if let password {
            input.fileHandleForWriting.write(Data(password.utf8))
        }
        try? input.fileHandleForWriting.close()
        lock.withLock { keyring = process }
        try waitForSecretService(owned: true, timeout: timeout)
    }

    /// Kills the keyring daemon with SIGKILL, as a crash would, and waits until its name is gone.
    public func killKeyring(timeout: TimeInterval = 10) throws {
        guard let process = takeKeyring() else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try waitForSecretService(owned: false, timeout: timeout)
    }

    /// Asks the keyring daemon to quit cleanly, as `gnome-keyring-daemon --replace` does, and waits for it.
    ///
    /// Not SIGTERM: a child started from a Swift test inherits the signal mask of a
    /// Dispatch worker thread, which blocks SIGTERM, so the daemon would never see it.
    public func stopKeyringGracefully(timeout: TimeInterval = 10) throws {
        guard let process = takeKeyring() else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            let result = try control(operation: 3, payload: nil)
            guard result == 0 else { throw HarnessError("gnome-keyring refused to quit (result \(result))") }
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning {
                guard Date() < deadline else { throw HarnessError("gnome-keyring did not quit within \(timeout) s") }
                usleep(10_000)
            }
        }
        try waitForSecretService(owned: false, timeout: timeout)
    }

    private func takeKeyring() -> Process? {
        lock.withLock {
            defer { keyring = nil }
            return keyring
        }
    }

    /// Freezes the keyring daemon (SIGSTOP): it keeps its name but answers nothing, like a hung daemon.
    public func suspendKeyring() {
        if let pid = keyringPID { kill(pid, SIGSTOP) }
    }

    /// Lets a suspended keyring daemon run again (SIGCONT).
    public func resumeKeyring() {
        if let pid = keyringPID { kill(pid, SIGCONT) }
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

    /// Unlocks the login keyring of the running daemon with its password.
    ///
    /// The Secret Service `Unlock` method needs an interactive prompt, and a second
    /// `gnome-keyring-daemon --unlock` starts a second daemon rather than unlocking
    /// the first, so this asks the daemon through its control socket, as
    /// pam_gnome_keyring does at login.
    public func unlock(password: String) throws {
        let result = try control(operation: 1, payload: Array(password.utf8))
        guard result == 0 else {
            throw HarnessError("gnome-keyring refused to unlock (result \(result)\(result == 1 ? ": wrong password" : ""))")
        }
    }

    /// Speaks gnome-keyring's control protocol on `$XDG_RUNTIME_DIR/keyring/control`
    /// and returns the daemon's result code (0 done, 1 denied, 2 failed).
    ///
    /// One NUL byte first (the daemon reads our credentials with it), then a packet of
    /// big-endian 32-bit fields: the packet's length, the operation (1 unlock,
    /// 3 quit), and for unlock the password as a length and bytes. The reply is a
    /// length and the result.
    private func control(operation: Int, payload: [UInt8]?) throws -> UInt32 {
        let socketPath = home.runtimeDir.appendingPathComponent("keyring/control").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw HarnessError("control socket path too long: \(socketPath)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            throw HarnessError("cannot connect to \(socketPath): \(String(cString: strerror(errno)))")
        }
        func field(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(value).bigEndian, Array.init) }
        let body = field(operation) + (payload.map { field($0.count) + $0 } ?? [])
        let packet = [0] + field(4 + body.count) + body
        guard packet.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == packet.count else {
            throw HarnessError("cannot write to \(socketPath): \(String(cString: strerror(errno)))")
        }
        var reply = [UInt8](repeating: 0, count: 8)
        var received = 0
        while received < reply.count {
            let count = reply.withUnsafeMutableBytes { read(fd, $0.baseAddress! + received, $0.count - received) }
            guard count > 0 else { throw HarnessError("gnome-keyring's control socket closed without an answer") }
            received += count
        }
        return reply[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }

    // MARK: - Plumbing

    /// Waits until `org.freedesktop.secrets` is (or is no longer) owned on the bus.
    public func waitForSecretService(owned: Bool, timeout: TimeInterval = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reply = try runCommand(
                try Tools.find("dbus-send"),
                [
                    "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"
                ],
                environment: environment(), timeout: 5)
            if reply.status == 0 && reply.standardOutput.contains("boolean \(owned)") { return }
            if Date() > deadline {
                let log = (try? String(contentsOf: keyringLog, encoding: .utf8)) ?? ""
                throw HarnessError(
                    """
                    org.freedesktop.secrets was \(owned ? "not" : "still") owned after \(timeout) s \
                    (\(reply.standardError)); keyring log: \(log)
                    """)
            }
            usleep(20_000)
        }
    }

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

    deinit {
        lock.withLock {
            if let keyring, keyring.isRunning {
                kill(keyring.processIdentifier, SIGKILL)
                keyring.waitUntilExit()
            }
            keyring = nil
        }
        bus.signal(SIGKILL)
        bus.wait(timeout: 5)
    }
}
