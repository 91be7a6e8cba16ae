import FoundationEssentials
import Glibc
import InputGate

/// Small files read and replaced safely in directories other processes can write to.
///
/// Every process of the user can write the shared directories, so nothing is
/// trusted: a read never follows a symbolic link at the file, never blocks on
/// a FIFO and never reads past a size cap; a write never follows or deletes
/// whatever stands at the target and replaces the file atomically, so a
/// reader sees the old bytes or the new ones, never a mix.
///
/// Symbolic links in the directories above the store's root (the XDG data or
/// config home) are followed: users legitimately link `~/.local/share`
/// elsewhere. Below the root, every directory OpenUDID creates or writes into
/// (`openudid/`, `slots/`, `vendors/`, `ns/<namespace>/`, an app's own
/// directory, the config's `openudid/`) must be a real directory: a link there
/// is refused on write and makes a read unavailable (unknown), never absent.
///
/// A process that has a file size limit (`ulimit -f`) receives `SIGXFSZ` when
/// a write would cross it, and by default that signal ends the process. This
/// library does not change signal dispositions, which belong to the
/// application; an application that wants such writes to fail with `EFBIG`
/// instead must ignore `SIGXFSZ` itself.
enum AtomicFile {
    /// Reads the file at `path`, refusing links, non-regular files and anything over `limit` bytes.
    ///
    /// - Parameters:
    ///   - path: The file to read.
    ///   - limit: The largest size accepted, in bytes.
    /// - Returns: The bytes, `.absent` when there is no file, or why it could not be read.
    ///   - root: The directory below which no link is followed (see the type's notes);
    ///     `nil` checks the file's own directory only.
    static func read(
        _ path: String, limit: Int = SlotRecord.maximumSize, below root: String? = nil, fileSystem fs: FileSystem = .system
    ) -> StoreRead {
        do {
            guard try directoriesExist(split(path).directory, for: path, below: root, fileSystem: fs) else { return .absent }
        } catch {
            return .unavailable(error)
        }
        return read(in: AT_FDCWD, name: path, path: path, limit: limit, fileSystem: fs)
    }

    /// Checks `directory` and its parents below `root` without following a link.
    ///
    /// - Parameter path: The file or directory to name in messages.
    /// - Returns: `true` when they all exist as real directories, `false` when one
    ///   is missing (so nothing below it can exist).
    /// - Throws: `StoreUnavailable` saying why one cannot be used.
    static func directoriesExist(
        _ directory: String, for path: String, below root: String?, fileSystem fs: FileSystem = .system
    ) throws(StoreUnavailable) -> Bool {
        for directory in ownDirectories(directory, below: root) {
            switch fs.kind(at: directory) {
            case .success(nil): return false
            case .success(.directory): continue
            case .success(.symbolicLink): throw linkedDirectory(directory, path: path)
            case .success: throw notDirectory(directory, path: path)
            case .failure(let error) where error.code == ENOTDIR: throw notDirectory("a component of the path", path: path)
            case .failure(let error): throw failure(path, error.code, doing: "use")
            }
        }
        return true
    }

    private static func linkedDirectory(_ directory: String, path: String) -> StoreUnavailable {
        StoreUnavailable(
            .unsafePath,
            """
            cannot use \(path): \(directory) is a symbolic link; OpenUDID never follows links inside its own \
            directories; replace the link with a real directory
            """)
    }

    private static func notDirectory(_ directory: String, path: String) -> StoreUnavailable {
        StoreUnavailable(.unsafePath, "cannot use \(path): \(directory) is not a directory; remove or rename it")
    }

    /// Whether a regular file stands at `path` itself (false: nothing does), before it is replaced, removed or moved.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when anything else stands
    ///   there (it is neither followed nor removed), or `.io`.
    private static func holdsFile(_ path: String, toBe verb: String, fileSystem fs: FileSystem) throws(StoreUnavailable) -> Bool {
        switch fs.kind(at: path) {
        case .success(nil): return false
        case .success(.regular): return true
        case .success(let kind?):
            let remedy = "OpenUDID leaves it alone; remove it by hand"
            throw StoreUnavailable(.unsafePath, "cannot \(verb) \(path): \(kind) stands there, not a regular file; \(remedy)")
        case .failure(let error): throw failure(path, error.code, doing: verb)
        }
    }

    /// The directories from just below `root` down to `directory`, outermost first:
    /// the ones that must be real directories. Without a root, or when `directory`
    /// is not below it, only `directory` itself.
    static func ownDirectories(_ directory: String, below root: String?) -> [String] {
        guard let root else { return [directory] }
        if directory == root { return [] }
        let prefix = root == "/" ? "/" : root + "/"
        guard directory.hasPrefix(prefix) else { return [directory] }
        var result: [String] = []
        var current = directory
        while current != root, current.hasPrefix(prefix) {
            result.append(current)
            current = split(current).directory
        }
        return result.reversed()
    }

    /// Reads `name` relative to the open directory `directory` through the
    /// gate (`FileGate`); `path` names it in messages.
    static func read(in directory: Int32, name: String, path: String, limit: Int, fileSystem fs: FileSystem = .system) -> StoreRead {
        switch FileGate.read(name, in: directory, name: path, limit: limit, fileSystem: fs) {
        case .success(let bytes?): return .found(Data(bytes))
        case .success(nil): return .absent
        case .failure(let refusal): return .unavailable(unavailable(refusal))
        }
    }

    /// What a file the gate refused means for a store: unknown, with the remedy.
    private static func unavailable(_ refusal: FileGate.Refusal) -> StoreUnavailable {
        switch refusal.reason {
        case .link:
            StoreUnavailable(.unsafePath, "\(refusal); OpenUDID never follows links to its files; remove the link")
        case .notRegular, .notDirectory:
            StoreUnavailable(.unsafePath, "\(refusal); remove or rename it")
        case .tooLarge(let size, let limit):
            StoreUnavailable(
                .corrupt,
                """
                \(refusal.path) is \(size) bytes, over the \(limit)-byte cap; it is not read, and the app that owns it \
                moves it aside (as \(split(refusal.path).name).corrupt-<milliseconds>) before writing its record again
                """, code: .tooLarge)
        case .system(let code):
            StoreUnavailable(.io, refusal.description, errno: code)
        case .pastDeadline:
            StoreUnavailable(.io, refusal.description)
        }
    }

    /// Replaces the file at `path` with `data`, atomically and durably.
    ///
    /// Missing directories are created with mode 0700; existing ones are left
    /// as they are. The file is written under a temporary name in the same
    /// directory (mode 0600), flushed to disk, and renamed over the target.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when something other
    ///   than a regular file stands at `path` (it is neither followed nor
    ///   removed), or `.io` naming the path and the system's reason; the old
    ///   file is then intact.
    ///   - root: The directory below which no link is followed (see the type's notes);
    ///     `nil` checks the file's own directory only.
    static func write(_ data: Data, to path: String, below root: String? = nil, fileSystem fs: FileSystem = .system)
        throws(StoreUnavailable)
    {
        let directory = split(path).directory
        // A directory this write just created holds no temporaries to look for.
        if try !makeDirectories(directory, for: path, below: root, fileSystem: fs) {
            removeStaleTemporaries(in: directory, fileSystem: fs)
        }
        _ = try holdsFile(path, toBe: "write", fileSystem: fs)

        let (temporary, descriptor) = try createTemporary(in: directory, for: path, fileSystem: fs)
        var renamed = false
        defer { if !renamed { fs.unlink(temporary) } }

        do throws(StoreUnavailable) {
            try writeAll(data, to: descriptor, path: path, fileSystem: fs)
            if fs.fsync(descriptor) != 0 { throw failure(path, errno) }
        } catch {
            fs.close(descriptor)
            throw error
        }
        // A close error after a successful fsync is rare (NFS), but it can mean lost data.
        if fs.close(descriptor) != 0, errno != EINTR { throw failure(path, errno) }

        guard fs.rename(temporary, path) == 0 else { throw failure(path, errno) }
        renamed = true
        // The rename is done; failing to flush the directory can no longer
        // restore the old file, so it is not reported as a failed write.
        syncDirectory(directory, fileSystem: fs)
    }

    /// Removes the file at `path`; a missing file is fine.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when something other
    ///   than a regular file stands there (it is left alone), or `.io`.
    static func remove(_ path: String, below root: String? = nil, fileSystem fs: FileSystem = .system) throws(StoreUnavailable) {
        let directory = split(path).directory
        guard try directoriesExist(directory, for: path, below: root, fileSystem: fs),
            try holdsFile(path, toBe: "remove", fileSystem: fs)
        else { return }
        guard fs.unlink(path) == 0 || errno == ENOENT else { throw failure(path, errno, doing: "remove") }
        syncDirectory(directory, fileSystem: fs)
    }

    /// Moves a corrupt file aside to `<path>.corrupt-<milliseconds>` so nothing is lost.
    ///
    /// The new name never replaces an existing file: a clash gets a `-1`, `-2`, … suffix.
    ///
    /// - Parameters:
    ///   - path: The file to move.
    ///   - now: The time for the new name.
    /// - Returns: The new path, or `nil` when there was no file.
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` for anything but a regular file, or `.io`.
    static func quarantine(
        _ path: String, now: Date = Date(), below root: String? = nil, fileSystem fs: FileSystem = .system
    ) throws(StoreUnavailable) -> String? {
        let directory = split(path).directory
        guard try directoriesExist(directory, for: path, below: root, fileSystem: fs),
            try holdsFile(path, toBe: "quarantine", fileSystem: fs)
        else { return nil }
        for target in asideNames(for: path, now: now) {
            // link(2) fails rather than replace an existing name, which rename(2) would not.
            if fs.link(path, target) == 0 {
                guard fs.unlink(path) == 0 || errno == ENOENT else {
                    let code = errno
                    fs.unlink(target)
                    throw failure(path, code, doing: "quarantine")
                }
            } else {
                switch errno {
                case EEXIST:
                    continue
                case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK, EXDEV:
                    // File systems without hard links: check the name is free, then rename.
                    guard case .success(nil) = fs.kind(at: target) else { continue }
                    guard fs.rename(path, target) == 0 else { throw failure(path, errno, doing: "quarantine") }
                case ENOENT:
                    return nil
                case let code:
                    throw failure(path, code, doing: "quarantine")
                }
            }
            syncDirectory(directory, fileSystem: fs)
            return target
        }
        throw StoreUnavailable(.io, "cannot quarantine \(path): 1000 quarantined copies from this millisecond already exist")
    }

    /// The names a file at `path` is moved aside to, in the order they are
    /// tried: `<path>.corrupt-<milliseconds>`, then the same with `-1` … `-999`.
    static func asideNames(for path: String, now: Date) -> some Sequence<String> {
        let (directory, name) = split(path)
        let suffix = ".corrupt-\(Milliseconds.since1970(now))"
        return (0..<1000).lazy.map { POSIX.joined(directory, quarantineName(name, suffix: $0 == 0 ? suffix : "\(suffix)-\($0)")) }
    }

    /// The longest file name the file systems OpenUDID runs on accept (`NAME_MAX`).
    static let maximumNameLength = 255

    /// `name` followed by `suffix`, with the end of `name` cut so that the whole
    /// fits `maximumNameLength` bytes (a long app id's `.json` goes first).
    static func quarantineName(_ name: String, suffix: String) -> String {
        let room = maximumNameLength - suffix.utf8.count
        guard name.utf8.count > room else { return name + suffix }
        // Names here are ASCII (app ids, vendors, fixed words), so cutting bytes cuts characters.
        return String(decoding: name.utf8.prefix(room), as: UTF8.self) + suffix
    }

    // MARK: - Pieces of a write

    /// Splits a path into its directory and last component.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// Creates `directory` and its missing parents with mode 0700.
    ///
    /// The directory above each one created is flushed (best effort), so that
    /// the new entry survives a crash: a file flushed into a directory whose
    /// own entry was never flushed can vanish with it.
    ///
    /// Directories above `root` may be links; those below it (or `directory`
    /// itself when there is no root) must be real directories.
    ///
    /// - Returns: Whether this call created `directory` itself (it is then empty).
    @discardableResult
    static func makeDirectories(
        _ directory: String, for path: String, below root: String? = nil, fileSystem fs: FileSystem = .system
    ) throws(StoreUnavailable) -> Bool {
        let own = ownDirectories(directory, below: root)
        // The usual case, every directory already there: one lstat for each of
        // those below the root (the last one is `directory`), none for those
        // above it. Anything else takes the walk below, which says what is wrong.
        if !own.isEmpty, (try? directoriesExist(directory, for: path, below: root, fileSystem: fs)) == true { return false }
        var created = false
        // The directories that gained an entry, flushed once all are made.
        var grown: [String] = []
        defer { for parent in grown { syncDirectory(parent, fileSystem: fs) } }
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            if own.contains(prefix), case .success(.symbolicLink) = fs.kind(at: prefix) { throw linkedDirectory(prefix, path: path) }
            var info = stat()
            if fs.stat(prefix, &info) == 0 {
                guard POSIX.FileKind(info) == .directory else { throw notDirectory(prefix, path: path) }
                continue
            }
            guard errno == ENOENT else { throw failure(path, errno) }
            // EEXIST: another process created it between stat and mkdir, which is fine.
            if fs.mkdir(prefix, 0o700) == 0 {
                created = prefix == directory
                grown.append(split(prefix).directory)
            } else if errno != EEXIST {
                throw failure(path, errno)
            }
        }
        return created
    }

    /// The prefix of every temporary file name; nothing else in the directories starts with it.
    static let temporaryPrefix = ".openudid-tmp-"

    /// How old a temporary file must be before a writer removes it as left over.
    ///
    /// A write lives for milliseconds between creating its temporary file and
    /// renaming it; one whose file is older than this was killed (or is stalled
    /// so long that failing its rename, which leaves the old file intact, is fine).
    static let staleTemporaryAge: Int = 60

    /// Removes temporary files that a killed writer left in `directory`; best effort.
    ///
    /// Only regular files named `.openudid-tmp-*` whose last change is more than
    /// `staleTemporaryAge` seconds old are removed; at most `FileSlotStore.scanLimit`
    /// entries are looked at.
    static func removeStaleTemporaries(in directory: String, now: time_t = time(nil), fileSystem fs: FileSystem = .system) {
        _ = fs.listing(directory, limit: FileSlotStore.scanLimit) { listing in
            for name in listing.names where name.hasPrefix(temporaryPrefix) {
                var info = stat()
                guard fs.fstatat(listing.descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, POSIX.FileKind(info) == .regular,
                    now - info.st_mtim.tv_sec > staleTemporaryAge
                else { continue }
                fs.unlinkat(listing.descriptor, name, 0)
            }
        }
    }

    /// Creates a fresh temporary file next to `path`, never reusing or following an existing name.
    private static func createTemporary(
        in directory: String, for path: String, fileSystem fs: FileSystem
    ) throws(StoreUnavailable) -> (String, Int32) {
        var generator = SystemRandomNumberGenerator()
        var code: Int32 = EEXIST
        for _ in 0..<16 {
            // A leading dot and no `.json` suffix keep listings from ever taking it for a slot.
            // 30 bytes at most, whatever the target's name: it always fits NAME_MAX.
            let temporary = POSIX.joined(directory, temporaryPrefix + String(generator.next() as UInt64, radix: 16))
            let descriptor = fs.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 { return (temporary, descriptor) }
            code = errno
            if code != EEXIST { break }
        }
        throw failure(path, code)
    }

    private static func writeAll(_ data: Data, to descriptor: Int32, path: String, fileSystem fs: FileSystem) throws(StoreUnavailable) {
        let bytes = [UInt8](data)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                fs.write(descriptor, raw.baseAddress.map { $0 + written }, raw.count - written)
            }
            if count < 0 { throw failure(path, errno) }
            // write(2) returning 0 for a non-empty regular-file write means no progress is possible.
            if count == 0 { throw failure(path, EIO) }
            written += count
        }
    }

    /// Flushes a directory's entries, so a rename survives a crash; best effort.
    private static func syncDirectory(_ directory: String, fileSystem fs: FileSystem) {
        let descriptor = fs.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fs.fsync(descriptor)
        fs.close(descriptor)
    }

    /// The error for a failed call on `path`: what was being done, the system's words, and what to do.
    static func failure(_ path: String, _ code: Int32, doing verb: String = "write") -> StoreUnavailable {
        let remedy: String
        switch code {
        case ENOSPC: remedy = "; free some disk space"
        case EDQUOT: remedy = "; the disk quota is used up"
        case EROFS: remedy = "; the file system is mounted read-only"
        case EACCES, EPERM: remedy = "; check the owner and permissions of \(split(path).directory)"
        case EFBIG: remedy = "; a file size limit (ulimit -f) is in effect"
        case ENAMETOOLONG: remedy = "; the name is longer than the file system allows"
        default: remedy = ""
        }
        return StoreUnavailable(.io, "cannot \(verb) \(path): \(POSIX.message(code))\(remedy)", errno: code)
    }
}
