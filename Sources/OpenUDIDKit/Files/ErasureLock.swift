import FoundationEssentials
import Glibc
import InputGate
import Synchronization

/// The erasing side of `erase.lock` (docs/PROTOCOL.md §4 and §9): what makes
/// withdrawing consent, removing an app, `forget` and `reset` atomic with
/// respect to the apps' own writes of their copies.
///
/// An erasing command takes the lock of each namespace it erases exclusively,
/// deletes, and then removes the lock file before it lets go (`finish()`). An
/// app opens the lock file when it starts reading and keeps it open until it
/// next reads (`ErasureFence`); it writes its copies holding the lock shared,
/// and only while the path still names the file it opened. A different file
/// there means an erasure ran since it started reading, so whatever it was
/// about to write came from before the erasure and is dropped. The file kept
/// open cannot have its inode given to the next one, so the comparison of
/// device and inode cannot be fooled by reuse.
final class ErasureLock {
    /// How long an erasing command waits for apps that are writing. A write takes
    /// milliseconds (a keyring write up to its 2 s deadline); an app stopped in
    /// the middle of one holds the lock until it is resumed or killed.
    static let eraserWait: Duration = .seconds(10)

    private var held: [(path: String, lock: FileLock)]
    private let fileSystem: FileSystem

    private init(held: [(path: String, lock: FileLock)], fileSystem: FileSystem) {
        self.held = held
        self.fileSystem = fileSystem
    }

    /// Takes the erasure lock at each of `paths`, exclusively, in byte order of
    /// the paths (so that two erasing commands cannot wait for each other).
    ///
    /// - Parameters:
    ///   - paths: The lock files, one per namespace erased.
    ///   - root: The directory below which no directory may be a link (the data home).
    ///   - fileSystem: The file system to go through.
    /// - Returns: The held locks.
    /// - Throws: `OpenUDIDError` of kind `.storeUnavailable` when a lock cannot be
    ///   taken in `eraserWait`; nothing has been erased then.
    static func take(_ paths: [String], below root: String, fileSystem: FileSystem = .system) throws(OpenUDIDError) -> ErasureLock {
        var held: [(path: String, lock: FileLock)] = []
        for path in Set(paths).sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            switch FileLock.acquire(
                path, mode: .exclusive, waitingAtMost: eraserWait, below: root, fileSystem: fileSystem,
                consequence: "nothing was erased; an app stopped while writing its copies keeps it: resume or end it and try again")
            {
            case .success(let lock):
                held.append((path, lock))
            case .failure(let failure):
                for (_, lock) in held { lock.release() }
                throw OpenUDIDError(
                    .storeUnavailable, failure.kind == .timedOut ? failure.message : failure.message + "; nothing was erased")
            }
        }
        return ErasureLock(held: held, fileSystem: fileSystem)
    }

    /// Removes the lock files and lets go of the locks. An app that started
    /// reading before the erasure finds another file at the path (or none) and
    /// writes nothing from that reading. Later calls do nothing.
    func finish() {
        for (path, lock) in held {
            // The path still names the locked file: nobody moves a regular lock file
            // aside. Should the unlink fail (a directory made read-only meanwhile),
            // a write from before the erasure can get through, as without the lock.
            _ = fileSystem.unlink(path)
            lock.release()
        }
        held = []
    }

    deinit { finish() }
}

/// One app's side of `erase.lock`: it pins the lock file when the app starts
/// reading and lets the app's writes of its own copies through only while no
/// erasure ran since, and, for an app that requires consent, only while the
/// consent is still recorded.
final class ErasureFence: Sendable {
    /// How long an app waits to write while an erasure holds the lock.
    static let writerWait: Duration = .seconds(2)

    private enum Pin: Sendable {
        /// Not pinned yet.
        case none
        /// The lock file opened when reading started, kept open, and its identity.
        case file(descriptor: Int32, identity: FileLock.Identity)
        /// Consent was withdrawn before the resolution began reading; nothing is written.
        case withdrawn
        /// The lock file cannot be made or opened (something else stands at its
        /// path or above it), which keeps every erasing command from running too.
        case unusable(String)
    }

    private let path: String
    private let root: String
    private let consentFile: String?
    private let enabled: Bool
    private let fileSystem: FileSystem
    private let pinned = Mutex(Pin.none)

    /// The fence of the lock at `path`.
    ///
    /// - Parameters:
    ///   - path: The namespace's `erase.lock`.
    ///   - root: The directory below which no directory may be a link (the data home).
    ///   - consentFile: The app's consent record when the app requires consent, else `nil`.
    ///   - enabled: Whether the app keeps files; an app without files has no copies to fence.
    ///   - fileSystem: The file system to go through.
    init(path: String, root: String, consentFile: String?, enabled: Bool, fileSystem: FileSystem) {
        self.path = path
        self.root = root
        self.consentFile = consentFile
        self.enabled = enabled
        self.fileSystem = fileSystem
    }

    /// Opens the lock file (creating it and its directories), keeps it open in
    /// place of the one opened before, and remembers which file it is. Called
    /// when a resolution starts reading, before anything is read.
    func pin() {
        guard enabled else { return }
        let fs = fileSystem
        var next: Pin
        if let consentFile, !fs.exists(consentFile) {
            // Withdrawn since the resolution looked: it writes nothing, and makes
            // nothing either (no lock file, no directory) that an erasure under way
            // would have to remove again.
            next = .withdrawn
        } else {
            do throws(StoreUnavailable) {
                try AtomicFile.makeDirectories(AtomicFile.split(path).directory, for: path, below: root, fileSystem: fs)
                // O_NONBLOCK: a FIFO planted at the path must not make the open wait.
                let descriptor = fs.open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
                if descriptor < 0 {
                    next = .unusable("cannot open the lock \(path): \(POSIX.message(errno))")
                } else {
                    var info = stat()
                    if fs.fstat(descriptor, &info) == 0, POSIX.FileKind(info) == .regular {
                        next = .file(descriptor: descriptor, identity: FileLock.Identity(info))
                    } else {
                        fs.close(descriptor)
                        next = .unusable("cannot use the lock \(path): something other than a regular file stands there")
                    }
                }
            } catch {
                next = .unusable(error.message)
            }
        }
        let previous = pinned.withLock { pin in
            defer { pin = next }
            return pin
        }
        if case .file(let descriptor, _) = previous { fs.close(descriptor) }
    }

    /// Runs `write`, which writes `place`, holding the lock shared, if no erasure
    /// ran since the last `pin()` and the app's consent, where it needs it, is
    /// still recorded.
    ///
    /// - Throws: `StoreUnavailable` when the write must not happen, saying why;
    ///   whatever `write` throws.
    func write(_ place: String, _ write: () throws(StoreUnavailable) -> Void) throws(StoreUnavailable) {
        guard enabled else { return try write() }
        let withdrawn = StoreUnavailable(.io, "\(place) was not written: the user withdrew consent for this app while it resolved")
        let expected: FileLock.Identity?
        switch pinned.withLock({ $0 }) {
        case .none:
            throw StoreUnavailable(.io, "\(place) was not written: the app has not read \(path) yet")
        case .withdrawn:
            throw withdrawn
        case .unusable:
            expected = nil
        case .file(_, let identity):
            expected = identity
        }
        // Before the lock, too, which makes its file if it is missing.
        if let consentFile, !fileSystem.exists(consentFile) { throw withdrawn }
        let lock: FileLock
        switch FileLock.acquire(
            path, mode: .shared, waitingAtMost: Self.writerWait, below: root, fileSystem: fileSystem,
            consequence: "nothing was written, so that an erasure under way is not undone")
        {
        case .success(let held):
            lock = held
        case .failure(let failure) where failure.kind == .unusable && expected == nil:
            // Unusable since the resolution began: no erasing command can have
            // run meanwhile (each needs this lock), and the app's copies outside
            // the shared directory are its own to keep.
            if let consentFile, !fileSystem.exists(consentFile) { throw withdrawn }
            return try write()
        case .failure(let failure):
            throw StoreUnavailable(.io, "\(place) was not written: \(failure.message)")
        }
        defer { lock.release() }
        guard lock.identity == expected else {
            let why =
                expected == nil
                ? "\(path) could not be used when the app began reading, so it cannot tell whether its copies were erased since"
                : """
                the app's copies were erased while it resolved (consent withdrawn, the app removed, forget or reset), \
                so what it read may be what was erased
                """
            throw StoreUnavailable(.io, "\(place) was not written: \(why); its next resolution reads again")
        }
        if let consentFile, !fileSystem.exists(consentFile) { throw withdrawn }
        try write()
    }

    deinit {
        if case .file(let descriptor, _) = pinned.withLock({ $0 }) { fileSystem.close(descriptor) }
    }
}

/// A place whose writes go through an `ErasureFence`.
struct FencedPlace: RecordPlace {
    /// The place written.
    let place: any RecordPlace
    /// The fence every write passes.
    let fence: ErasureFence

    var name: String { place.name }
    var kind: Report.Place { place.kind }
    var location: String { place.location }
    func read() -> StoreRead { place.read() }
    func write(_ bytes: Data) throws(StoreUnavailable) {
        try fence.write(place.name) { () throws(StoreUnavailable) in try place.write(bytes) }
    }
    func quarantine(now: Date) throws(StoreUnavailable) -> String? { try place.quarantine(now: now) }
}
