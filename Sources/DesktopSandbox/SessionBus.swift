import Foundation

/// A private D-Bus session bus, with or without a gnome-keyring Secret Service on it.
///
/// The bus listens in the home's runtime directory and activates services only
/// from an empty directory of its own, so the system's service files can never
/// start a daemon (such as the user's own gnome-keyring) behind the caller's
/// back: a keyring that was killed stays dead, and a bus without one really has
/// no Secret Service. The keyring daemon runs in the foreground as a child, in
/// the private home, so it never finds or touches the user's real keyring.
public final class SessionBus: @unchecked Sendable {
    // `keyring` is replaced by `startKeyring` and cleared by `killKeyring` and
    // `stopKeyringGracefully`; every access holds `lock`. Everything else is
    // immutable after init.
    private let lock = NSLock()
    private var keyring: ChildProcess?
    private let bus: ChildProcess

    /// The private home the daemons use (the keyring files live in `data/keyrings`).
    public let home: Home

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    public let address: String

    /// Starts a bus for `home` and waits for its address.
    ///
    /// - Throws: `SandboxError` when dbus-daemon is missing or prints no address within `timeout` seconds.
    public init(home: Home, timeout: TimeInterval = 30) throws(SandboxError) {
        self.home = home
        let services = home.root + "/dbus-services"
        try makeDirectory(services)
        let configuration = home.root + "/session-bus.conf"
        do {
            try Self.configuration(socketDirectory: home.runtime, serviceDirectory: services)
                .write(toFile: configuration, atomically: true, encoding: .utf8)
        } catch {
            throw SandboxError("cannot write \(configuration): \(error.localizedDescription)")
        }
        bus = try ChildProcess(
            try Tools.require("dbus-daemon", package: "dbus"), ["--config-file=\(configuration)", "--print-address=1", "--nofork"],
            environment: home.environment(), reading: .onDemand)
        guard let line = bus.nextLine(timeout: timeout), line.hasPrefix("unix:") else {
            bus.kill9()
            throw SandboxError("dbus-daemon printed no bus address within \(Int(timeout)) s: \(bus.standardError)")
        }
        address = line
    }

    private static func configuration(socketDirectory: String, serviceDirectory: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(socketDirectory)</listen>
          <auth>EXTERNAL</auth>
          <servicedir>\(serviceDirectory)</servicedir>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """
    }

    /// The environment of a process of the home on this bus, plus `extra`.
    public func environment(display: String? = nil, extra: [String: String] = [:]) -> [String: String] {
        home.environment(display: display, bus: address, extra: extra)
    }

    /// The keyring daemon's process id, or nil when none runs.
    public var keyringPID: Int32? {
        lock.withLock { keyring.flatMap { $0.isRunning ? $0.pid : nil } }
    }

    /// What the keyring daemon wrote to standard error.
    public var keyringLog: String { lock.withLock { keyring?.standardError ?? "" } }

    // MARK: - The keyring daemon

    /// Starts gnome-keyring-daemon on the bus and waits until it owns the Secret Service's name;
    /// with a password it creates (or unlocks) the login keyring.
    ///
    /// The password goes on standard input with no trailing newline, which would become part of it.
    public func startKeyring(password: String?, timeout: TimeInterval = 30) throws(SandboxError) {
        let daemon = try ChildProcess(
            try Tools.require("gnome-keyring-daemon", package: "gnome-keyring"),
            (password == nil ? [] : ["--unlock"]) + ["--foreground", "--components=secrets"], environment: environment(),
            input: password.map { .data(Data($0.utf8)) } ?? .none, reading: .discarded)
        lock.withLock { keyring = daemon }
        try waitForSecretService(owned: true, timeout: timeout)
    }

    /// Kills the keyring daemon with SIGKILL, as a crash would, and waits until its name is gone.
    public func killKeyring(timeout: TimeInterval = 10) throws(SandboxError) {
        guard let daemon = takeKeyring() else { return }
        daemon.kill9()
        try waitForSecretService(owned: false, timeout: timeout)
    }

    /// Asks the keyring daemon to quit cleanly through its control socket, as
    /// `gnome-keyring-daemon --replace` does, and waits for it.
    public func stopKeyringGracefully(timeout: TimeInterval = 10) throws(SandboxError) {
        guard let daemon = takeKeyring() else { return }
        if daemon.isRunning {
            daemon.signal(SIGCONT)
            let result = try control(operation: 3, payload: nil)
            guard result == 0 else { throw SandboxError("gnome-keyring refused to quit (result \(result))") }
            guard daemon.wait(timeout: timeout) != nil else { throw SandboxError("gnome-keyring did not quit within \(Int(timeout)) s") }
        }
        try waitForSecretService(owned: false, timeout: timeout)
    }

    private func takeKeyring() -> ChildProcess? {
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

    /// Unlocks the login keyring of the running daemon with its password.
    ///
    /// The Secret Service `Unlock` method needs an interactive prompt, and a second
    /// `gnome-keyring-daemon --unlock` starts a second daemon rather than unlocking
    /// the first, so this asks the daemon through its control socket, as
    /// pam_gnome_keyring does at login.
    public func unlock(password: String) throws(SandboxError) {
        let result = try control(operation: 1, payload: Array(password.utf8))
        guard result == 0 else {
            throw SandboxError("gnome-keyring refused to unlock (result \(result)\(result == 1 ? ": wrong password" : ""))")
        }
    }

    /// Speaks gnome-keyring's control protocol on `$XDG_RUNTIME_DIR/keyring/control`
    /// and returns the daemon's result code (0 done, 1 denied, 2 failed).
    ///
    /// One NUL byte first (the daemon reads our credentials with it), then a packet of
    /// big-endian 32-bit fields: the packet's length, the operation (1 unlock,
    /// 3 quit), and for unlock the password as a length and bytes. The reply is a
    /// length and the result.
    private func control(operation: Int, payload: [UInt8]?) throws(SandboxError) -> UInt32 {
        let socketPath = home.runtime + "/keyring/control"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system("socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(socketPath.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SandboxError("control socket path too long: \(socketPath)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: pathBytes) }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw .system("cannot connect to \(socketPath)") }
        func field(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(value).bigEndian, Array.init) }
        let body = field(operation) + (payload.map { field($0.count) + $0 } ?? [])
        let packet = [0] + field(4 + body.count) + body
        guard packet.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == packet.count else {
            throw .system("cannot write to \(socketPath)")
        }
        var reply = [UInt8](repeating: 0, count: 8)
        var received = 0
        while received < reply.count {
            let count = reply.withUnsafeMutableBytes { read(fd, $0.baseAddress! + received, $0.count - received) }
            guard count > 0 else { throw SandboxError("gnome-keyring's control socket closed without an answer") }
            received += count
        }
        return reply[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Waits until `org.freedesktop.secrets` is (or is no longer) owned on the bus, asking as any client would.
    public func waitForSecretService(owned: Bool, timeout: TimeInterval = 30) throws(SandboxError) {
        let dbusSend = try Tools.require("dbus-send", package: "dbus")
        let arguments = [
            "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"
        ]
        var last = ""
        let answered = waitUntil(timeout: timeout, interval: 0.02) {
            guard let reply = try? runCommand(dbusSend, arguments, environment: environment(), timeout: 5) else { return false }
            last = reply.standardError
            return reply.status == 0 && reply.standardOutput.contains("boolean \(owned)")
        }
        guard answered else {
            throw SandboxError(
                "org.freedesktop.secrets was \(owned ? "not" : "still") owned after \(Int(timeout)) s (\(last)); keyring log: \(keyringLog)"
            )
        }
    }

    /// Stops the keyring daemon and the bus.
    public func stop() {
        takeKeyring()?.kill9()
        bus.kill9()
    }

    deinit { stop() }
}
