import Foundation
import ProcessSupport

/// A separate process started by a test, with its standard output read line by line.
public final class ChildProcess: @unchecked Sendable {
    // `lines`, `buffer` and `closed` are guarded by `condition`.
    private let condition = NSCondition()
    private var lines: [String] = []
    private var buffer = Data()
    private var closed = false
    private let process = Process()
    private var errorData = Data()
    private var readers: [OutputReader] = []

    /// The child's process id.
    public var pid: Int32 { process.processIdentifier }

    /// Starts `executable` with `arguments` and `environment` (merged over nothing: pass what it needs).
    public init(_ executable: URL, _ arguments: [String], environment: [String: String], stdin: Bool = false) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.runWithDefaultSignalMask()
        // Our copies of the write ends go, so the end of output comes when the child's do.
        try? out.fileHandleForWriting.close()
        try? err.fileHandleForWriting.close()
        readers = [
            OutputReader(
                out.fileHandleForReading, received: { [weak self] in self?.receive($0) },
                finished: { [weak self] in self?.receive(Data()) }),
            OutputReader(
                err.fileHandleForReading,
                received: { [weak self] data in
                    guard let self else { return }
                    self.condition.withLock { self.errorData.append(data) }
                }, finished: {})
        ]
    }

    private func receive(_ data: Data) {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        if data.isEmpty {
            closed = true
            return
        }
        buffer.append(data)
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
            lines.append(line)
            buffer.removeSubrange(buffer.startIndex...newline)
        }
    }

    /// Waits for the next line of standard output, or nil at end of output or after `timeout`.
    public func nextLine(timeout: TimeInterval = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.isEmpty && !closed {
            if !condition.wait(until: deadline) { break }
        }
        return lines.isEmpty ? nil : lines.removeFirst()
    }

    /// What the child wrote to standard error so far.
    public var standardError: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: errorData, as: UTF8.self)
    }

    /// Sends `signal` to the child.
    public func signal(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits for the child to exit and returns its exit status (or nil after `timeout`).
    @discardableResult
    public func wait(timeout: TimeInterval = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return nil }
            usleep(5_000)
        }
        return process.terminationStatus
    }

    /// Whether the child still runs.
    public var isRunning: Bool { process.isRunning }

    deinit {
        readers.forEach { $0.stop() }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// The result of running a command to completion.
public struct CommandResult: Sendable {
    public var status: Int32
    public var standardOutput: String
    public var standardError: String
}

/// Runs `executable` to completion and captures its output.
public func runCommand(
    _ executable: URL, _ arguments: [String], environment: [String: String], input: String? = nil, timeout: TimeInterval = 30
) throws -> CommandResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = environment
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    if let input {
        let inPipe = Pipe()
        process.standardInput = inPipe
        try process.runWithDefaultSignalMask()
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try? inPipe.fileHandleForWriting.close()
    } else {
        process.standardInput = FileHandle.nullDevice
        try process.runWithDefaultSignalMask()
    }
    // Read both pipes as data arrives, so a chatty child cannot block on a full pipe.
    // Once the child has exited, its ends of file are awaited only briefly: a process
    // that another test starts at the same moment (an Xvfb that lives as long as the
    // test process) can inherit a copy of a pipe's write end, and the end of file
    // would then come only when that process exits.
    try? out.fileHandleForWriting.close()
    try? err.fileHandleForWriting.close()
    let output = CapturedOutput()
    let readers = [
        OutputReader(
            out.fileHandleForReading, received: { output.receive($0, standardError: false) },
            finished: { output.receive(Data(), standardError: false) }),
        OutputReader(
            err.fileHandleForReading, received: { output.receive($0, standardError: true) },
            finished: { output.receive(Data(), standardError: true) })
    ]
    defer { readers.forEach { $0.stop() } }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(2_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw HarnessError("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
    }
    process.waitUntilExit()
    let (outData, errData) = output.waitForEnds(timeout: 2)
    return CommandResult(
        status: process.terminationStatus,
        standardOutput: String(decoding: outData, as: UTF8.self),
        standardError: String(decoding: errData, as: UTF8.self))
}

/// The output of a child, collected from reading handlers; every access holds `condition`.
private final class CapturedOutput: @unchecked Sendable {
    private let condition = NSCondition()
    private var out = Data(), err = Data()
    private var outEnded = false, errEnded = false

    func receive(_ data: Data, standardError: Bool) {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        switch (standardError, data.isEmpty) {
        case (false, true): outEnded = true
        case (false, false): out.append(data)
        case (true, true): errEnded = true
        case (true, false): err.append(data)
        }
    }

    /// Both outputs, once both have ended or `timeout` has passed.
    func waitForEnds(timeout: TimeInterval) -> (Data, Data) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !(outEnded && errEnded) {
            if !condition.wait(until: deadline) { break }
        }
        return (out, err)
    }
}
