import Dispatch
import Glibc
import Synchronization

/// A pipe whose read end wakes a thread blocked in `poll`.
package final class WakePipe: Sendable {
    package let readFD: Int32
    let writeFD: Int32

    package init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    package func wake() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buffer, buffer.count) > 0 {}
    }

    deinit {
        if readFD >= 0 { close(readFD) }
        if writeFD >= 0 { close(writeFD) }
    }
}

/// A dedicated thread that owns a non-Sendable core and runs work posted to it.
///
/// The core (which holds the X connection) is created and used on the thread
/// only; other threads reach it by posting closures and waiting for the result.
package final class ServiceThread<Core: AnyObject>: Sendable {
    package typealias Job = @Sendable (Core) -> Void

    private struct Queue {
        var jobs: [Job] = []
        var stopped = false
    }

    package let wakePipe = WakePipe()
    private let queue = Mutex(Queue())
    /// Left when the thread has finished with its connection.
    private let finished = DispatchGroup()
    /// The service thread's id, so that a stop requested from the thread itself does not wait for itself.
    private let threadID = Mutex<pthread_t?>(nil)
    /// The process that started the thread. A child made by `fork()` has a
    /// copy of this object but not the thread, and a copy of its locks as
    /// they were at the fork, perhaps held by a thread that is not there.
    package let process = getpid()

    /// Whether this process is a child, made by `fork()`, of the one that
    /// started the thread: posting would wait for a thread that does not exist.
    package var isInherited: Bool { getpid() != process }

    /// Starts the thread. `makeCore` runs on the new thread; `run` is its loop and
    /// returns when the thread should end (it calls `runJobs` when woken).
    init(name: String, makeCore: @escaping @Sendable () -> Core?, run: @escaping @Sendable (Core, ServiceThread<Core>) -> Void) {
        finished.enter()
        startThread { [self] in
            self.threadID.withLock { $0 = pthread_self() }
            defer { self.finished.leave() }
            guard let core = makeCore() else {
                self.markStopped()
                return
            }
            run(core, self)
            self.markStopped()
            // Jobs that arrived after the loop ended still get an answer (an error).
            self.runJobs(core)
        }
    }

    private func markStopped() { queue.withLock { $0.stopped = true } }

    /// Whether the loop has ended.
    package var isStopped: Bool { queue.withLock { $0.stopped } }

    /// Posts `job` to run on the thread; returns false if the thread has ended.
    @discardableResult
    package func post(_ job: @escaping Job) -> Bool {
        guard !isInherited else { return false }
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopped else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted { wakePipe.wake() }
        return accepted
    }

    /// Posts `request` (which tells the loop to end) and waits, up to `timeout`,
    /// until the thread is done with its connection, so that a program may exit right
    /// after: exiting while the thread still closes its connection can crash.
    /// From the service thread itself it only posts.
    package func stop(timeout: Duration = .seconds(2), _ request: @escaping Job) {
        // In a child of a fork the thread is the parent's: nothing to stop here.
        guard !isInherited else { return }
        post(request)
        let onServiceThread = threadID.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard !onServiceThread else { return }
        let (seconds, attoseconds) = timeout.components
        _ = finished.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
    }

    /// Runs `body` on the thread and waits for its result, up to `timeout`.
    func perform<T: Sendable>(
        timeout: Duration = .seconds(10), _ body: @escaping @Sendable (Core) throws(XSelectionError) -> T,
        onTimeout: XSelectionError, onStopped: XSelectionError
    ) throws(XSelectionError) -> T {
        let box = ResultBox<T>()
        let posted = post { core in
            do throws(XSelectionError) {
                box.set(.success(try body(core)))
            } catch {
                box.set(.failure(error))
            }
        }
        guard posted else { throw onStopped }
        guard let result = box.wait(timeout: timeout) else { throw onTimeout }
        return try result.get()
    }

    /// Runs every posted job; call from the thread's loop when woken.
    package func runJobs(_ core: Core) {
        wakePipe.drain()
        let jobs = queue.withLock { queue -> [Job] in
            defer { queue.jobs.removeAll() }
            return queue.jobs
        }
        for job in jobs { job(core) }
    }
}

extension ServiceThread {
    /// Starts a service thread whose core is made on the thread itself (the
    /// connection must live there), and waits until it is up.
    ///
    /// - Parameters:
    ///   - name: The thread's name.
    ///   - display: The display asked for, for the time-out message.
    ///   - make: Makes the core and what the caller needs to know of it; runs on the new thread.
    ///   - failed: Called on the new thread when `make` throws (to finish an event stream).
    ///   - run: The thread's loop.
    /// - Returns: The thread and what `make` reported.
    package static func start<Info: Sendable>(
        name: String, display: String?,
        make: @escaping @Sendable () throws(XSelectionError) -> (Core, Info),
        failed: @escaping @Sendable () -> Void,
        run: @escaping @Sendable (Core, ServiceThread<Core>) -> Void
    ) throws(XSelectionError) -> (ServiceThread<Core>, Info) {
        let started = ResultBox<Info>()
        let thread = ServiceThread(
            name: name,
            makeCore: { () -> Core? in
                do throws(XSelectionError) {
                    let (core, info) = try make()
                    started.set(.success(info))
                    return core
                } catch {
                    started.set(.failure(error))
                    failed()
                    return nil
                }
            }, run: run)
        guard let result = started.wait(timeout: .seconds(30)) else {
            throw XSelectionError(.timedOut, display: display ?? "", "opening the X display took longer than 30 s")
        }
        return (thread, try result.get())
    }
}

/// A one-shot result handed from the service thread to a waiting caller.
final class ResultBox<T: Sendable>: Sendable {
    private let value = Mutex<Result<T, XSelectionError>?>(nil)
    private let semaphore = DispatchSemaphore(value: 0)

    func set(_ result: Result<T, XSelectionError>) {
        value.withLock { $0 = result }
        semaphore.signal()
    }

    func wait(timeout: Duration) -> Result<T, XSelectionError>? {
        let (seconds, attoseconds) = timeout.components
        let nanos = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard semaphore.wait(timeout: .now() + .nanoseconds(nanos)) == .success else { return nil }
        return value.withLock { $0 }
    }
}

/// Runs `body` on a new detached POSIX thread. Threads of the library are
/// plain POSIX threads: it links FoundationEssentials, which has no `Thread`.
///
/// - Returns: Whether the thread started (false: the system has no thread to give).
@discardableResult
package func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let start = Unmanaged.passRetained(Start(body: body)).toOpaque()
    var thread = pthread_t()
    let created = pthread_create(
        &thread, nil,
        { pointer in
            let start = Unmanaged<Start>.fromOpaque(pointer!).takeRetainedValue()
            blockBrokenPipes()
            start.body()
            return nil
        }, start)
    guard created == 0 else {
        // No thread: run nothing, and free what was handed over. The caller's
        // waits time out and report the service as unavailable.
        Unmanaged<Start>.fromOpaque(start).release()
        return false
    }
    pthread_detach(thread)
    return true
}
