import CX11
import Dispatch
import Glibc
import Synchronization

/// The one kind of long-lived thread the library runs: a named thread that
/// runs jobs posted from any thread, timers, and the handlers of file
/// descriptors, and sleeps in `poll` while none is due.
///
/// Every participant's state lives on one (docs/ARCHITECTURE.md names them
/// all), as does each X connection: its owner is the loop's thread, and other
/// threads reach it by posting jobs. Nothing runs on Dispatch's queues or
/// Swift concurrency's pool: on Linux, once a process has used either,
/// libdispatch wakes a thread of it once a second for good, and a desktop app
/// that is idle should not wake at all. Timers wake the loop only when due.
package final class EventLoop: Sendable {
    package typealias Job = @Sendable () -> Void

    /// The loop's state, which its thread holds: the thread ends when this
    /// object goes away, even if no one stopped it.
    private let core: LoopCore

    /// Starts the loop's thread, named `name` (15 bytes are kept).
    package init(name: String) {
        core = LoopCore(name: name)
    }

    deinit { core.stop(waitingAtMost: .zero, {}) }

    /// Whether the caller is on the loop's thread.
    package var isCurrent: Bool { core.isCurrent }

    /// Whether this process is a child, made by `fork()`, of the one that
    /// started the loop: its thread is not in this process.
    package var isInherited: Bool { core.process != getpid() }

    /// The process that started the loop.
    package var process: pid_t { core.process }

    /// Whether the loop has been told to stop (it takes no more jobs).
    package var isStopped: Bool { core.isStopped }

    /// What a job that waits in `poll` (a selection pass) watches to end at
    /// once when the loop is told to stop, rather than keep the stop waiting.
    package var stopWatch: StopWatch { StopWatch(core: core) }

    /// Runs `job` on the loop soon; false when the loop has stopped.
    @discardableResult
    package func post(_ job: @escaping Job) -> Bool { core.post(job) }

    /// Runs `body` on the loop and returns its result: at once when called on
    /// the loop, otherwise after the jobs posted before it. Nil when the loop
    /// has stopped, or when `limit` passed first (`body` still runs later).
    package func sync<T: Sendable>(waitingAtMost limit: Duration? = nil, _ body: @escaping @Sendable () -> T) -> T? {
        core.sync(limit, body)
    }

    /// Runs `job` on the loop once `delay` has passed.
    ///
    /// - Returns: The timer's number, for `cancel(_:)`.
    @discardableResult
    package func schedule(after delay: Duration, _ job: @escaping Job) -> Int { core.schedule(after: delay, job) }

    /// Drops the timer `id` if it has not run yet.
    package func cancel(_ id: Int) { core.cancel(id) }

    /// Polls `descriptor` from now on and runs `handler` on the loop whenever
    /// it is readable; the handler must read what is waiting, or the loop spins.
    package func watch(_ descriptor: Int32, _ handler: @escaping Job) { core.watch(descriptor, handler) }

    /// Runs `hook` on the loop each time before it sleeps; the loop sleeps no
    /// later than the instant it returns (nil: no limit of its own). A hook
    /// that returns an instant already past makes the loop look at its jobs
    /// and descriptors and come back at once, without sleeping.
    package func beforeSleep(_ hook: @escaping @Sendable () -> ContinuousClock.Instant?) { core.beforeSleep(hook) }

    /// Runs `last` on the loop after every job posted before it, then ends the
    /// loop and drops its timers. Waits for the thread to leave at most
    /// `limit` (not at all by default, nor when called on the loop).
    package func stop(waitingAtMost limit: Duration = .zero, _ last: @escaping Job = {}) { core.stop(waitingAtMost: limit, last) }
}

/// The loop's wake pipe, as a job running on the loop watches it: it becomes
/// readable when anything is posted to the loop, a stop among them.
package struct StopWatch: Sendable {
    fileprivate let core: LoopCore

    /// The descriptor to poll beside the job's own.
    package var descriptor: Int32 { core.wake.readFD }

    /// Whether the loop was told to stop. Takes what woke the poll out of the
    /// pipe, so that a job posted meanwhile does not wake the waiter again; the
    /// loop still runs that job once the waiting one returns.
    package func stopRequested() -> Bool {
        core.wake.drain()
        return core.isStopped
    }
}

/// A value that belongs to one loop's thread: made, used and dropped there
/// only, which is what makes sharing the box itself safe.
package final class LoopBound<Value>: @unchecked Sendable {
    /// The value; touch it on the loop's thread only.
    package var value: Value?

    /// An empty box.
    package init() {}
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
        var watches: [(descriptor: Int32, handler: Job)] = []
        var beforeSleep: (@Sendable () -> ContinuousClock.Instant?)?
    }

    private let state = Mutex(State())
    fileprivate let wake = WakePipe()
    private let thread = Mutex<pthread_t?>(nil)
    /// Signalled when the thread has left its loop.
    private let finished = DispatchSemaphore(value: 0)
    /// The process that started the thread; in a child made by `fork()` the
    /// thread does not exist, and nothing may wait for it.
    let process = getpid()

    init(name: String) {
        let started = startThread { [self] in
            thread.withLock { $0 = pthread_self() }
            _ = openudid_name_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
            run()
            finished.signal()
        }
        if !started {
            state.withLock { $0.stopping = true }
            finished.signal()
        }
    }

    var isStopped: Bool { state.withLock { $0.stopping } }

    var isCurrent: Bool {
        thread.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

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

    func sync<T: Sendable>(_ limit: Duration?, _ body: @escaping @Sendable () -> T) -> T? {
        if isCurrent { return body() }
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        guard
            post({
                result.withLock { $0 = body() }
                done.signal()
            })
        else { return nil }
        if let limit {
            guard done.wait(timeout: .now() + .nanoseconds(limit.nanoseconds)) == .success else { return nil }
        } else {
            done.wait()
        }
        return result.withLock { $0 }
    }

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

    func cancel(_ id: Int) {
        state.withLock { $0.timers.removeAll { $0.id == id } }
    }

    func watch(_ descriptor: Int32, _ handler: @escaping Job) {
        state.withLock { $0.watches.append((descriptor, handler)) }
        wake.wake()
    }

    func beforeSleep(_ hook: @escaping @Sendable () -> ContinuousClock.Instant?) {
        state.withLock { $0.beforeSleep = hook }
        wake.wake()
    }

    func stop(waitingAtMost limit: Duration, _ last: @escaping Job) {
        guard getpid() == process else { return }
        let first = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(last)
            state.stopping = true
            return true
        }
        guard first else { return }
        wake.wake()
        guard !isCurrent, limit > .zero else { return }
        if finished.wait(timeout: .now() + .nanoseconds(limit.nanoseconds)) == .success { finished.signal() }
    }

    private func run() {
        while true {
            let (jobs, due, stopping) = state.withLock { state -> ([Job], [Job], Bool) in
                let now = ContinuousClock.now
                let due = state.stopping ? [] : state.timers.filter { $0.due <= now }.sorted { $0.due < $1.due }.map(\.job)
                state.timers.removeAll { $0.due <= now }
                defer { state.jobs.removeAll() }
                return (state.jobs, due, state.stopping)
            }
            for job in jobs { job() }
            if stopping {
                // What the jobs, timers and handlers hold goes with the thread.
                state.withLock { state in
                    state.timers.removeAll()
                    state.watches.removeAll()
                    state.beforeSleep = nil
                }
                return
            }
            for job in due { job() }
            let hook = state.withLock { $0.beforeSleep }
            let hookDue = hook?()
            let (timeout, watches) = state.withLock { state -> (Int32, [(descriptor: Int32, handler: Job)]) in
                guard state.jobs.isEmpty, !state.stopping else { return (0, state.watches) }
                guard let next = (state.timers.map(\.due) + [hookDue].compactMap { $0 }).min() else { return (-1, state.watches) }
                let left = ContinuousClock.now.duration(to: next)
                // Rounded up: waking a little early would only spin until due.
                return (left > .zero ? Int32(clamping: (left.nanoseconds + 999_999) / 1_000_000) : 0, state.watches)
            }
            var fds = [pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)]
            fds += watches.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            guard ready > 0 else { continue }
            if fds[0].revents != 0 { wake.drain() }
            for (index, watch) in watches.enumerated() where fds[index + 1].revents != 0 { watch.handler() }
        }
    }
}

extension Duration {
    /// The whole nanoseconds of the duration, clamped to `Int` (for timeouts).
    package var nanoseconds: Int {
        let (seconds, attoseconds) = components
        let (whole, overflow) = Int(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : whole &+ Int(attoseconds / 1_000_000_000)
    }
}
