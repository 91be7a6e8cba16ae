import Foundation

/// Starts `xselection-helper` on `display` with `arguments` and waits for its "ready" line.
public func startSelectionHelper(display: String, _ arguments: [String], timeout: TimeInterval = 10) throws -> ChildProcess {
    try startSelectionHelperReportingWindow(display: display, arguments, timeout: timeout).helper
}

/// Starts `xselection-helper` like `startSelectionHelper` and also returns the
/// window it announced in its "ready 0x..." line (the window that owns its selections).
public func startSelectionHelperReportingWindow(
    display: String, _ arguments: [String],
    timeout: TimeInterval = 10
) throws -> (helper: ChildProcess, window: UInt32) {
    let child = try ChildProcess(
        Tools.product("xselection-helper"), arguments,
        environment: ["DISPLAY": display, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"])
    guard let line = child.nextLine(timeout: timeout), line.hasPrefix("ready") else {
        throw HarnessError("xselection-helper \(arguments.joined(separator: " ")) did not become ready: \(child.standardError)")
    }
    let word = line.split(separator: " ").dropFirst().first ?? ""
    guard word.hasPrefix("0x"), let window = UInt32(word.dropFirst(2), radix: 16) else {
        throw HarnessError("xselection-helper announced no window: \(line)")
    }
    return (child, window)
}

/// Runs `xselection-helper request ...` on `display` and returns its output lines.
public func requestWithHelper(display: String, _ arguments: [String]) throws -> [String] {
    let result = try runCommand(
        Tools.product("xselection-helper"), ["request"] + arguments,
        environment: ["DISPLAY": display, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"])
    return result.standardOutput.split(separator: "\n").map(String.init)
}

/// Polls `condition` until it holds or `timeout` passes.
public func eventually(timeout: TimeInterval = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if try condition() { return true }
        usleep(10_000)
    } while Date() < deadline
    return false
}

/// The next element of an async sequence, or nil after `timeout`.
public func next<S: AsyncSequence & Sendable>(_ sequence: S, timeout: Duration = .seconds(5)) async -> S.Element?
where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            var iterator = sequence.makeAsyncIterator()
            return try? await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
