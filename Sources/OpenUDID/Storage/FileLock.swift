import Foundation
import Glibc

/// An advisory lock on a file (`flock(2)`), held until `release()` or until
/// the process ends, whichever comes first: a crashed holder never leaves a
/// stale lock behind.
///
/// Any app of the user can take the same lock and keep it, so the wait is
/// bounded: a caller that does not get the lock in time goes on without it.
/// The lock file holds nothing and is never read; a link or anything other
/// than a regular file standing at its path is neither followed nor used.
final class FileLock {
    private var descriptor: Int32

    /// Takes the lock on `path`, creating the file and its directories if needed.
    ///
    /// - Parameters:
    ///   - path: The lock file.
    ///   - wait: How long to wait for another holder to let go.
    /// - Returns: The held lock, or `nil` when it could not be taken within `wait`
    ///   or the file cannot be used (the caller then goes on unlocked).
    static func acquire(_ path: String, waitingAtMost wait: Duration) -> FileLock? {
        do {
            try AtomicFile.makeDirectories(AtomicFile.split(path).directory, for: path)
        } catch {
            return nil
        }
        // O_NONBLOCK: a FIFO planted at the path must not make the open wait.
        let descriptor = POSIX.retrying {
            open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
        }
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, POSIX.isRegularFile(info) else {
            close(descriptor)
            return nil
        }
        let deadline = ContinuousClock.now + wait
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                close(descriptor)
                return nil
            }
            usleep(2_000)
        }
        return FileLock(descriptor: descriptor)
    }

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Lets go of the lock; later calls do nothing.
    func release() {
        guard descriptor >= 0 else { return }
        // Closing the last descriptor of the open file releases the flock.
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
