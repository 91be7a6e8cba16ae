import Foundation
import Synchronization

/// Reads a child process's pipe on a thread of its own until the end of
/// output, or until told to stop.
///
/// Foundation's `readabilityHandler` runs on a Dispatch read source that can
/// outlive the file handle it watches: when the handle is released (and its
/// descriptor closed) before the source's cancellation has gone through,
/// Dispatch's event loop touches freed memory and the whole process crashes.
/// Here the reading thread keeps the handle, so the descriptor is closed only
/// after the last read.
public final class OutputReader: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    /// Starts reading `handle`; `received` gets each chunk, `finished` is called once at the end.
    ///
    /// - Parameters:
    ///   - handle: The read end of a pipe; it is kept open until reading ends.
    ///   - received: Called on the reading thread with each chunk read.
    ///   - finished: Called on the reading thread once, at the end of output or after `stop()`.
    public init(_ handle: FileHandle, received: @escaping @Sendable (Data) -> Void, finished: @escaping @Sendable () -> Void) {
        let descriptor = handle.fileDescriptor
        // The thread holds the reader and the handle until its last read.
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !self.stopRequested.load(ordering: .relaxed) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 50)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else { continue }
                let count = read(descriptor, &buffer, buffer.count)
                if count > 0 {
                    received(Data(buffer[0..<count]))
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    break
                }
            }
            finished()
            withExtendedLifetime(handle) {}
            self.ended.signal()
        }
        thread.name = "ProcessSupport.OutputReader"
        thread.start()
    }

    /// Asks the reader to stop (it does within 50 ms) without waiting.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    /// Waits up to `timeout` seconds for the end of output; returns whether it came.
    @discardableResult
    public func waitForEnd(timeout: TimeInterval) -> Bool {
        guard ended.wait(timeout: .now() + timeout) == .success else { return false }
        ended.signal() // later waiters see the end too
        return true
    }
}
