import DesktopSandbox
import Foundation
import Synchronization

/// Starts `xselection-helper` on `display` with `arguments` and waits for its "ready" line.
public func startSelectionHelper(
    display: String, _ arguments: [String], input: ChildProcess.Input = .none, timeout: TimeInterval = 10
) throws -> ChildProcess {
    try startSelectionHelperReportingWindow(display: display, arguments, input: input, timeout: timeout).helper
}

/// Starts `xselection-helper` like `startSelectionHelper` and also returns the
/// window it announced in its "ready 0x..." line (the window that owns its selections).
public func startSelectionHelperReportingWindow(
    display: String, _ arguments: [String], input: ChildProcess.Input = .none,
    timeout: TimeInterval = 10
) throws -> (helper: ChildProcess, window: UInt32) {
    let child = try ChildProcess(
        Tools.product("xselection-helper"), arguments,
        environment: ["DISPLAY": display, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"], input: input)
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

/// Checks `condition` until it holds or `timeout` seconds pass; returns whether it held.
///
/// The wait for something another process or thread does: the bound is generous
/// and the wait ends as soon as the condition holds, so a loaded machine makes a
/// test slower, never different.
public func eventually(timeout: TimeInterval = 20, every interval: TimeInterval = 0.01, _ condition: () throws -> Bool) rethrows -> Bool {
    try waitUntil(timeout: timeout, interval: interval, condition)
}

/// What waiting for the next element of an asynchronous sequence came to.
public enum Next<Element: Sendable>: Sendable {
    /// The sequence produced this element.
    case element(Element)
    /// The sequence ended.
    case finished
    /// Nothing came within the time allowed; the sequence goes on.
    case timedOut

    /// The element, if one came.
    public var element: Element? {
        if case .element(let element) = self { return element }
        return nil
    }
}

extension Next: Equatable where Element: Equatable {}

/// Reads an asynchronous sequence (a stream of events) for a test, one element at a time, with a time limit.
///
/// One task iterates the sequence from the start, so a time-out neither cancels
/// the iteration (which would end an `AsyncStream`) nor loses the element that
/// comes after it. Keep one reader per sequence for the whole test.
public final class SequenceReader<Element: Sendable>: Sendable {
    private struct Taken {
        var elements: [Element] = []
        var finished = false
        /// The caller waiting in `next`, resumed by whichever comes first: an
        /// element, the end, or its time-out.
        var waiter: (id: UInt64, continuation: CheckedContinuation<Next<Element>, Never>)?
        var waits: UInt64 = 0

        /// Hands what is there to the waiter, if both are there.
        mutating func serve() {
            guard let waiter else { return }
            if !elements.isEmpty {
                self.waiter = nil
                waiter.continuation.resume(returning: .element(elements.removeFirst()))
            } else if finished {
                self.waiter = nil
                waiter.continuation.resume(returning: .finished)
            }
        }
    }
    private final class State: Sendable {
        let taken = Mutex(Taken())
    }
    private let state = State()
    private let task: Task<Void, Never>

    /// Starts reading `sequence`.
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let state = self.state
        task = Task {
            do {
                for try await element in sequence {
                    state.taken.withLock {
                        $0.elements.append(element)
                        $0.serve()
                    }
                }
            } catch {}
            state.taken.withLock {
                $0.finished = true
                $0.serve()
            }
        }
    }

    /// The next element, or `.finished` once the sequence has ended, or `.timedOut` after `timeout`.
    public func next(timeout: Duration = .seconds(10)) async -> Next<Element> {
        let state = self.state
        return await withCheckedContinuation { continuation in
            let id = state.taken.withLock { taken -> UInt64 in
                taken.waits += 1
                taken.waiter = (taken.waits, continuation)
                taken.serve()
                return taken.waits
            }
            Task {
                try? await Task.sleep(for: timeout)
                state.taken.withLock { taken in
                    guard let waiter = taken.waiter, waiter.id == id else { return }
                    taken.waiter = nil
                    waiter.continuation.resume(returning: .timedOut)
                }
            }
        }
    }

    deinit { task.cancel() }
}
