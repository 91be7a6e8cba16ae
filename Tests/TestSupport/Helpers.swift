import Foundation

/// Starts `xselection-helper` on `display` with `arguments` and waits for its "ready" line.
public func startSelectionHelper(display: String, _ arguments: [String], timeout: TimeInterval = 10) throws -> ChildProcess {
    let child = try ChildProcess(Tools.product("xselection-helper"), arguments,
                                 environment: ["DISPLAY": display, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"])
    guard let line = child.nextLine(timeout: timeout), line.hasPrefix("ready") else {
        throw HarnessError("xselection-helper \(arguments.joined(separator: " ")) did not become ready: \(child.standardError)")
    }
    return child
}

/// Runs `xselection-helper request ...` on `display` and returns its output lines.
public func requestWithHelper(display: String, _ arguments: [String]) throws -> [String] {
    let result = try runCommand(Tools.product("xselection-helper"), ["request"] + arguments,
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
public func next<S: AsyncSequence & Sendable>(_ sequence: S, timeout: Duration = .seconds(5)) async -> S.Element? where S.Element: Sendable {
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
