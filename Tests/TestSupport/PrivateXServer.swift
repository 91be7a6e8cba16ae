import Foundation

/// A private Xvfb started for one test suite, on a display number the server picks itself.
///
/// `-displayfd` makes Xvfb choose a free display and write its number to a pipe,
/// so suites running in parallel never collide and never touch the user's desktop.
public final class PrivateXServer: @unchecked Sendable {
    // Mutable state is only the Process, which is touched from `stop()` and
    // `deinit`; both are serialised by `lock`.
    private let lock = NSLock()
    private var process: Process?

    /// The display name, for example `":17"`.
    public let display: String

    /// The server's process id.
    public var pid: Int32 { lock.withLock { process?.processIdentifier ?? 0 } }

    /// Starts Xvfb and waits until it accepts connections.
    public init(timeout: TimeInterval = 10) throws {
        let process = Process()
        process.executableURL = try Tools.find("Xvfb")
        process.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "800x600x24", "-noreset"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var collected = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while !collected.contains(UInt8(ascii: "\n")) {
            guard Date() < deadline, process.isRunning else {
                process.terminate()
                throw HarnessError("Xvfb did not report a display within \(timeout) s")
            }
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            collected.append(chunk)
        }
        guard let text = String(data: collected, encoding: .utf8),
              let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw HarnessError("Xvfb wrote no display number")
        }
        self.display = ":\(number)"
        self.process = process
    }

    /// Kills the server with SIGKILL, as a crash would, and waits for it to go.
    public func kill() {
        lock.withLock {
            guard let process, process.isRunning else { return }
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Stops the server: SIGTERM, then SIGKILL if it is still there after a second.
    ///
    /// A process started from a Dispatch worker thread inherits that thread's
    /// signal mask, in which SIGTERM may be blocked; waiting for SIGTERM alone
    /// could then wait forever.
    public func stop() {
        lock.withLock {
            guard let process else { return }
            if process.isRunning {
                process.terminate()
                let deadline = Date().addingTimeInterval(1)
                while process.isRunning && Date() < deadline { usleep(5_000) }
                if process.isRunning {
                    Foundation.kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
            }
            self.process = nil
        }
    }

    deinit { stop() }
}

/// A failure of the test harness itself (a tool missing, a server that would not start).
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Finds the tools and built products the tests run.
public enum Tools {
    /// Looks `name` up on PATH (and the usual system directories).
    public static func find(_ name: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin"] {
            let candidate = URL(fileURLWithPath: dir).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw HarnessError("\(name) is not installed; run scripts/bootstrap")
    }

    /// The directory that holds the package's built executables (beside the test bundle).
    public static var productsDirectory: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // On some layouts the test binary sits inside a `.xctest` directory.
        while dir.path.hasSuffix(".xctest") || dir.lastPathComponent == "Contents" || dir.lastPathComponent == "MacOS" {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }

    /// A built executable of this package, by product name.
    public static func product(_ name: String) -> URL {
        productsDirectory.appendingPathComponent(name)
    }
}
