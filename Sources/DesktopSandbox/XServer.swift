import Foundation

/// A private Xvfb that never touches a real desktop, never outlives this
/// process, and can be killed and brought back as a crashed server would be.
///
/// The server must go when this process goes, even when no `deinit` runs (a
/// static shared server) or the process dies by a signal. Xvfb has no option for
/// that, so a small `sh` guard starts it and then blocks reading its standard
/// input, a pipe whose only writer is this process: when this process goes,
/// however it goes, the kernel closes the pipe, the read returns end of file and
/// the guard stops Xvfb. Writing `kill` on the pipe makes the guard SIGKILL
/// Xvfb instead, for a crash. Xvfb reports its display number with
/// `-displayfd` once it accepts connections, also when the number is given.
public final class XServer: @unchecked Sendable {
    // `guardian`, `number` and `serverPID` are replaced by `restart` and read
    // everywhere else; every access holds `lock`.
    private let lock = NSLock()
    private var guardian: ChildProcess?
    private var number: Int
    private var serverPID: pid_t
    private let executable: String
    private let screen: String
    private let maxClients: Int?

    /// How the display number is chosen.
    public enum Numbering: Sendable {
        /// The server takes the lowest free number itself.
        case serverPicks
        /// A random number far above those, so a number freed by a crash is not
        /// soon taken by another `-displayfd` server and a restart can come back on it.
        case randomHigh
    }

    /// The display number, such as 7.
    public var displayNumber: Int { lock.withLock { number } }

    /// The display name, such as `:7`.
    public var display: String { ":\(displayNumber)" }

    /// The process id of Xvfb itself.
    public var pid: pid_t { lock.withLock { serverPID } }

    /// Whether the server started last is running.
    public var isRunning: Bool { lock.withLock { guardian?.isRunning == true && Foundation.kill(serverPID, 0) == 0 } }

    /// Starts a server and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - screen: The size and depth of screen 0, such as `800x600x24`.
    ///   - numbering: How the display number is chosen.
    ///   - maxClients: The most clients the server admits (Xvfb's `-maxclients`:
    ///     64 to 2048, a power of two); nil for its default, 256.
    ///   - timeout: How long the server may take to come up, in seconds.
    /// - Throws: `SandboxError` when Xvfb is missing or does not come up.
    public init(
        screen: String = "800x600x24", numbering: Numbering = .serverPicks, maxClients: Int? = nil, timeout: TimeInterval = 30
    ) throws(SandboxError) {
        executable = try Tools.require("Xvfb", package: "xvfb")
        self.screen = screen
        self.maxClients = maxClients
        var failure = SandboxError("no free display number for Xvfb")
        // A server that picks its own number can still lose a race for it to
        // another starting at the same moment, so it gets three tries too.
        for _ in 0..<(numbering == .serverPicks ? 3 : 20) {
            do {
                let started = try Self.launch(
                    executable, screen: screen, maxClients: maxClients,
                    number: numbering == .serverPicks ? nil : Int.random(in: 3000..<30000), timeout: timeout)
                (guardian, number, serverPID) = (started.guardian, started.number, started.pid)
                return
            } catch {
                failure = error
            }
        }
        throw failure
    }

    private static let guardScript = """
        "$@" </dev/null &
        xvfb=$!
        echo "pid $xvfb"
        exec >/dev/null
        IFS= read -r order || order=stop
        if [ "$order" = kill ]; then kill -KILL "$xvfb"; else kill -TERM "$xvfb"; fi
        wait "$xvfb"
        """

    private static func launch(
        _ executable: String, screen: String, maxClients: Int?, number: Int?, timeout: TimeInterval
    ) throws(SandboxError) -> (guardian: ChildProcess, number: Int, pid: pid_t) {
        // Only Xvfb keeps the guard's standard output (the display pipe), so the
        // pipe ends if Xvfb dies at start-up; its standard error is the guard's.
        let arguments =
            ["-c", guardScript, "xvfb-guard", executable] + (number.map { [":\($0)"] } ?? [])
            + ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", screen, "-noreset"]
            + (maxClients.map { ["-maxclients", "\($0)"] } ?? [])
        let guardian = try ChildProcess(
            "/bin/sh", arguments, environment: ["PATH": "/usr/bin:/bin"], input: .pipe, reading: .onDemand)
        var pid: pid_t?
        var reported: Int?
        let deadline = Date().addingTimeInterval(timeout)
        while reported == nil || pid == nil, let line = guardian.nextLine(timeout: deadline.timeIntervalSinceNow) {
            if line.hasPrefix("pid ") { pid = pid_t(line.dropFirst(4)) } else { reported = Int(line.trimmingCharacters(in: .whitespaces)) }
        }
        guard let reported, let pid else {
            guardian.closeInput()
            _ = guardian.wait(timeout: 2)
            let why = guardian.standardError.split(separator: "\n").suffix(3).joined(separator: "; ")
            guardian.kill9()
            let which = number.map { "display :\($0)" } ?? "a display"
            throw SandboxError("Xvfb did not start on \(which) within \(Int(timeout)) s\(why.isEmpty ? "" : ": \(why)")")
        }
        ChildProcess.track(pid, true)
        return (guardian, reported, pid)
    }

    /// Kills the server with SIGKILL, as a crash or a power cut would, and waits until it is gone.
    public func kill() {
        lock.withLock {
            guard let guardian else { return }
            defer { ChildProcess.track(serverPID, false) }
            guardian.writeInput(Data("kill\n".utf8))
            guardian.closeInput()
            if guardian.wait(timeout: 10) == nil {
                Foundation.kill(serverPID, SIGKILL)
                guardian.kill9()
            }
        }
    }

    /// Kills the server if it runs, and starts a new one on the same display number.
    ///
    /// Every client of the old server, and every selection they owned, is gone.
    /// Another program's `-displayfd` server may take the freed number first; with
    /// `elsewhereIfTaken` the server then comes back on a number of its own
    /// choosing, and the returned text says so.
    /// - Returns: Nil when the server came back on its number, or a note saying where it came back.
    /// - Throws: `SandboxError` when no server comes up.
    @discardableResult
    public func restart(timeout: TimeInterval = 30, elsewhereIfTaken: Bool = true) throws(SandboxError) -> String? {
        kill()
        lock.lock()
        defer { lock.unlock() }
        var failure = SandboxError("Xvfb did not start")
        for attempt in 0..<3 {
            if attempt > 0 { usleep(100_000) }
            do {
                let started = try Self.launch(executable, screen: screen, maxClients: maxClients, number: number, timeout: timeout)
                (guardian, serverPID) = (started.guardian, started.pid)
                return nil
            } catch {
                failure = error
            }
        }
        guard elsewhereIfTaken else { throw failure }
        let started = try Self.launch(executable, screen: screen, maxClients: maxClients, number: nil, timeout: timeout)
        let old = number
        (guardian, number, serverPID) = (started.guardian, started.number, started.pid)
        return "the X server could not come back on :\(old) (\(failure)), so it came back on :\(number)"
    }

    /// Stops the server politely (SIGTERM), and waits for it.
    public func stop() {
        lock.withLock {
            guard let guardian else { return }
            defer { ChildProcess.track(serverPID, false) }
            guardian.closeInput()
            if guardian.wait(timeout: 5) == nil {
                Foundation.kill(serverPID, SIGKILL)
                guardian.kill9()
            }
            self.guardian = nil
        }
    }

    deinit { stop() }
}
