import Dispatch
import XSelection

/// Work started on a plain thread of its own, to be waited for.
///
/// Used instead of Dispatch's global queues, whose first use makes
/// libdispatch on Linux wake the process once a second from then on (see
/// `EventLoop`): a participant that sleeps must not touch them. A thread
/// costs tens of microseconds to start, nothing next to the reads it runs.
struct Spawned: Sendable {
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread; runs it on the caller when the system
    /// has no thread to give.
    init(_ body: @escaping @Sendable () -> Void) {
        let done = done
        let started = startThread {
            body()
            done.signal()
        }
        if !started {
            body()
            done.signal()
        }
    }

    /// Waits until the work has finished.
    func wait() { done.wait() }

    /// Runs `body` for every index in `0..<count` at once, the first on the
    /// caller and each other on a thread of its own, and returns when all have finished.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        guard count > 0 else { return }
        let others = (1..<count).map { index in Spawned { body(index) } }
        body(0)
        for other in others { other.wait() }
    }
}
