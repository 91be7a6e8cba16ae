import Foundation
import ProcessSupport
import Synchronization

/// The children the lab has started and not yet reaped, so that an interrupted
/// run can take them all down with it instead of leaving an X server or a keyring
/// daemon behind.
struct ChildRegistry {
    var pids: Set<Int32> = []
    /// Set once the lab is going down: no child may start after that.
    var stopping = false
}

/// The registry; a child starts with it locked, so none can slip past a stop.
let liveChildren = Mutex(ChildRegistry())

/// Forbids new children and kills every live one with SIGKILL.
func killEveryChild() {
    let pids = liveChildren.withLock { registry in
        registry.stopping = true
        return registry.pids
    }
    for pid in pids { kill(pid, SIGKILL) }
}

/// A process the lab started, with its standard output collected line by line.
final class ChildProcess: @unchecked Sendable {
    // `lines`, `buffer`, `closed`, `lastLine`, `lastLineAt`, `errorText` and
    // `errorClosed` are guarded by `condition`. `process`, `launched` and
    // `readers` are set up in `init` and only queried afterwards.
    private let condition = NSCondition()
    private var lines: [String] = []
    private var buffer = Data()
    private var closed = false
    private var errorText = Data()
    private var errorClosed = false
    private var lastLine: String?
    private var lastLineAt = Date.distantPast
    private let process = Process()
    private var launched = false
    private var readers: [OutputReader] = []
    let name: String

    /// Starts `executable`; `input`, if any, is written to its standard input, which is then closed.
    init(_ executable: String, _ arguments: [String], environment: [String: String], input: Data? = nil) throws(LabError) {
        name = (executable as NSString).lastPathComponent
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        let inPipe = Pipe()
        // Only this child may hold these pipes: a child that another thread starts at
        // the same moment would otherwise inherit them, and with them the power to
        // keep this child's output open after it has exited.
        for handle in [
            out.fileHandleForReading, out.fileHandleForWriting, err.fileHandleForReading,
            err.fileHandleForWriting, inPipe.fileHandleForReading, inPipe.fileHandleForWriting
        ] {
            _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
        }
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input == nil ? FileHandle.nullDevice : inPipe
        let process = self.process
        let failure: LabError? = liveChildren.withLock { registry in
            guard !registry.stopping else { return LabError("the lab is stopping; \(executable) was not started") }
            do {
                try process.run()
            } catch {
                return LabError("cannot start \(executable): \(error.localizedDescription)")
            }
            registry.pids.insert(process.processIdentifier)
            return nil
        }
        if let failure { throw failure }
        launched = true
        // Our copies of the write ends go, so the end of output comes when the child's do.
        try? out.fileHandleForWriting.close()
        try? err.fileHandleForWriting.close()
        readers = [
            OutputReader(
                out.fileHandleForReading, received: { [weak self] in self?.receive($0) },
                finished: { [weak self] in self?.receive(Data()) }),
            OutputReader(
                err.fileHandleForReading, received: { [weak self] in self?.receiveError($0) },
                finished: { [weak self] in self?.receiveError(Data()) })
        ]
        if let input {
            inPipe.fileHandleForWriting.write(input)
            try? inPipe.fileHandleForWriting.close()
        }
    }

    private func receiveError(_ data: Data) {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        if data.isEmpty {
            errorClosed = true
        } else {
            errorText.append(data.prefix(max(0, 16_384 - errorText.count)))
        }
    }

    private func receive(_ data: Data) {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        guard !data.isEmpty else {
            closed = true
            return
        }
        buffer.append(data)
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex...newline)
            lines.append(line)
            lastLine = line
            lastLineAt = Date()
        }
    }

    /// Takes the next unread line of standard output, waiting up to `timeout`; nil at its end or on time-out.
    func nextLine(timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.isEmpty && !closed {
            if !condition.wait(until: deadline) { break }
        }
        return lines.isEmpty ? nil : lines.removeFirst()
    }

    /// The latest line the process printed, read or not, and when it came.
    var latest: (line: String?, at: Date) {
        condition.withLock { (lastLine, lastLineAt) }
    }

    /// What the process wrote to standard error so far (the first 16 KiB).
    var standardError: String {
        condition.withLock { String(decoding: errorText, as: UTF8.self) }
    }

    /// Waits up to `timeout` for the ends of standard output and standard error, so
    /// that what the process printed just before it exited is not lost.
    func waitForEndOfOutput(timeout: TimeInterval) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !(closed && errorClosed) {
            if !condition.wait(until: deadline) { break }
        }
    }

    /// Every line of standard output not yet taken, with an unfinished last line.
    func takeRemainingOutput() -> [String] {
        condition.withLock {
            defer { lines.removeAll() }
            return buffer.isEmpty ? lines : lines + [String(decoding: buffer, as: UTF8.self)]
        }
    }

    /// The exit status, once the process has been reaped.
    var exitStatus: Int32 { process.terminationStatus }

    /// The process id.
    var pid: Int32 { process.processIdentifier }

    /// Whether the process still runs.
    var isRunning: Bool { process.isRunning }

    /// Sends SIGTERM and, if the process is still there after `grace`, SIGKILL; then reaps it.
    ///
    /// A child inherits the signal mask of the thread that started it, and a mask
    /// with SIGTERM blocked would make a polite request wait forever.
    func stop(grace: TimeInterval = 2) {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(grace)
            while process.isRunning && Date() < deadline { usleep(2_000) }
        }
        kill9()
    }

    /// Kills the process with SIGKILL, as a crash or a power cut would, and reaps it.
    func kill9() {
        guard launched else { return }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let pid = process.processIdentifier
        liveChildren.withLock { _ = $0.pids.remove(pid) }
    }

    deinit {
        kill9()
        readers.forEach { $0.stop() }
    }
}

/// What a command that ran to completion printed.
struct CommandOutput {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs `executable` to completion, or kills it after `timeout`.
///
/// The end of the command is its exit, not the end of its output, which a
/// process it left behind could hold open.
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String],
    timeout: TimeInterval = 20
) throws(LabError) -> CommandOutput {
    let child = try ChildProcess(executable, arguments, environment: environment)
    let deadline = Date().addingTimeInterval(timeout)
    while child.isRunning && Date() < deadline { usleep(1_000) }
    if child.isRunning {
        child.kill9()
        throw LabError("\(child.name) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
    }
    child.kill9()
    child.waitForEndOfOutput(timeout: 1)
    return CommandOutput(
        status: child.exitStatus, standardOutput: child.takeRemainingOutput().joined(separator: "\n"),
        standardError: child.standardError)
}
