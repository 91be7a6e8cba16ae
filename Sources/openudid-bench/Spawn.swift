import DesktopSandbox
import Foundation
import Synchronization

/// A failure of the benchmark's set-up: a tool missing, a child that would not start.
typealias BenchError = SandboxError

/// A child process of the benchmark: DesktopSandbox's, read only when asked, so no
/// reading thread of its own wakes up inside a measurement.
typealias Child = ChildProcess

extension ChildProcess {
    /// Starts `executable` with its output read on demand, or sent to /dev/null without `captureOutput`.
    ///
    /// `scratch` is the run's scratch directory; kept so call sites read as before.
    convenience init(
        _ executable: String, _ arguments: [String], environment: [String: String], captureOutput: Bool = true, scratch: String
    ) throws(BenchError) {
        try self.init(executable, arguments, environment: environment, reading: captureOutput ? .onDemand : .discarded)
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
    var fds = children.filter { $0.outputDescriptor >= 0 && !$0.atEnd }.map {
        pollfd(fd: $0.outputDescriptor, events: Int16(POLLIN), revents: 0)
    }
    guard !fds.isEmpty else { return }
    _ = poll(&fds, nfds_t(fds.count), Int32(clamping: milliseconds(until: deadline)))
}

/// What must not outlive the benchmark when it is interrupted: every child it
/// started (the X server, owners, participants) and its scratch directories.
enum Cleanup {
    private static let directories = Mutex<Set<String>>([])

    static func created(_ directory: String) { directories.withLock { _ = $0.insert(directory) } }
    static func removed(_ directory: String) { directories.withLock { _ = $0.remove(directory) } }

    /// On SIGINT, SIGTERM or SIGHUP: kill the children, remove the scratch directories, exit 130.
    static func stopChildrenOnSignals() {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let killed = ChildProcess.killAll()
                for directory in directories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
                FileHandle.standardError.write(Data("openudid-bench: interrupted; stopped \(killed) child process(es)\n".utf8))
                exit(130)
            }
            source.resume()
            sources.append(source)
        }
    }

    // Written once, by the main thread before any measurement; only kept so the sources live.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
}
