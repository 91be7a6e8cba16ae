import Glibc
import Synchronization

/// The one way the library reaches the file system: every libc file call it
/// makes goes through an instance of this type.
///
/// `FileSystem.system` passes each call straight to libc. A test makes its own
/// instance and injects faults into it ("`ENOSPC` on the 2nd `write`"), so the
/// disk-full, read-only and unreadable paths run without root and without
/// touching any other test: the faults belong to the instance, not to the process.
///
/// Every call that can be interrupted is retried on `EINTR` here, including an
/// injected `EINTR`, so callers never see it; `close` is never retried (on Linux
/// the descriptor is gone whatever it returns).
package final class FileSystem: Sendable, Hashable {
    /// The kinds of call a fault can be injected into.
    package enum Call: String, Sendable, Hashable, CaseIterable {
        /// `open`, `openat`.
        case open
        /// `read`.
        case read
        /// `write`.
        case write
        /// `fsync`.
        case fsync
        /// `close`.
        case close
        /// `rename`.
        case rename
        /// `link`.
        case link
        /// `unlink`, `unlinkat`.
        case unlink
        /// `mkdir`.
        case mkdir
        /// `flock`.
        case flock
        /// `stat`, `fstat`, `fstatat`.
        case stat
        /// `lstat`.
        case lstat
        /// `fdopendir`, `readdir`.
        case readdir
    }

    /// A fault waiting to happen: `errno` on the `nth` matching call of a kind,
    /// counted from when it was injected, and on the `times - 1` calls after it.
    private struct Fault {
        let call: Call
        let code: Int32
        let path: String?
        var skip: Int
        var times: Int
    }

    private struct State {
        var faults: [Fault] = []
        var counts: [Call: Int] = [:]
        /// The path of each call, in order, when it has one.
        var paths: [Call: [String]] = [:]
        /// The path each open descriptor was opened with, so calls on a descriptor match by path too.
        var opened: [Int32: String] = [:]
    }

    /// `nil` for `system`, which never fails on purpose and counts nothing.
    private let state: Mutex<State>?

    /// The real file system, with no faults.
    package static let system = FileSystem(injectable: false)

    private init(injectable: Bool) {
        state = injectable ? Mutex(State()) : nil
    }

    /// A file system of its own, into which faults can be injected.
    package convenience init() {
        self.init(injectable: true)
    }

    /// Makes the `nth` call of kind `call` from now on, and the `times - 1` calls
    /// after it, fail with `code` before reaching libc.
    ///
    /// - Parameters:
    ///   - code: The `errno` to fail with (`ENOSPC`, `EROFS`, `EACCES`, `EINTR`, `EIO`…).
    ///   - call: The kind of call.
    ///   - nth: Which matching call fails first, 1 for the very next one.
    ///   - times: How many matching calls in a row fail; `Int.max` for every one.
    ///   - path: Only calls on a path containing this text count (for a call on a
    ///     descriptor, the path it was opened with; for `openat`, the name); `nil` for every call.
    package func inject(_ code: Int32, on call: Call, at nth: Int = 1, times: Int = 1, path: String? = nil) {
        precondition(state != nil, "FileSystem.system takes no faults; make an instance of your own")
        precondition(nth >= 1 && times >= 1)
        state?.withLock { $0.faults.append(Fault(call: call, code: code, path: path, skip: nth - 1, times: times)) }
    }

    /// Removes every fault not yet spent.
    package func clearFaults() {
        state?.withLock { $0.faults.removeAll() }
    }

    /// How many calls of kind `call` this instance made, injected failures included (0 for `system`).
    package func count(of call: Call) -> Int {
        state?.withLock { $0.counts[call, default: 0] } ?? 0
    }

    /// The paths of the calls of kind `call` this instance made, in order
    /// (for a call on a descriptor, the path it was opened with; empty for `system`).
    package func paths(of call: Call) -> [String] {
        state?.withLock { $0.paths[call, default: []] } ?? []
    }

    /// Counts a call of kind `call` on `path` and returns the `errno` it must fail with, if any.
    private func fault(_ call: Call, _ path: String?) -> Int32? {
        state?.withLock { state -> Int32? in
            state.counts[call, default: 0] += 1
            if let path { state.paths[call, default: []].append(path) }
            let matches = { (fault: Fault) in
                fault.call == call && (fault.path.map { wanted in path?.contains(wanted) ?? false } ?? true)
            }
            guard let index = state.faults.firstIndex(where: matches) else { return nil }
            if state.faults[index].skip > 0 {
                state.faults[index].skip -= 1
                return nil
            }
            let code = state.faults[index].code
            state.faults[index].times -= 1
            if state.faults[index].times == 0 { state.faults.remove(at: index) }
            return code
        }
    }

    /// Runs `body` as a call of kind `call`: an injected fault first, then libc,
    /// again and again while the answer is `EINTR`.
    private func perform<T: SignedInteger>(_ call: Call, _ path: String?, _ body: () -> T) -> T {
        while true {
            if let code = fault(call, path) {
                errno = code
                if code == EINTR { continue }
                return -1
            }
            let result = body()
            if result != -1 || errno != EINTR { return result }
        }
    }

    // MARK: Calls

    /// The path `descriptor` was opened with, for matching faults.
    private func path(of descriptor: Int32) -> String? {
        state?.withLock { $0.opened[descriptor] }
    }

    /// The path of `name` relative to the open `directory`, for matching faults.
    private func path(of name: String, in directory: Int32) -> String {
        path(of: directory).map { POSIX.joined($0, name) } ?? name
    }

    /// Remembers the path of a descriptor just opened (injectable instances only).
    private func opened(_ descriptor: Int32, _ path: String) -> Int32 {
        if descriptor >= 0 { state?.withLock { $0.opened[descriptor] = path } }
        return descriptor
    }

    /// `open(2)`.
    package func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        opened(perform(.open, path) { Glibc.open(path, flags, mode) }, path)
    }

    /// `openat(2)`.
    package func openat(_ directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        let path = path(of: name, in: directory)
        return opened(perform(.open, path) { Glibc.openat(directory, name, flags, mode) }, path)
    }

    /// `read(2)`.
    package func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        perform(.read, path(of: descriptor)) { Glibc.read(descriptor, buffer, count) }
    }

    /// `write(2)`.
    package func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        perform(.write, path(of: descriptor)) { Glibc.write(descriptor, buffer, count) }
    }

    /// `fsync(2)`.
    package func fsync(_ descriptor: Int32) -> Int32 {
        perform(.fsync, path(of: descriptor)) { Glibc.fsync(descriptor) }
    }

    /// `close(2)`, never retried.
    @discardableResult
    package func close(_ descriptor: Int32) -> Int32 {
        let path = path(of: descriptor)
        state?.withLock { _ = $0.opened.removeValue(forKey: descriptor) }
        let result = Glibc.close(descriptor)
        if let code = fault(.close, path) {
            errno = code
            return -1
        }
        return result
    }

    /// `rename(2)`.
    package func rename(_ from: String, _ to: String) -> Int32 {
        perform(.rename, from) { Glibc.rename(from, to) }
    }

    /// `link(2)`.
    package func link(_ from: String, _ to: String) -> Int32 {
        perform(.link, from) { Glibc.link(from, to) }
    }

    /// `unlink(2)`.
    @discardableResult
    package func unlink(_ path: String) -> Int32 {
        perform(.unlink, path) { Glibc.unlink(path) }
    }

    /// `unlinkat(2)`.
    @discardableResult
    package func unlinkat(_ directory: Int32, _ name: String, _ flags: Int32) -> Int32 {
        perform(.unlink, path(of: name, in: directory)) { Glibc.unlinkat(directory, name, flags) }
    }

    /// `mkdir(2)`.
    package func mkdir(_ path: String, _ mode: mode_t) -> Int32 {
        perform(.mkdir, path) { Glibc.mkdir(path, mode) }
    }

    /// `flock(2)`.
    package func flock(_ descriptor: Int32, _ operation: Int32) -> Int32 {
        perform(.flock, path(of: descriptor)) { systemFlock(descriptor, operation) }
    }

    /// `stat(2)`, following links.
    package func stat(_ path: String, _ info: inout Glibc.stat) -> Int32 {
        perform(.stat, path) { systemStat(path, &info) }
    }

    /// `fstat(2)`.
    package func fstat(_ descriptor: Int32, _ info: inout Glibc.stat) -> Int32 {
        perform(.stat, path(of: descriptor)) { Glibc.fstat(descriptor, &info) }
    }

    /// `fstatat(2)`.
    package func fstatat(_ directory: Int32, _ name: String, _ info: inout Glibc.stat, _ flags: Int32) -> Int32 {
        perform(.stat, path(of: name, in: directory)) { Glibc.fstatat(directory, name, &info, flags) }
    }

    /// `lstat(2)`.
    package func lstat(_ path: String, _ info: inout Glibc.stat) -> Int32 {
        perform(.lstat, path) { Glibc.lstat(path, &info) }
    }

    /// What stands at `path` itself (`lstat(2)`: a link is never followed).
    ///
    /// - Returns: Its kind, nil when nothing stands there (`ENOENT`), or the `errno` of the failure.
    package func kind(at path: String) -> Result<POSIX.FileKind?, POSIX.Errno> {
        var info = Glibc.stat()
        if lstat(path, &info) == 0 { return .success(POSIX.FileKind(info)) }
        return errno == ENOENT ? .success(nil) : .failure(POSIX.Errno(errno))
    }

    /// Whether anything, even a dangling link, stands at `path`.
    package func exists(_ path: String) -> Bool {
        var info = Glibc.stat()
        return lstat(path, &info) == 0
    }

    /// A directory being listed by `listing(_:limit:_:)`.
    package struct Listing {
        /// The open directory, for `openat`, `fstatat` and `unlinkat` relative to it.
        package let descriptor: Int32
        /// The names in it, `.` and `..` left out, in the order the directory gave them.
        package let names: [String]
        /// Whether the directory had more than `limit` entries, so that some were never read.
        package let stopped: Bool
    }

    /// Lists the directory at `path`, opened without following a link there, and
    /// hands the names to `body` with the directory still open: the one way the
    /// library reads a directory.
    ///
    /// - Parameters:
    ///   - limit: The most entries read (`.` and `..` count), so that a directory
    ///     stuffed with millions of names cannot stall the caller.
    ///   - body: What to do with the listing; the directory is closed after it.
    /// - Returns: What `body` returns, or the `errno` that opening or reading the
    ///   directory failed with (`ENOENT` when there is none, `ELOOP` or `ENOTDIR`
    ///   when a link or something else stands there).
    package func listing<T>(_ path: String, limit: Int = .max, _ body: (Listing) -> T) -> Result<T, POSIX.Errno> {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(POSIX.Errno(errno)) }
        let injected = fault(.readdir, path)
        guard injected == nil, let stream = fdopendir(descriptor) else {
            let code = injected ?? errno
            close(descriptor)
            return .failure(POSIX.Errno(code))
        }
        defer {
            state?.withLock { _ = $0.opened.removeValue(forKey: descriptor) }
            closedir(stream)
        }
        var names: [String] = []
        var read = 0
        while true {
            if let code = fault(.readdir, path) { return .failure(POSIX.Errno(code)) }
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { return .failure(POSIX.Errno(errno)) }
                return .success(body(Listing(descriptor: descriptor, names: names, stopped: false)))
            }
            read += 1
            if read > limit { return .success(body(Listing(descriptor: descriptor, names: names, stopped: true))) }
            let name = POSIX.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Two handles are the same file system only when they are the same instance.
    package static func == (lhs: FileSystem, rhs: FileSystem) -> Bool { lhs === rhs }

    /// Hashes the instance's identity.
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

// `Glibc.flock` and `Glibc.stat` name the structs; the functions are reached unqualified here.
private func systemFlock(_ descriptor: Int32, _ operation: Int32) -> Int32 { flock(descriptor, operation) }
private func systemStat(_ path: String, _ info: inout stat) -> Int32 { stat(path, &info) }
