import FoundationEssentials
import Glibc

/// An advisory lock on a file (`flock(2)`), held until `release()` or until
/// the process ends, whichever comes first: a crashed holder never leaves a
/// stale lock behind.
///
/// Any app of the user can take the same lock and keep it, so the wait is
/// bounded: a caller that does not get the lock in time is told so, and goes
/// on without it. The lock file holds nothing and is never read. A link, a
/// directory, a FIFO or anything else but a regular file standing at its path
/// is neither followed nor used: it is moved aside to
/// `<path>.corrupt-<milliseconds>` and a fresh lock file is made, a few times
/// at most; a lock that still cannot be taken is reported as unusable.
final class FileLock {
    private var descriptor: Int32
    private let fileSystem: FileSystem

    /// Why a lock could not be taken.
    struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// What kind of failure it is.
        enum Kind: Sendable, Equatable {
            /// Another holder kept the lock for the whole wait.
            case timedOut
            /// The lock file cannot be made or used.
            case unusable
        }

        /// What kind of failure it is.
        let kind: Kind
        /// One sentence naming the lock file, what happened and what to do.
        let message: String

        var description: String { message }
    }

    /// How many times a non-regular file at the path is moved aside before giving up.
    static let attempts = 3

    /// Takes the lock on `path`, creating the file and its directories if needed.
    ///
    /// - Parameters:
    ///   - path: The lock file.
    ///   - wait: How long to wait for another holder to let go.
    ///   - root: The directory below which no directory may be a link (see `AtomicFile`).
    ///   - now: The time for the name of a file moved aside.
    /// - Returns: The held lock, or why it could not be taken: `.timedOut` when
    ///   another holder kept it for `wait`, `.unusable` when the file cannot be used.
    static func acquire(
        _ path: String, waitingAtMost wait: Duration, below root: String? = nil,
        now: Date = Date(), fileSystem fs: FileSystem = .system
    ) -> Result<FileLock, Failure> {
        do {
            try AtomicFile.makeDirectories(AtomicFile.split(path).directory, for: path, below: root, fileSystem: fs)
        } catch {
            return .failure(Failure(kind: .unusable, message: "cannot use the lock \(path): \(error.message)"))
        }
        var lastProblem = ""
        for _ in 0..<attempts {
            // O_NONBLOCK: a FIFO planted at the path must not make the open wait.
            let descriptor = fs.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
            if descriptor < 0 {
                let code = errno
                // ELOOP: a link; EISDIR: a directory; ENXIO: a socket. Anything else is not ours to fix.
                guard code == ELOOP || code == EISDIR || code == ENXIO else {
                    return .failure(Failure(kind: .unusable, message: AtomicFile.writeFailure(path, code).message))
                }
                lastProblem = code == ELOOP ? "a symbolic link stands there" : "something other than a regular file stands there"
            } else {
                var info = stat()
                if fs.fstat(descriptor, &info) == 0, POSIX.isRegularFile(info) {
                    return lock(descriptor, path: path, waitingAtMost: wait, fileSystem: fs)
                }
                fs.close(descriptor)
                lastProblem = "something other than a regular file stands there"
            }
            if let problem = moveAside(path, now: now, fileSystem: fs) {
                return .failure(Failure(kind: .unusable, message: "cannot use the lock \(path): \(lastProblem), and \(problem)"))
            }
        }
        return .failure(
            Failure(
                kind: .unusable,
                message: """
                    cannot use the lock \(path): \(lastProblem) again after it was moved aside \(attempts) times; \
                    another process keeps replacing it
                    """))
    }

    private static func lock(
        _ descriptor: Int32, path: String, waitingAtMost wait: Duration, fileSystem fs: FileSystem
    ) -> Result<FileLock, Failure> {
        let deadline = ContinuousClock.now + wait
        while fs.flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK else {
                fs.close(descriptor)
                return .failure(Failure(kind: .unusable, message: "cannot lock \(path): \(POSIX.message(code))"))
            }
            guard ContinuousClock.now < deadline else {
                fs.close(descriptor)
                return .failure(
                    Failure(
                        kind: .timedOut,
                        message: """
                            another app held the lock \(path) for \(Milliseconds.seconds(wait)); \
                            this app went on without it, so apps starting at once may generate different identifiers
                            """))
            }
            usleep(2_000)
        }
        return .success(FileLock(descriptor: descriptor, fileSystem: fs))
    }

    /// Renames whatever stands at `path` to `<path>.corrupt-<milliseconds>`, never over an existing name.
    ///
    /// - Returns: Why it could not be moved, or `nil` once the path is free.
    private static func moveAside(_ path: String, now: Date, fileSystem fs: FileSystem) -> String? {
        let (directory, name) = AtomicFile.split(path)
        let suffix = ".corrupt-\(Milliseconds.since1970(now))"
        for attempt in 0..<1000 {
            let target = directory + "/" + AtomicFile.quarantineName(name, suffix: attempt == 0 ? suffix : "\(suffix)-\(attempt)")
            guard case .failure(let error) = fs.linkStatus(target), error.code == ENOENT else { continue }
            if fs.rename(path, target) == 0 || errno == ENOENT { return nil }
            return "it cannot be moved aside: \(POSIX.message(errno)); remove it by hand"
        }
        return "it cannot be moved aside: 1000 moved-aside copies from this millisecond already exist; remove them by hand"
    }

    private init(descriptor: Int32, fileSystem: FileSystem) {
        self.descriptor = descriptor
        self.fileSystem = fileSystem
    }

    /// Lets go of the lock; later calls do nothing.
    func release() {
        guard descriptor >= 0 else { return }
        // Closing the last descriptor of the open file releases the flock.
        fileSystem.close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
