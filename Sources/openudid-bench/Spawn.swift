import Foundation
import Synchronization

/// A failure of the benchmark's set-up: a tool missing, a child that would not start.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process started with posix_spawn, its standard output read line by line.
///
/// Not Foundation's Process: that one starts children with the spawning thread's
/// signal mask (a Dispatch worker blocks SIGTERM) and reads output on threads of
/// its own, whose wake-ups would land in the measurements. Here the child gets an
/// empty signal mask and default handlers, and output is read only when asked for.
final class Child {
    let pid: pid_t
    let name: String
    /// The read end of the child's standard output (non-blocking), or -1.
    let output: Int32
    /// Whether the child closed its standard output.
    private(set) var atEnd = false
    private var buffer: [UInt8] = []
    private var lines: [String] = []
    private var exited: (status: Int32, usage: rusage)?
    private let errorFile: String

    /// Starts `executable` with `arguments` in `environment` (nothing is inherited).
    ///
    /// - Parameters:
    ///   - input: Bytes for standard input (then closed); nil gives /dev/null.
    ///   - captureOutput: Whether to read standard output; false sends it to /dev/null.
    init(
        _ executable: String, _ arguments: [String], environment: [String: String], input: [UInt8]? = nil,
        captureOutput: Bool = true, scratch: String
    ) throws {
        name = (executable as NSString).lastPathComponent
        errorFile = scratch + "/stderr-\(name)-\(UUID().uuidString.prefix(8))"
        var outPipe: [Int32] = [-1, -1]
        var inPipe: [Int32] = [-1, -1]
        if captureOutput { try Self.makePipe(&outPipe) }
        if input != nil { try Self.makePipe(&inPipe) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, errorFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        if captureOutput { close(outPipe[1]) }
        if input != nil { close(inPipe[0]) }
        guard status == 0 else {
            if captureOutput { close(outPipe[0]) }
            if input != nil { close(inPipe[1]) }
            throw BenchError("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        Cleanup.started(pid)
        if captureOutput {
            _ = fcntl(outPipe[0], F_SETFL, fcntl(outPipe[0], F_GETFL) | O_NONBLOCK)
            output = outPipe[0]
        } else {
            output = -1
        }
        if let input {
            input.withUnsafeBytes { raw in _ = write(inPipe[1], raw.baseAddress, raw.count) }
            close(inPipe[1])
        }
    }

    /// A pipe whose ends do not leak into other children.
    private static func makePipe(_ fds: inout [Int32]) throws {
        guard pipe(&fds) == 0 else { throw BenchError("pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    deinit {
        if exited == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
        if output >= 0 { close(output) }
        unlink(errorFile)
    }

    /// Reads what the child has written so far, without blocking; returns false at end of output.
    @discardableResult
    func drain() -> Bool {
        guard output >= 0, !atEnd else { return false }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count > 0 {
                buffer += chunk[0..<count]
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
            } else if count == 0 {
                atEnd = true
                return false
            } else {
                return errno == EAGAIN || errno == EINTR
            }
        }
    }

    /// Takes the lines read so far.
    func takeLines() -> [String] {
        defer { lines.removeAll() }
        return lines
    }

    /// Waits for the next line of output, or nil at end of output or after `timeout`.
    func nextLine(timeout: Duration = .seconds(10)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let open = drain()
            if !lines.isEmpty { return lines.removeFirst() }
            guard open, ContinuousClock.now < deadline else { return nil }
            var fds = [pollfd(fd: output, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(clamping: milliseconds(until: deadline)))
        }
    }

    /// Every line until end of output (the child exits), or until `timeout`.
    func allLines(timeout: Duration) -> [String] {
        var collected: [String] = []
        while let line = nextLine(timeout: timeout) { collected.append(line) }
        return collected
    }

    /// What the child wrote to standard error.
    var standardError: String {
        (try? String(contentsOfFile: errorFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    func signal(_ number: Int32) {
        if exited == nil { kill(pid, number) }
    }

    /// Waits for the child to exit; returns its wait status and resource usage.
    @discardableResult
    func wait() -> (status: Int32, usage: rusage) {
        if let exited { return exited }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        exited = (status, usage)
        Cleanup.ended(pid)
        return (status, usage)
    }

    /// Waits up to `timeout` for the child to exit; true if it did.
    func wait(timeout: Duration) -> Bool {
        if exited != nil { return true }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            var usage = rusage()
            let result = wait4(pid, &status, WNOHANG, &usage)
            if result == pid {
                exited = (status, usage)
                Cleanup.ended(pid)
                return true
            }
            usleep(2_000)
        }
        return false
    }

    /// Asks the child to stop (SIGTERM), then kills it if it is still there after `grace`.
    func stop(grace: Duration = .seconds(2)) {
        signal(SIGTERM)
        if !wait(timeout: grace) {
            signal(SIGKILL)
            wait()
        }
    }

    /// Whether the child exited normally with status 0.
    var succeeded: Bool {
        guard let status = exited?.status else { return false }
        return status & 0x7f == 0 && (status >> 8) & 0xff == 0
    }
}

/// Milliseconds from now until `deadline`, at least 0.
func milliseconds(until deadline: ContinuousClock.Instant) -> Int {
    let remaining = deadline - .now
    guard remaining > .zero else { return 0 }
    let (seconds, attoseconds) = remaining.components
    return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000) + 1
}

/// Waits for output from any of `children` until `deadline`.
func waitForOutput(_ children: [Child], until deadline: ContinuousClock.Instant) {
    var fds = children.filter { $0.output >= 0 && !$0.atEnd }.map { pollfd(fd: $0.output, events: Int16(POLLIN), revents: 0) }
    guard !fds.isEmpty else { return }
    _ = poll(&fds, nfds_t(fds.count), Int32(clamping: milliseconds(until: deadline)))
}

/// What must not outlive the benchmark when it is interrupted: every child it
/// started (the X server, owners, participants) and its scratch directories.
enum Cleanup {
    private static let state = Mutex<(children: Set<pid_t>, directories: Set<String>)>(([], []))

    static func started(_ pid: pid_t) { state.withLock { _ = $0.children.insert(pid) } }
    static func ended(_ pid: pid_t) { state.withLock { _ = $0.children.remove(pid) } }
    static func created(_ directory: String) { state.withLock { _ = $0.directories.insert(directory) } }
    static func removed(_ directory: String) { state.withLock { _ = $0.directories.remove(directory) } }

    /// On SIGINT, SIGTERM or SIGHUP: kill the children, remove the scratch directories, exit 130.
    static func stopChildrenOnSignals() {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let (children, directories) = state.withLock { ($0.children, $0.directories) }
                for pid in children { kill(pid, SIGKILL) }
                for directory in directories { try? FileManager.default.removeItem(atPath: directory) }
                FileHandle.standardError.write(Data("openudid-bench: interrupted; stopped \(children.count) child process(es)\n".utf8))
                exit(130)
            }
            source.resume()
            sources.append(source)
        }
    }

    // Written once, by the main thread before any measurement; only kept so the sources live.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
}
