import FoundationEssentials
import Glibc
import InputGate

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
    /// The device and inode of the file locked: which lock file this is, even
    /// after its path has been given to another file.
    let identity: Identity

    /// Which file a lock is on.
    struct Identity: Sendable, Equatable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// Whether other holders may hold the lock at the same time.
    enum Mode: Sendable, Equatable {
        /// One holder at a time (`LOCK_EX`).
        case exclusive
        /// Any number of shared holders, while nobody holds it exclusively (`LOCK_SH`).
        case shared
    }

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
    ///   - mode: Exclusive, or shared with other shared holders.
    ///   - wait: How long to wait for another holder to let go.
    ///   - root: The directory below which no directory may be a link (see `AtomicFile`).
    ///   - now: The time for the name of a file moved aside.
    ///   - consequence: What going on without the lock means, for the message when it times out.
    /// - Returns: The held lock, or why it could not be taken: `.timedOut` when
    ///   another holder kept it for `wait`, `.unusable` when the file cannot be used.
    static func acquire(
        _ path: String, mode: Mode = .exclusive, waitingAtMost wait: Duration, below root: String? = nil,
        now: Date = Date(), fileSystem fs: FileSystem = .system,
        consequence: String = "this app went on without it, so apps starting at once may generate different identifiers"
    ) -> Result<FileLock, Failure> {
        do {
            try AtomicFile.makeDirectories(AtomicFile.split(path).directory, for: path, below: root, fileSystem: fs)
        } catch {
            return .failure(Failure(kind: .unusable, message: "cannot use the lock \(path): \(error.message)"))
        }
        var lastProblem = ""
        var replaced = 0
        var attempt = 0
        while attempt < attempts {
            // O_NONBLOCK: a FIFO planted at the path must not make the open wait.
            let descriptor = fs.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
            var found = stat()
            if descriptor < 0 {
                let code = errno
                // ELOOP: a link; EISDIR: a directory; ENXIO: a socket. Anything else is not ours to fix.
                guard code == ELOOP || code == EISDIR || code == ENXIO else {
                    return .failure(Failure(kind: .unusable, message: AtomicFile.failure(path, code).message))
                }
                lastProblem = code == ELOOP ? "a symbolic link stands there" : "something other than a regular file stands there"
                // Gone since the open: look again (a bounded number of times).
                guard fs.lstat(path, &found) == 0 else {
                    replaced += 1
                    if replaced < 100 { continue }
                    return .failure(Failure(kind: .unusable, message: "cannot use the lock \(path): it keeps being replaced"))
                }
            } else {
                if fs.fstat(descriptor, &found) == 0, POSIX.FileKind(found) == .regular {
                    switch lock(descriptor, path: path, mode: mode, waitingAtMost: wait, consequence: consequence, fileSystem: fs) {
                    case .locked(let held): return .success(held)
                    case .failed(let failure): return .failure(failure)
                    case .replaced:
                        // Another app moved the file aside while this one waited: the
                        // lock is on a file nobody else will open. Open the path again.
                        replaced += 1
                        if replaced < 100 { continue }
                        return .failure(
                            Failure(kind: .unusable, message: "cannot use the lock \(path): it keeps being replaced while locked"))
                    }
                }
                fs.close(descriptor)
                lastProblem = "something other than a regular file stands there"
            }
            attempt += 1
            if let problem = moveAside(path, ifStill: found, now: now, fileSystem: fs) {
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

    /// What locking an open lock file came to.
    private enum Locking {
        case locked(FileLock)
        case failed(Failure)
        /// The file was locked, but the path names another file by then.
        case replaced
    }

    private static func lock(
        _ descriptor: Int32, path: String, mode: Mode, waitingAtMost wait: Duration, consequence: String,
        fileSystem fs: FileSystem
    ) -> Locking {
        let deadline = ContinuousClock.now + wait
        while fs.flock(descriptor, (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK else {
                fs.close(descriptor)
                return .failed(Failure(kind: .unusable, message: "cannot lock \(path): \(POSIX.message(code))"))
            }
            guard ContinuousClock.now < deadline else {
                fs.close(descriptor)
                return .failed(
                    Failure(
                        kind: .timedOut,
                        message: """
                            another app held the lock \(path) for \(Milliseconds.seconds(wait)); \
                            \(consequence)
                            """))
            }
            usleep(2_000)
        }
        // Another app may have moved this file aside meanwhile (it saw what stood
        // here before this file did): a lock on it would lock nobody else out.
        var locked = stat()
        var current = stat()
        guard fs.fstat(descriptor, &locked) == 0, fs.lstat(path, &current) == 0, Self.same(locked, current) else {
            fs.close(descriptor)
            return .replaced
        }
        return .locked(FileLock(descriptor: descriptor, identity: Identity(locked), fileSystem: fs))
    }

    private static func same(_ a: stat, _ b: stat) -> Bool {
        a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// Renames what stands at `path` to `<path>.corrupt-<milliseconds>`, never over
    /// an existing name, if it is still `found`: another app may have moved it aside
    /// and made a good lock file there since, which must stay.
    ///
    /// - Returns: Why it could not be moved, or `nil` once the path is free or holds something else.
    private static func moveAside(_ path: String, ifStill found: stat, now: Date, fileSystem fs: FileSystem) -> String? {
        for target in AtomicFile.asideNames(for: path, now: now) {
            guard case .success(nil) = fs.kind(at: target) else { continue }
            var current = stat()
            guard fs.lstat(path, &current) == 0, same(current, found) else { return nil }
            if fs.rename(path, target) == 0 || errno == ENOENT { return nil }
            return "it cannot be moved aside: \(POSIX.message(errno)); remove it by hand"
        }
        return "it cannot be moved aside: 1000 moved-aside copies from this millisecond already exist; remove them by hand"
    }

    private init(descriptor: Int32, identity: Identity, fileSystem: FileSystem) {
        self.descriptor = descriptor
        self.identity = identity
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
