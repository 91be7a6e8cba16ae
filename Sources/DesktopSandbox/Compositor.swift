import Foundation

/// A private Wayland session with Xwayland, as the desktops people run start
/// one: weston, GNOME's mutter or KDE's kwin, headless, with a home, runtime
/// directory and session bus of its own; it never touches a real desktop and
/// never outlives this process.
///
/// Each compositor picks its X display number itself (the lowest free one,
/// with the lock files Xvfb uses, so never one a private Xvfb holds) and runs
/// Xwayland on it: weston and mutter start it at the first X client, kwin at
/// once. When Xwayland dies, weston and kwin start a new one on the same
/// display; mutter does so only when it runs as a systemd user unit, and ends
/// with its Xwayland otherwise, so mutter is started in a cgroup shaped like
/// such a unit where this process may make one (as root). The Xwayland
/// servers are the compositor's descendants named `Xwayland`, read from /proc.
///
/// As for `XServer`, a small `sh` guard starts the compositor and blocks reading
/// a pipe whose only writer is this process; when this process goes, however it
/// goes, the guard stops the compositor, and Xwayland ends with it.
public final class Compositor: @unchecked Sendable {
    /// The compositors a test can start.
    public enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        /// weston 10 on its headless backend.
        case weston
        /// GNOME's compositor, mutter 43 (`--headless`, one virtual monitor): gnome-shell's Xwayland is mutter's.
        case mutter
        /// KDE Plasma's compositor, kwin 5.27, started by `kwin_wayland_wrapper` as Plasma starts it.
        case kwin

        /// Its name, such as `mutter`.
        public var description: String { rawValue }

        /// The programs it runs, each with the Debian package that has it.
        var programs: [(name: String, package: String)] {
            switch self {
            case .weston: [("weston", "weston"), ("Xwayland", "xwayland")]
            case .mutter: [("mutter", "mutter"), ("Xwayland", "xwayland")]
            case .kwin: [("kwin_wayland_wrapper", "kwin-wayland"), ("kwin_wayland", "kwin-wayland"), ("Xwayland", "xwayland")]
            }
        }

        /// What is missing to start it here and how to install it, or nil when nothing is.
        public var missing: String? {
            let absent = programs.filter { Tools.find($0.name) == nil }
            guard !absent.isEmpty else { return nil }
            return "\(absent.map(\.name).joined(separator: " and ")) not installed; install "
                + "with `apt-get install --no-install-recommends \(Set(absent.map(\.package)).sorted().joined(separator: " "))` "
                + "(scripts/bootstrap does)"
        }

        /// The log line that names the X display, up to the number, when the compositor writes one.
        fileprivate var displayMarker: String? {
            switch self {
            case .weston: "xserver listening on display :"
            case .mutter: "Using public X11 display :"
            case .kwin: nil
            }
        }

        /// The start of the name of the authority file Xwayland's clients need, in the runtime directory.
        fileprivate var authorityPrefix: String? {
            switch self {
            case .weston: nil
            case .mutter: ".mutter-Xwaylandauth."
            case .kwin: "xauth_"
            }
        }
    }

    // `guardian` is set to nil by `stop`; every access holds `lock`.
    // Everything else is immutable after init.
    private let lock = NSLock()
    private var guardian: ChildProcess?
    private let bus: SessionBus
    private let unitCgroups: [String]

    /// Which compositor this is.
    public let kind: Kind
    /// The compositor's process id (for kwin, `kwin_wayland_wrapper`'s).
    public let pid: pid_t
    /// The compositor's home; its runtime directory holds the sockets and the authority file.
    public let directory: String
    /// The Wayland socket's absolute path: what `WAYLAND_DISPLAY` holds for a
    /// client, whatever that client's own `XDG_RUNTIME_DIR` is.
    public let waylandDisplay: String
    /// The X display the compositor serves through Xwayland, such as `:2`.
    public let display: String
    /// The authority file Xwayland's clients need (`XAUTHORITY`), or nil when it asks for none.
    public let authority: String?
    /// Why this compositor does not start a new Xwayland when its Xwayland dies, or nil when it does.
    public let noXwaylandRestart: String?
    /// The path of the compositor's log (its standard output and error).
    public let logPath: String

    /// Starts a compositor of `kind` headless with Xwayland, and waits until
    /// its Wayland socket and its X display are there.
    ///
    /// - Parameters:
    ///   - kind: The compositor.
    ///   - timeout: How long it may take to come up, in seconds.
    /// - Throws: `SandboxError` when its programs are missing, or it does not
    ///   come up; its text quotes the compositor's log.
    public init(_ kind: Kind = .weston, timeout: TimeInterval = 30) throws(SandboxError) {
        if let missing = kind.missing { throw SandboxError("cannot start \(kind): \(missing)") }
        let executable = Tools.find(kind.programs[0].name) ?? kind.programs[0].name
        self.kind = kind
        let directory = try makePrivateDirectory(prefix: "openudid-\(kind)")
        let home = try Home(root: directory)
        let logPath = directory + "/compositor.log"
        let bus = try SessionBus(home: home, timeout: timeout)
        let unitCgroups = kind == .mutter ? Self.unitCgroups() : []
        (self.directory, self.logPath, self.bus, self.unitCgroups) = (directory, logPath, bus, unitCgroups)
        var environment = bus.environment()
        let program: [String]
        switch kind {
        case .weston:
            program = [
                executable, "--backend=headless-backend.so", "--xwayland", "--socket=wayland-openudid", "--idle-time=0", "--no-config"
            ]
        case .mutter:
            program = [executable, "--headless", "--wayland", "--virtual-monitor", "1280x800", "--wayland-display", "wayland-openudid"]
        case .kwin:
            // kwin_wayland carries the file capability cap_sys_resource, which a
            // container may not grant: exec then fails. A copy has none, and the
            // wrapper finds it first on PATH.
            let copy = directory + "/bin/kwin_wayland"
            do {
                try makeDirectory(directory + "/bin")
                try Data(contentsOf: URL(fileURLWithPath: Tools.find("kwin_wayland") ?? "")).write(to: URL(fileURLWithPath: copy))
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy)
            } catch {
                throw SandboxError("cannot copy kwin_wayland to \(copy): \(error.localizedDescription)")
            }
            environment["PATH"] = directory + "/bin:" + (environment["PATH"] ?? "/usr/bin:/bin")
            program = [executable, "--xwayland", "--virtual", "--width", "1280", "--height", "800"]
        }
        let guardian = try ChildProcess(
            "/bin/sh", ["-c", Self.guardScript, "compositor-guard", logPath, unitCgroups.joined(separator: " ")] + program,
            environment: environment, input: .pipe, reading: .onDemand)
        guard let line = guardian.nextLine(timeout: timeout), line.hasPrefix("pid "), let pid = pid_t(line.dropFirst(4)) else {
            Self.end(guardian, pid: 0, bus: bus, directory: directory, cgroups: unitCgroups)
            throw SandboxError("the guard of \(kind) did not start it: \(guardian.standardError)")
        }
        ChildProcess.track(pid, true)
        self.pid = pid
        self.guardian = guardian
        noXwaylandRestart =
            kind != .mutter || Self.read("/proc/\(pid)/cgroup").contains("/user@")
            ? nil
            : "mutter starts a new Xwayland only as a systemd user unit, and this process cannot put it in a cgroup shaped like one (that needs root and a writable cgroup file system)"

        var found: (wayland: String, display: Int, authority: String?)?
        _ = waitUntil(timeout: timeout, interval: 0.02) {
            found = Self.endpoints(kind, runtime: home.runtime, log: Self.read(logPath), xwayland: Self.xwayland(below: pid))
            return found != nil || !Self.isAlive(pid)
        }
        guard let found, Self.isAlive(pid) else {
            let log = Self.read(logPath).split(separator: "\n").suffix(12).joined(separator: "\n")
            Self.end(guardian, pid: pid, bus: bus, directory: directory, cgroups: unitCgroups)
            throw SandboxError("\(kind) did not come up with Xwayland within \(Int(timeout)) s; its log ends:\n\(log)")
        }
        (waylandDisplay, display, authority) = (found.wayland, ":\(found.display)", found.authority)
    }

    /// Moves the guard into each cgroup `$2` names, making it (for mutter),
    /// then starts the compositor with its output in the log file `$1`.
    private static let guardScript = """
        log=$1; cgroups=$2; shift 2
        for cgroup in $cgroups; do mkdir -p "$cgroup" && echo $$ >"$cgroup/cgroup.procs"; done 2>/dev/null
        "$@" </dev/null >"$log" 2>&1 &
        compositor=$!
        echo "pid $compositor"
        exec >/dev/null
        IFS= read -r order
        kill -TERM "$compositor"
        wait "$compositor"
        """

    /// The compositor's Wayland socket, X display and authority file, once all are there.
    private static func endpoints(
        _ kind: Kind, runtime: String, log: String, xwayland: pid_t?
    ) -> (wayland: String, display: Int, authority: String?)? {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
        guard let socket = files.first(where: { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }) else { return nil }
        let number: Int?
        if let marker = kind.displayMarker {
            number = displayNumber(in: log, after: marker)
        } else {
            // kwin writes no such line, but starts Xwayland at once: its first argument is the display.
            number = xwayland.flatMap { arguments(of: $0).dropFirst().first }.flatMap { $0.hasPrefix(":") ? Int($0.dropFirst()) : nil }
        }
        guard let number else { return nil }
        guard let prefix = kind.authorityPrefix else { return (runtime + "/" + socket, number, nil) }
        guard let authority = files.first(where: { $0.hasPrefix(prefix) }) else { return nil }
        return (runtime + "/" + socket, number, runtime + "/" + authority)
    }

    /// The display number of the last line of `log` that holds `marker`, read just after it.
    static func displayNumber(in log: String, after marker: String) -> Int? {
        guard let line = log.split(separator: "\n").last(where: { $0.contains(marker) }),
            let range = line.range(of: marker)
        else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// The directory of a cgroup named like a systemd user unit, in every
    /// hierarchy libsystemd may read: each cgroup2 mount, and the v1 `name=systemd` one.
    private static func unitCgroups() -> [String] {
        let unit = "user.slice/user-\(getuid()).slice/user@\(getuid()).service/app.slice/openudid-\(UUID().uuidString.prefix(8)).service"
        return read("/proc/self/mounts").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 3 else { return nil }
            let hierarchy = fields[2] == "cgroup2" || fields[2] == "cgroup" && fields[3].split(separator: ",").contains("name=systemd")
            return hierarchy ? "\(fields[1])/\(unit)" : nil
        }
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The compositor's log so far.
    public var log: String { Self.read(logPath) }

    private var logTail: String { log.split(separator: "\n").suffix(12).joined(separator: "\n") }

    /// The environment a client of this session gets on top of its own:
    /// `WAYLAND_DISPLAY`, and unless `withDisplay` is false `DISPLAY` with the
    /// `XAUTHORITY` Xwayland asks for.
    public func environment(withDisplay: Bool = true) -> [String: String] {
        var environment = ["WAYLAND_DISPLAY": waylandDisplay]
        if withDisplay {
            environment["DISPLAY"] = display
            environment["XAUTHORITY"] = authority
        }
        return environment
    }

    // MARK: - Xwayland

    /// The running Xwayland's process id, or nil while the compositor only listens for the first X client.
    public var xwayland: pid_t? { Self.xwayland(below: pid) }

    /// Waits until an Xwayland runs, other than `previous`.
    ///
    /// - Parameters:
    ///   - previous: An Xwayland that ended (a crash), whose successor to wait for; nil for any.
    ///   - timeout: How long to wait, in seconds.
    /// - Returns: Its process id.
    /// - Throws: `SandboxError` quoting the compositor's log when none comes in time.
    @discardableResult
    public func waitForXwayland(replacing previous: pid_t? = nil, timeout: TimeInterval = 30) throws(SandboxError) -> pid_t {
        var found: pid_t?
        guard
            waitUntil(
                timeout: timeout, interval: 0.02,
                {
                    found = xwayland
                    return found != nil && found != previous
                }), let found
        else {
            throw SandboxError("no Xwayland came up on \(display) within \(Int(timeout)) s; \(kind)'s log ends:\n\(logTail)")
        }
        return found
    }

    /// Kills the running Xwayland with SIGKILL, as a crash would, and waits until it is gone.
    ///
    /// - Returns: The process id of the Xwayland killed.
    /// - Throws: `SandboxError` when no Xwayland runs, or it does not end.
    @discardableResult
    public func killXwayland(timeout: TimeInterval = 20) throws(SandboxError) -> pid_t {
        guard let victim = xwayland else {
            throw SandboxError("no Xwayland runs on \(display) to kill; \(kind)'s log ends:\n\(logTail)")
        }
        Foundation.kill(victim, SIGKILL)
        guard waitUntil(timeout: timeout, interval: 0.01, { !Self.isAlive(victim) }) else {
            throw SandboxError("Xwayland \(victim) did not end within \(Int(timeout)) s of SIGKILL")
        }
        return victim
    }

    /// The command line of `pid`, one element per argument.
    public static func arguments(of pid: pid_t) -> [String] {
        read("/proc/\(pid)/cmdline").split(separator: "\0").map(String.init)
    }

    /// The Xwayland among the running descendants of `root`.
    private static func xwayland(below root: pid_t) -> pid_t? {
        descendants(of: root).first { $0.name == "Xwayland" }?.pid
    }

    /// Every running process below `root`, with its name, from /proc.
    private static func descendants(of root: pid_t) -> [(pid: pid_t, name: String)] {
        var children: [pid_t: [(pid: pid_t, name: String)]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry) else { continue }
            var fields: [Substring: Substring] = [:]
            for line in read("/proc/\(pid)/status").split(separator: "\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                if pair.count == 2 { fields[pair[0]] = pair[1].drop { $0 == "\t" || $0 == " " } }
            }
            guard let parent = fields["PPid"].flatMap({ pid_t($0) }), let name = fields["Name"],
                fields["State"]?.hasPrefix("Z") == false
            else { continue }
            children[parent, default: []].append((pid, String(name)))
        }
        var found: [(pid: pid_t, name: String)] = []
        var queue = [root]
        while let next = queue.popLast() {
            let below = children[next] ?? []
            found += below
            queue += below.map(\.pid)
        }
        return found
    }

    // MARK: - Life and death

    /// Whether the compositor still runs.
    public var isRunning: Bool { lock.withLock { guardian?.isRunning == true && Self.isAlive(pid) } }

    /// Stops the compositor politely (SIGTERM), which ends Xwayland and the
    /// compositor's own children with it, waits for them, and removes its
    /// directory and cgroup.
    public func stop() {
        lock.withLock {
            guard let guardian else { return }
            self.guardian = nil
            Self.end(guardian, pid: pid, bus: bus, directory: directory, cgroups: unitCgroups)
        }
    }

    /// Ends the compositor `guardian` started as `pid` (0 when it never said),
    /// its leftover descendants and its bus, and removes what it had.
    private static func end(_ guardian: ChildProcess, pid: pid_t, bus: SessionBus, directory: String, cgroups: [String]) {
        let children = pid > 0 ? descendants(of: pid) : []
        guardian.closeInput()
        if guardian.wait(timeout: 10) == nil {
            if pid > 0 { Foundation.kill(pid, SIGKILL) }
            guardian.kill9()
        }
        ChildProcess.track(pid, false)
        // Xwayland ignores SIGTERM and ends when it loses its compositor; one
        // that lingers is the compositor's orphan, known by its pid and its name.
        for child in children where !waitUntil(timeout: 10, { !isAlive(child.pid, named: child.name) }) {
            Foundation.kill(child.pid, SIGKILL)
        }
        bus.stop()
        try? FileManager.default.removeItem(atPath: directory)
        // Only the unit's own cgroup: the slices above it may be another compositor's way in.
        for cgroup in cgroups { rmdir(cgroup) }
    }

    /// Whether `pid` runs (a zombie does not), and is still called `name` when one is given.
    private static func isAlive(_ pid: pid_t, named name: String? = nil) -> Bool {
        let status = read("/proc/\(pid)/status")
        return !status.isEmpty && !status.contains("State:\tZ") && (name.map { status.hasPrefix("Name:\t\($0)\n") } ?? true)
    }

    deinit { stop() }
}
