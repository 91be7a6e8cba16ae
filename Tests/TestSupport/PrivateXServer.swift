import Foundation

/// A private Xvfb started for one test suite, on a display number the server picks itself.
///
/// `-displayfd` makes Xvfb choose a free display and write its number to a pipe,
/// so suites running in parallel never collide and never touch the user's desktop.
///
/// The server must not outlive the test process, even when that process never
/// runs `deinit` (a static shared server) or dies by a signal. Xvfb has no
/// option for that and `Process` cannot set `PR_SET_PDEATHSIG`, which would in
/// any case fire when the spawning *thread* ends, and the threads of a test
/// run come and go. So a small `sh` guard starts Xvfb and then blocks reading
/// its standard input, a pipe whose only writer is this process: when the
/// test process goes away, however it goes, the kernel closes that pipe, the
/// read returns at end of file and the guard stops Xvfb. Writing `kill` on the
/// pipe makes the guard SIGKILL Xvfb instead, for tests of a server crash.
public final class PrivateXServer: @unchecked Sendable {
    // Mutable state is the guard process and its control pipe, touched from
    // `kill()`, `stop()` and `deinit`; all of them take `lock`.
    private let lock = NSLock()
    private var guardProcess: Process?
    private var control: FileHandle?

    /// The display name, for example `":17"`.
    public let display: String

    // Xvfb keeps no descriptor of the guard's: its stdin is /dev/null and its
    // stderr is discarded. The guard hands its own stdout (the display pipe)
    // to Xvfb alone, so the pipe reaches end of file if Xvfb dies at start-up.
    private static let guardScript = """
        "$@" </dev/null 2>/dev/null &
        xvfb=$!
        exec >/dev/null
        IFS= read -r order || order=stop
        if [ "$order" = kill ]; then kill -KILL "$xvfb"; else kill -TERM "$xvfb"; fi
        wait "$xvfb"
        """

    /// Starts Xvfb and waits until it accepts connections.
    public init(timeout: TimeInterval = 10) throws {
        let xvfb = try Tools.find("Xvfb")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", Self.guardScript, "xvfb-guard", xvfb.path,
            "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "800x600x24", "-noreset"
        ]
        let out = Pipe()
        let control = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = control
        try process.runWithDefaultSignalMask()
        // Only the guard may hold the pipe's read end.
        try? control.fileHandleForReading.close()
        var collected = Data()
        let deadline = Date().addingTimeInterval(timeout)
        while !collected.contains(UInt8(ascii: "\n")) {
            guard Date() < deadline, process.isRunning else { break }
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            collected.append(chunk)
        }
        try? out.fileHandleForReading.close()
        guard let text = String(data: collected, encoding: .utf8),
            let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            try? control.fileHandleForWriting.close()
            process.waitUntilExit()
            throw HarnessError("Xvfb reported no display number within \(timeout) s")
        }
        self.display = ":\(number)"
        self.guardProcess = process
        self.control = control.fileHandleForWriting
    }

    /// Kills the server with SIGKILL, as a crash would, and waits for it to go.
    public func kill() {
        lock.withLock {
            guard let guardProcess, let control else { return }
            try? control.write(contentsOf: Data("kill\n".utf8))
            try? control.close()
            self.control = nil
            guardProcess.waitUntilExit()
        }
    }

    /// Stops the server.
    public func stop() {
        lock.withLock {
            guard let guardProcess else { return }
            try? control?.close()
            control = nil
            guardProcess.waitUntilExit()
            self.guardProcess = nil
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
