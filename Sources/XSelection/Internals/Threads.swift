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
