import Foundation

/// A private Xvfb. The first start lets the server pick a free display itself
/// (`-displayfd`), so the lab never touches a real desktop or a neighbour's
/// server; a restart comes back on the same number, as a rebooted machine's
/// session does.
final class XServer: @unchecked Sendable {
    // `child` and `number` are replaced by `restart()`, `child` cleared by `stop()`; every access holds `lock`.
    private let lock = NSLock()
    private var child: ChildProcess?
    private let executable: String

    /// The display number; it changes only when a restart finds it taken.
    private var number: Int

    /// The display name, such as `:7`.
    var display: String { lock.withLock { ":\(number)" } }

    /// Starts a server on a display it picks, and waits until it accepts connections.
    init() throws(LabError) {
        executable = try Tools.require("Xvfb", package: "xvfb")
        let (child, number) = try Self.launch(executable, display: nil)
        self.child = child
        self.number = number
    }

    private static func launch(_ executable: String, display: Int?) throws(LabError) -> (ChildProcess, Int) {
        // -displayfd writes the number once the server listens, also when the number is given.
        let arguments =
            (display.map { [":\($0)"] } ?? []) + ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "320x240x24", "-noreset"]
        let child = try ChildProcess(executable, arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard let line = child.nextLine(timeout: 10), let number = Int(line.trimmingCharacters(in: .whitespaces)) else {
            child.waitForEndOfOutput(timeout: 0.5)
            let why = child.standardError.split(separator: "\n").suffix(3).joined(separator: "; ")
            child.kill9()
            let which = display.map { "display :\($0)" } ?? "a display"
            throw LabError("Xvfb did not start on \(which) within 10 s\(why.isEmpty ? "" : ": \(why)")")
        }
        return (child, number)
    }

    /// Kills the server as a power cut would, and starts a new one on the same display number.
    ///
    /// Every client of the old server, and every selection they owned, is gone. On a
    /// shared machine another program's `-displayfd` server may take the freed number
    /// first; the server then comes back on a number of its own choosing, which
    /// changes nothing for the apps (they lose their selections either way), and the
    /// returned text says so.
    @discardableResult
    func restart() throws(LabError) -> String? {
        lock.lock()
        defer { lock.unlock() }
        child?.kill9()
        child = nil
        var failure: LabError?
        for attempt in 0..<3 {
            if attempt > 0 { usleep(100_000) }
            do {
                child = try Self.launch(executable, display: number).0
                return nil
            } catch {
                failure = error
            }
        }
        let (replacement, newNumber) = try Self.launch(executable, display: nil)
        child = replacement
        let old = number
        number = newNumber
        return "the X server could not come back on :\(old) (\(failure?.description ?? "taken")), so it came back on :\(newNumber)"
    }

    /// Stops the server.
    func stop() {
        lock.withLock {
            child?.stop(grace: 1)
            child = nil
        }
    }

    deinit { stop() }
}
