import Foundation

/// A private Xvfb that a test can kill, as a crash would, and start again on
/// the same display number, as a restarted X server would come back.
///
/// Servers started with `-displayfd` take the lowest free number, so a number
/// freed by the kill would soon be taken by another test's server. This one
/// therefore picks a random high number, far above those, trying others while
/// one is in use; a restart asks for the same number. Either way Xvfb reports
/// the number on a pipe only once it accepts connections.
public final class RestartableXServer: @unchecked Sendable {
    // `process` is touched by `kill()`, `restart()` and `deinit`, all under `lock`.
    private let lock = NSLock()
    private var process: Process?

    /// The display number the server runs on, before and after a restart.
    public let number: Int

    /// The display name, for example `":17"`.
    public var display: String { ":\(number)" }

    /// Whether a server started by this object is running now.
    public var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    /// Starts Xvfb on a display it picks and waits until it accepts connections.
    public init(timeout: TimeInterval = 10) throws {
        var failure: Error?
        for _ in 0..<20 {
            let candidate = Int.random(in: 3000..<30000)
            do {
                let (process, number) = try Self.start(display: candidate, timeout: timeout)
                self.process = process
                self.number = number
                return
            } catch {
                failure = error
            }
        }
        throw failure ?? HarnessError("no free display number for Xvfb")
    }

    /// Kills the server with SIGKILL and waits until it is gone.
    public func kill() {
        lock.withLock {
            guard let process, process.isRunning else { return }
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Starts a new server on the same display number and waits until it accepts connections.
    ///
    /// - Throws: `HarnessError` when a server is still running or the new one does not come up.
    public func restart(timeout: TimeInterval = 10) throws {
        try lock.withLock {
            if let process, process.isRunning { throw HarnessError("the X server on \(display) is still running") }
            let (started, _) = try Self.start(display: number, timeout: timeout)
            process = started
        }
    }

    private static func start(display: Int, timeout: TimeInterval) throws -> (Process, Int) {
        let process = Process()
        process.executableURL = try Tools.find("Xvfb")
        process.arguments = [":\(display)", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "800x600x24", "-noreset"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var collected = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while !collected.contains(UInt8(ascii: "\n")) && Date() < deadline && process.isRunning {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            collected.append(chunk)
        }
        guard let text = String(data: collected, encoding: .utf8),
            let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            if process.isRunning {
                Foundation.kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            throw HarnessError("Xvfb :\(display) reported no display number within \(timeout) s (the number may be in use)")
        }
        return (process, number)
    }

    deinit { kill() }
}
