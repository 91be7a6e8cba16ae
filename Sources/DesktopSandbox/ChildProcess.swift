import Foundation
import Synchronization

/// A process started with `posix_spawn`, its standard output read line by line
/// and its standard error kept.
///
/// Not Foundation's `Process`: a child inherits the signal mask of the thread that
/// starts it, and a Dispatch worker or a test runner's thread blocks SIGTERM, so a
/// polite request would wait for ever. Here the child gets an empty signal mask
/// and default handlers, as a child of a shell does. Every pipe is close-on-exec,
/// so a child started by another thread at the same moment cannot inherit this
/// child's pipes and hold its output open after it exits.
public final class ChildProcess: @unchecked Sendable {
    // `termination`, `settled` and `input` are guarded by `lock`; the output by its own
    // condition; everything else is immutable after init.
    private let lock = NSLock()
    private var termination: Termination?
    /// Whether the output was waited for after the child exited.
    private var settled = false
    private var input: Int32 = -1
    private let output: LineBuffer?
    /// Standard error: a pipe read by a thread of its own when output is read
    /// continuously, else an unlinked file, which wakes nothing.
    private let errorFile: Int32
    private let errors: LineBuffer?

    /// The process id.
    public let pid: pid_t
    /// The executable's file name, for messages.
    public let name: String

    /// How the child's standard output is read.
    public enum Reading: Sendable {
        /// By a thread of its own as it comes: lines carry the time they came,
        /// and a chatty child never blocks on a full pipe.
        case continuously
        /// Only when asked (`nextLine`, `drain`), with no thread: nothing wakes between asks, as a measurement needs.
        case onDemand
        /// Not at all: standard output goes to /dev/null.
        case discarded
    }

    /// What the child reads on standard input.
    public enum Input: Sendable {
        /// /dev/null.
        case none
        /// These bytes, then end of file.
        case data(Data)
        /// A pipe kept open until `closeInput()`: the child sees end of file when
        /// this process closes it or goes away, however it goes.
        case pipe
    }

    /// How a child ended, as `wait4` reports it.
    public struct Termination: Sendable {
        /// The raw wait status; -1 when the child was reaped elsewhere.
        public var status: Int32
        /// The resources the child used.
        public var usage: rusage
        /// The exit code, when the child exited.
        public var exitCode: Int32? { status >= 0 && status & 0x7f == 0 ? (status >> 8) & 0xff : nil }
        /// The signal that ended the child, when one did.
        public var signal: Int32? { status >= 0 && status & 0x7f != 0 && status & 0x7f != 0x7f ? status & 0x7f : nil }
    }

    /// Starts `executable` (an absolute path) with `arguments` in `environment`; nothing else is inherited.
    ///
    /// - Throws: `SandboxError` when the program stops everything (`killAll()`) or the spawn fails.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Input = .none,
        reading: Reading = .continuously
    ) throws(SandboxError) {
        Self.ignoreBrokenPipes
        name = (executable as NSString).lastPathComponent
        var errorPipe: [Int32] = [-1, -1]
        if reading == .continuously {
            try Self.makePipe(&errorPipe)
            errorFile = -1
        } else {
            var template = Array((NSTemporaryDirectory() + "/sandbox-stderr-XXXXXX").utf8CString)
            errorFile = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard errorFile >= 0 else { throw .system("cannot create a file for the standard error of \(name)") }
            _ = fcntl(errorFile, F_SETFD, FD_CLOEXEC)
            unlink(template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        var outPipe: [Int32] = [-1, -1]
        var inPipe: [Int32] = [-1, -1]
        if reading != .discarded { try Self.makePipe(&outPipe) }
        if case .none = input {} else { try Self.makePipe(&inPipe) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if inPipe[0] >= 0 {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if outPipe[1] >= 0 {
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, errorFile >= 0 ? errorFile : errorPipe[1], 2)
        // Nothing else of this process: not an X connection, a lock or another child's pipe,
        // which the child would otherwise hold open behind this process's back.
        _ = closeFrom?(&actions, 3)
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
        // The registry is held across the spawn, so no child slips past `killAll()`.
        // Everything the spawn writes is local to the closure and returned from it.
        let (status, pid) = registry.withLock { registry -> (Int32, pid_t) in
            guard !registry.stopping else { return (ECANCELED, 0) }
            var (actions, attributes, pid) = (actions, attributes, pid_t(0))
            let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            if status == 0 { registry.pids.insert(pid) }
            return (status, pid)
        }
        for descriptor in [outPipe[1], inPipe[0], errorPipe[1]] where descriptor >= 0 { close(descriptor) }
        guard status == 0 else {
            for descriptor in [outPipe[0], inPipe[1], errorFile, errorPipe[0]] where descriptor >= 0 { close(descriptor) }
            throw status == ECANCELED
                ? SandboxError("the program is stopping; \(executable) was not started")
                : .system("cannot start \(executable)", status)
        }
        self.pid = pid
        output = outPipe[0] >= 0 ? LineBuffer(outPipe[0], continuously: reading == .continuously) : nil
        errors = errorPipe[0] >= 0 ? LineBuffer(errorPipe[0], continuously: true) : nil
        self.input = inPipe[1]
        if case .data(let bytes) = input {
            writeInput(bytes)
            closeInput()
        }
    }

    /// Starts the executable at `url`, like `init(_:_:environment:input:reading:)`.
    public convenience init(
        _ url: URL, _ arguments: [String], environment: [String: String], input: Input = .none, reading: Reading = .continuously
    ) throws(SandboxError) {
        try self.init(url.path, arguments, environment: environment, input: input, reading: reading)
    }

    /// A process that runs children writes to their standard input and to
    /// the sockets of the daemons it started; one that exits first must make
    /// that write fail (EPIPE), not end this process with SIGPIPE. Children
    /// get the default action back (`posix_spawnattr_setsigdefault`).
    private static let ignoreBrokenPipes: Void = { _ = Glibc.signal(SIGPIPE, SIG_IGN) }()

    /// A pipe whose ends do not leak into other children.
    private static func makePipe(_ descriptors: inout [Int32]) throws(SandboxError) {
        guard pipe(&descriptors) == 0 else { throw .system("pipe") }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
    }

    /// Writes `bytes` to the child's standard input, if it is still open.
    public func writeInput(_ bytes: Data) {
        lock.withLock {
            guard input >= 0 else { return }
            var rest = bytes[...]
            while !rest.isEmpty {
                let count = rest.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                rest = rest.dropFirst(count)
            }
        }
    }

    /// Closes the child's standard input, so it reads end of file.
    public func closeInput() {
        lock.withLock {
            if input >= 0 { close(input) }
            input = -1
        }
    }

    // MARK: - Output

    /// Takes the next unread line of standard output, waiting up to `timeout` seconds; nil at its end or on time-out.
    public func nextLine(timeout: TimeInterval = 10) -> String? { output?.nextLine(timeout: timeout) }

    /// Every line until the end of output (the child exits), or until a line takes longer than `timeout` seconds.
    public func allLines(timeout: TimeInterval) -> [String] {
        var collected: [String] = []
        while let line = nextLine(timeout: timeout) { collected.append(line) }
        return collected
    }

    /// Reads what the child has written so far without blocking; false at the end of output.
    @discardableResult
    public func drain() -> Bool { output?.withLock { $0.readAvailable() } ?? false }

    /// Takes the lines read so far.
    public func takeLines() -> [String] { output?.withLock { $0.takeLines(partial: false) } ?? [] }

    /// Every line of standard output not yet taken, with an unfinished last line.
    /// Once the child has exited, first waits (up to 2 s) for the end of its
    /// output, so lines it printed just before exiting are not missed.
    public func takeRemainingOutput() -> [String] {
        settleAfterExit()
        return output?.withLock { $0.takeLines(partial: true) } ?? []
    }

    /// Everything on standard output not yet taken, as the child wrote it;
    /// once the child has exited, with everything up to the end of its output.
    public func takeRemainingText() -> String {
        settleAfterExit()
        return output?.withLock { $0.takeText() } ?? ""
    }

    /// A child that exited has closed its ends of the pipes, but the threads
    /// reading them may not have taken the last bytes yet; waits for them,
    /// once. A descendant that still holds a pipe open costs the 2 s, once.
    private func settleAfterExit() {
        let first = lock.withLock {
            guard termination != nil, !settled else { return false }
            settled = true
            return true
        }
        if first { waitForEndOfOutput(timeout: 2) }
    }

    /// The latest line the child printed, read or not, and when it was read.
    public var latest: (line: String?, at: Date) { output?.withLock { ($0.lastLine, $0.lastLineAt) } ?? (nil, .distantPast) }

    /// Waits up to `timeout` seconds for the ends of standard output and standard error,
    /// so that what the child printed just before it exited is not lost.
    public func waitForEndOfOutput(timeout: TimeInterval) {
        let deadline = Date().addingTimeInterval(timeout)
        output?.waitForEnd(timeout: timeout)
        errors?.waitForEnd(timeout: max(0, deadline.timeIntervalSinceNow))
    }

    /// Whether standard output has ended (or is not read at all).
    public var atEnd: Bool { output?.withLock { $0.closed } ?? true }

    /// The read end of standard output, for `poll` over several children read on demand; -1 when not read.
    public var outputDescriptor: Int32 { output?.descriptor ?? -1 }

    /// What the child wrote to standard error so far (its first 64 KiB); once
    /// it has exited, everything it wrote there.
    public var standardError: String {
        settleAfterExit()
        if let errors { return errors.withLock { String($0.text().prefix(65_536)) } }
        var bytes = [UInt8](repeating: 0, count: 65_536)
        let count = pread(errorFile, &bytes, bytes.count, 0)
        return String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
    }

    // MARK: - Life and death

    /// Whether the child still runs (a child that exited is reaped by this call).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// How many times the kernel has switched to a thread of the process so
    /// far (voluntary and involuntary context switches, summed over the
    /// threads /proc lists); nil when /proc cannot tell. A thread blocked in
    /// `poll` is never switched to, so a process that sleeps adds nothing.
    public var contextSwitches: Int? {
        let tasks = "/proc/\(pid)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return nil }
        var total = 0
        for thread in threads {
            guard let status = try? String(contentsOfFile: "\(tasks)/\(thread)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    /// Sends `signal` to the child, unless it has been reaped.
    public func signal(_ signal: Int32) {
        lock.withLock {
            if termination == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits for the child to exit and reaps it.
    @discardableResult
    public func wait() -> Termination { reap(blocking: true)! }

    /// Waits up to `timeout` seconds for the child to exit; returns `exitStatus`, or nil if it still runs.
    @discardableResult
    public func wait(timeout: TimeInterval) -> Int32? {
        waitUntil(timeout: timeout, interval: 0.002) { !isRunning } ? exitStatus : nil
    }

    /// The exit code, or the number of the signal that ended the child (as Foundation's
    /// `terminationStatus`); waits for the child.
    public var exitStatus: Int32 {
        let ending = wait()
        return ending.exitCode ?? ending.signal ?? -1
    }

    /// Whether the child exited with status 0; false while it runs.
    public var succeeded: Bool { lock.withLock { termination?.exitCode == 0 } }

    /// Sends SIGTERM and, if the child is still there after `grace` seconds, SIGKILL; then reaps it.
    public func stop(grace: TimeInterval = 2) {
        signal(SIGTERM)
        if wait(timeout: grace) == nil { kill9() }
    }

    /// Kills the child with SIGKILL, as a crash or a power cut would, and reaps it.
    public func kill9() {
        signal(SIGKILL)
        wait()
    }

    private func reap(blocking: Bool) -> Termination? {
        var status: Int32 = 0
        var usage = rusage()
        if !blocking {
            return lock.withLock {
                if termination == nil, wait4(pid, &status, WNOHANG, &usage) == pid { record(status, usage) }
                return termination
            }
        }
        if let ended = lock.withLock({ termination }) { return ended }
        var result: pid_t
        repeat { result = wait4(pid, &status, 0, &usage) } while result < 0 && errno == EINTR
        return lock.withLock {
            // Another thread's non-blocking reap may have won; it recorded the status then.
            if termination == nil { record(result == pid ? status : -1, usage) }
            return termination
        }
    }

    private func record(_ status: Int32, _ usage: rusage) {
        termination = Termination(status: status, usage: usage)
        _ = registry.withLock { $0.pids.remove(pid) }
    }

    /// Forbids new children and kills every live one with SIGKILL, for a program going down on a signal.
    ///
    /// - Returns: How many children were killed.
    @discardableResult
    public static func killAll() -> Int {
        let pids = registry.withLock { registry in
            registry.stopping = true
            return registry.pids
        }
        for pid in pids { kill(pid, SIGKILL) }
        return pids.count
    }

    /// Adds a process this one did not spawn itself (a guarded grandchild) to those `killAll()` kills, or takes it away.
    static func track(_ pid: pid_t, _ tracked: Bool) {
        registry.withLock { registry in
            if tracked { _ = registry.pids.insert(pid) } else { _ = registry.pids.remove(pid) }
        }
    }

    /// Whether `killAll()` has been called.
    public static var isStopping: Bool { registry.withLock { $0.stopping } }

    deinit {
        kill9()
        closeInput()
        output?.stopRequested.store(true, ordering: .relaxed)
        errors?.stopRequested.store(true, ordering: .relaxed)
        if errorFile >= 0 { close(errorFile) }
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its
/// headers declare only for GNU sources, so looked up by name.
private let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(
        symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

/// The children started and not yet reaped, so an interrupted program can take them down with it.
private struct Registry {
    var pids: Set<pid_t> = []
    /// Set once the program is going down: no child may start after that.
    var stopping = false
}

private let registry = Mutex(Registry())

/// What a command that ran to completion printed.
public struct CommandOutput: Sendable {
    /// The exit code, or the number of the signal that ended it.
    public var status: Int32
    /// Its standard output.
    public var standardOutput: String
    /// Its standard error.
    public var standardError: String
}

/// Runs `executable` to completion, or kills it after `timeout` seconds.
///
/// The end of the command is its exit, not the end of its output, which a
/// process it left behind could hold open.
/// - Throws: `SandboxError` when it cannot start or does not finish in time.
public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String], input: Data? = nil, timeout: TimeInterval = 30
) throws(SandboxError) -> CommandOutput {
    let child = try ChildProcess(executable, arguments, environment: environment, input: input.map { .data($0) } ?? .none)
    guard let status = child.wait(timeout: timeout) else {
        child.kill9()
        throw SandboxError("\(child.name) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
    }
    return CommandOutput(
        status: status, standardOutput: child.takeRemainingText(), standardError: child.standardError)
}
