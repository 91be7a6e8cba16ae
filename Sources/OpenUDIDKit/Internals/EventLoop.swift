import Dispatch
import Glibc
import Synchronization
import XSelection

/// A thread of its own that runs jobs posted from any thread, timers, and the
/// handler of one file descriptor, and sleeps in `poll` while none is due.
///
/// A participant runs on one of these instead of on Dispatch's queues or
/// Swift concurrency's pool: on Linux, once a process has used either,
/// libdispatch wakes a thread of it once a second for good, and a desktop app
/// that is idle should not wake at all. Timers wake the loop only when due.
package final class EventLoop: Sendable {
    package typealias Job = @Sendable () -> Void

    /// The loop's state, which its thread holds: the thread ends when this
    /// object goes away, even if no one stopped it.
    private let core = LoopCore()

    /// Starts the loop's thread.
    package init() {}

    deinit { core.stop() }

    /// Whether the caller is on the loop's thread.
    package var isCurrent: Bool { core.isCurrent }

    /// Runs `job` on the loop soon; false when the loop has stopped.
    @discardableResult
    package func post(_ job: @escaping Job) -> Bool { core.post(job) }

    /// Runs `body` on the loop and returns its result: at once when called on
    /// the loop, otherwise after the jobs posted before it. Nil when the loop
    /// has stopped.
    package func sync<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? { core.sync(body) }

    /// Runs `job` on the loop once `delay` has passed.
    ///
    /// - Returns: The timer's number, for `cancel(_:)`.
    @discardableResult
    package func schedule(after delay: Duration, _ job: @escaping Job) -> Int { core.schedule(after: delay, job) }

    /// Polls `descriptor` from now on and runs `handler` on the loop whenever
    /// it is readable; the handler must read what is waiting, or the loop
    /// spins. The loop holds `handler` until it stops.
    package func watch(_ descriptor: Int32, _ handler: @escaping Job) { core.watch(descriptor, handler) }

    /// Drops the timer `id` if it has not run yet.
    package func cancel(_ id: Int) { core.cancel(id) }

    /// Runs `last` on the loop after every job posted before it, then ends the
    /// loop; drops the timers not yet due. Waits, at most `timeout`, until the
    /// thread has left, unless called on the loop itself.
    package func stop(timeout: Duration = .seconds(2), _ last: @escaping Job = {}) { core.stop(timeout: timeout, last) }
}

/// The state of an `EventLoop` and its thread's loop.
final class LoopCore: Sendable {
    typealias Job = EventLoop.Job

    private struct Timer {
        var id: Int
        var due: ContinuousClock.Instant
        var job: Job
    }

    private struct State {
        var jobs: [Job] = []
        var timers: [Timer] = []
        var nextTimer = 0
        var stopping = false
        var stopped = false
        /// The descriptor polled with the wake pipe, and what runs when it is readable.
        var watch: (descriptor: Int32, handler: Job)?
    }

    private let state = Mutex(State())
    private let wake = WakePipe()
    private let thread = Mutex<pthread_t?>(nil)
    /// Signalled when the thread has left its loop.
    private let finished = DispatchSemaphore(value: 0)
    /// The process that started the thread; in a child made by `fork()` the
    /// thread does not exist, and nothing may wait for it.
    private let process = getpid()

    /// Starts the loop's thread.
    init() {
        let started = startThread { [self] in
            thread.withLock { $0 = pthread_self() }
            run()
            finished.signal()
        }
        if !started {
            state.withLock { $0.stopped = true }
            finished.signal()
        }
    }

    /// Whether the caller is on the loop's thread.
    var isCurrent: Bool {
        thread.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Runs `job` on the loop soon; false when the loop has stopped.
    @discardableResult
    func post(_ job: @escaping Job) -> Bool {
        guard getpid() == process else { return false }
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wake.wake() }
        return accepted
    }

    /// Runs `body` on the loop and returns its result: at once when called on
    /// the loop, otherwise after the jobs posted before it. Nil when the loop
    /// has stopped.
    func sync<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
        if isCurrent { return body() }
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        guard
            post({
                result.withLock { $0 = body() }
                done.signal()
            })
        else { return nil }
        done.wait()
        return result.withLock { $0 }
    }

    /// Runs `job` on the loop once `delay` has passed.
    ///
    /// - Returns: The timer's number, for `cancel(_:)`.
    @discardableResult
    func schedule(after delay: Duration, _ job: @escaping Job) -> Int {
        let due = ContinuousClock.now + delay
        let id = state.withLock { state -> Int in
            state.nextTimer += 1
            state.timers.append(Timer(id: state.nextTimer, due: due, job: job))
            return state.nextTimer
        }
        wake.wake()
        return id
    }

    /// Polls `descriptor` from now on and runs `handler` on the loop whenever
    /// it is readable; the handler must read what is waiting, or the loop
    /// spins. The loop holds `handler` until it stops.
    func watch(_ descriptor: Int32, _ handler: @escaping Job) {
        state.withLock { $0.watch = (descriptor, handler) }
        wake.wake()
    }

    /// Drops the timer `id` if it has not run yet.
    func cancel(_ id: Int) {
        state.withLock { $0.timers.removeAll { $0.id == id } }
    }

    /// Runs `last` on the loop after every job posted before it, then ends the
    /// loop; drops the timers not yet due. Waits, at most `timeout`, until the
    /// thread has left, unless called on the loop itself.
    func stop(timeout: Duration = .seconds(2), _ last: @escaping Job = {}) {
        guard getpid() == process else { return }
        let first = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(last)
            state.stopping = true
            return true
        }
        guard first else { return }
        wake.wake()
        guard !isCurrent else { return }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        if finished.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success { finished.signal() }
    }

    private func run() {
        while true {
            let (jobs, due, stopping) = state.withLock { state -> ([Job], [Job], Bool) in
                let now = ContinuousClock.now
                let due = state.timers.filter { $0.due <= now }.sorted { $0.due < $1.due }.map(\.job)
                state.timers.removeAll { $0.due <= now }
                defer { state.jobs.removeAll() }
                return (state.jobs, state.stopping ? [] : due, state.stopping)
            }
            for job in jobs { job() }
            if stopping {
                state.withLock { state in
                    state.stopped = true
                    state.timers.removeAll()
                    state.watch = nil
                }
                return
            }
            for job in due { job() }
            let (timeout, watch) = state.withLock { state -> (Int32, (descriptor: Int32, handler: Job)?) in
                guard state.jobs.isEmpty, !state.stopping else { return (0, state.watch) }
                guard let next = state.timers.map(\.due).min() else { return (-1, state.watch) }
                let left = ContinuousClock.now.duration(to: next)
                guard left > .zero else { return (0, state.watch) }
                let (seconds, attoseconds) = left.components
                // Rounded up: waking a little early would only spin until due.
                let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                return (Int32(clamping: milliseconds), state.watch)
            }
            var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            if let watch { fds.append(pollfd(fd: watch.descriptor, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            guard ready > 0 else { continue }
            if fds[0].revents != 0 { wake.drain() }
            if let watch, fds[1].revents != 0 { watch.handler() }
        }
    }
}
