import Foundation

/// A private Wayland session: weston on its headless backend, with Xwayland,
/// in a runtime directory of its own; it never touches a real desktop and
/// never outlives this process.
///
/// Weston picks its X display number itself (the lowest free one, with the
/// same lock files Xvfb uses, so it never takes a number a private Xvfb holds)
/// and says so in its log: `xserver listening on display :N`. From then on it
/// listens on that display and starts Xwayland when the first X client
/// connects; when Xwayland dies, weston listens again and starts a new one on
/// the same display for the next client. Both facts come from its log, which
/// this type reads.
///
/// As for `XServer`, a small `sh` guard starts weston and blocks reading a
/// pipe whose only writer is this process; when this process goes, however it
/// goes, the guard stops weston, and Xwayland and weston's own clients end
/// with their compositor.
public final class Weston: @unchecked Sendable {
    // `guardian` is set to nil by `stop`; every access holds `lock`.
    // Everything else is immutable after init.
    private let lock = NSLock()
    private var guardian: ChildProcess?

    /// Weston's process id.
    public let pid: pid_t
    /// The directory weston runs in: its `XDG_RUNTIME_DIR`, its log, its socket.
    public let directory: String
    /// The Wayland socket's absolute path: what `WAYLAND_DISPLAY` holds for a
    /// client, whatever that client's own `XDG_RUNTIME_DIR` is.
    public let waylandDisplay: String
    /// The X display weston serves through Xwayland, such as `:2`.
    public let display: String
    /// The path of weston's log.
    public let logPath: String

    /// Starts weston headless with Xwayland, and waits until both its Wayland
    /// socket and its X display accept connections.
    ///
    /// Xwayland itself starts at the first X client, as on a desktop.
    /// - Parameter timeout: How long weston may take to come up, in seconds.
    /// - Throws: `SandboxError` when weston or Xwayland is missing, or weston
    ///   does not come up; its text quotes weston's log.
    public init(timeout: TimeInterval = 20) throws(SandboxError) {
        let weston = try Tools.require("weston", package: "weston")
        _ = try Tools.require("Xwayland", package: "xwayland")
        let directory = try makePrivateDirectory(prefix: "openudid-weston")
        let logPath = directory + "/weston.log"
        let socket = "wayland-openudid"
        let socketPath = directory + "/" + socket
        let arguments = [
            "-c", Self.guardScript, "weston-guard", weston,
            "--backend=headless-backend.so", "--xwayland", "--socket=\(socket)", "--idle-time=0",
            "--no-config", "--log=\(logPath)"
        ]
        // Only what weston needs: its private runtime directory, and no DISPLAY or
        // WAYLAND_DISPLAY that would let it reach a real desktop.
        let environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory, "XDG_RUNTIME_DIR": directory, "XDG_CONFIG_HOME": directory + "/config",
            "LANG": "C.UTF-8"
        ]
        let guardian = try ChildProcess("/bin/sh", arguments, environment: environment, input: .pipe, reading: .onDemand)
        let deadline = Date().addingTimeInterval(timeout)
        guard let line = guardian.nextLine(timeout: timeout), line.hasPrefix("pid "), let pid = pid_t(line.dropFirst(4)) else {
            guardian.kill9()
            throw SandboxError("the guard of weston did not start it: \(guardian.standardError)")
        }
        ChildProcess.track(pid, true)
        var number: Int?
        let up = waitUntil(timeout: max(0, deadline.timeIntervalSinceNow), interval: 0.01) {
            number = Self.displayNumber(in: Self.read(logPath))
            return number != nil && FileManager.default.fileExists(atPath: socketPath) || !Self.isAlive(pid)
        }
        guard up, let number, Self.isAlive(pid) else {
            let log = Self.read(logPath).split(separator: "\n").suffix(8).joined(separator: "\n")
            guardian.closeInput()
            if guardian.wait(timeout: 5) == nil {
                Foundation.kill(pid, SIGKILL)
                guardian.kill9()
            }
            ChildProcess.track(pid, false)
            try? FileManager.default.removeItem(atPath: directory)
            throw SandboxError(
                "weston did not come up with Xwayland within \(Int(timeout)) s; its log ends:\n\(log)\n\(guardian.standardError)")
        }
        self.pid = pid
        self.guardian = guardian
        self.directory = directory
        self.logPath = logPath
        waylandDisplay = socketPath
        display = ":\(number)"
    }

    private static let guardScript = """
        "$@" </dev/null >&2 &
        weston=$!
        echo "pid $weston"
        exec >/dev/null
        IFS= read -r order
        kill -TERM "$weston"
        wait "$weston"
        """

    /// The display number of the last `xserver listening on display :N` line of `log`.
    static func displayNumber(in log: String) -> Int? {
        let marker = "xserver listening on display :"
        guard let line = log.split(separator: "\n").last(where: { $0.contains(marker) }),
            let range = line.range(of: marker)
        else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// Weston's log so far.
    public var log: String { Self.read(logPath) }

    /// The environment a client of this session gets on top of its own:
    /// `WAYLAND_DISPLAY`, and `DISPLAY` unless `withDisplay` is false.
    public func environment(withDisplay: Bool = true) -> [String: String] {
        withDisplay ? ["WAYLAND_DISPLAY": waylandDisplay, "DISPLAY": display] : ["WAYLAND_DISPLAY": waylandDisplay]
    }

    // MARK: - Xwayland

    /// The process ids of every Xwayland weston started, in order
    /// (`Spawned Xwayland server, pid N` in its log).
    public var xwaylandStarts: [pid_t] {
        let marker = "Spawned Xwayland server, pid "
        return log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: marker) else { return nil }
            return pid_t(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    /// How many Xwayland servers have ended (`xserver exited` in weston's log).
    public var xwaylandExits: Int { log.split(separator: "\n").count { $0.contains("xserver exited") } }

    /// The running Xwayland's process id, or nil while weston only listens for the first X client.
    public var xwayland: pid_t? {
        let (starts, exits) = (xwaylandStarts, xwaylandExits)
        return starts.count > exits ? starts.last : nil
    }

    /// Waits until an Xwayland runs and its window manager is up (weston
    /// logs `created wm` once it has connected to the new server).
    ///
    /// - Parameter after: The number of Xwayland starts to wait past: 0 for the
    ///   first, `xwaylandStarts.count` taken before a crash for the next.
    /// - Returns: Its process id.
    /// - Throws: `SandboxError` quoting weston's log when none comes in time.
    @discardableResult
    public func waitForXwayland(after: Int = 0, timeout: TimeInterval = 20) throws(SandboxError) -> pid_t {
        var found: pid_t?
        let up = waitUntil(timeout: timeout, interval: 0.01) {
            let lines = log.split(separator: "\n")
            guard let start = lines.lastIndex(where: { $0.contains("Spawned Xwayland server") }) else { return false }
            found = xwaylandStarts.count > after ? xwayland : nil
            return found != nil && lines[start...].contains { $0.contains("created wm") }
        }
        guard up, let found else {
            throw SandboxError("no Xwayland came up on \(display) within \(Int(timeout)) s; weston's log ends:\n\(logTail)")
        }
        return found
    }

    /// Kills the running Xwayland with SIGKILL, as a crash would, and waits
    /// until weston has seen it end; weston then starts a new one on the same
    /// display for the next X client.
    ///
    /// - Returns: The process id of the Xwayland killed.
    /// - Throws: `SandboxError` when no Xwayland runs, or weston does not notice its end.
    @discardableResult
    public func killXwayland(timeout: TimeInterval = 20) throws(SandboxError) -> pid_t {
        let exits = xwaylandExits
        guard let victim = xwayland, Self.isXwayland(victim) else {
            throw SandboxError("no Xwayland runs on \(display) to kill; weston's log ends:\n\(logTail)")
        }
        Foundation.kill(victim, SIGKILL)
        guard waitUntil(timeout: timeout, interval: 0.01, { xwaylandExits > exits }) else {
            throw SandboxError("weston did not see Xwayland \(victim) end within \(Int(timeout)) s; its log ends:\n\(logTail)")
        }
        return victim
    }

    private var logTail: String { log.split(separator: "\n").suffix(8).joined(separator: "\n") }

    // MARK: - Life and death

    /// Whether weston still runs.
    public var isRunning: Bool { lock.withLock { guardian?.isRunning == true && Self.isAlive(pid) } }

    /// Stops weston politely (SIGTERM), which ends Xwayland and weston's own
    /// clients with it, waits for them, and removes weston's directory.
    public func stop() {
        lock.withLock {
            guard let guardian else { return }
            defer { ChildProcess.track(pid, false) }
            let server = xwayland
            guardian.closeInput()
            if guardian.wait(timeout: 10) == nil {
                Foundation.kill(pid, SIGKILL)
                guardian.kill9()
            }
            self.guardian = nil
            // Xwayland ignores SIGTERM and ends when it loses its compositor; one
            // that lingers is weston's orphan, known by its pid and its name.
            if let server, !waitUntil(timeout: 10, { !Self.isXwayland(server) }) { Foundation.kill(server, SIGKILL) }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Whether `pid` is a running Xwayland (not a process that took its number since).
    private static func isXwayland(_ pid: pid_t) -> Bool {
        isAlive(pid) && read("/proc/\(pid)/status").hasPrefix("Name:\tXwayland")
    }

    /// Whether `pid` runs: a process that ended stays a zombie until its
    /// parent (the guard, or weston) reaps it, and `kill(pid, 0)` still finds it then.
    private static func isAlive(_ pid: pid_t) -> Bool {
        let status = read("/proc/\(pid)/status")
        return !status.isEmpty && !status.contains("State:\tZ")
    }

    deinit { stop() }
}
