import Foundation
import Glibc

/// A fresh directory under the system temporary directory, removed when the value goes away.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path + "/openudid-files-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(
            atPath: base, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        path = base
    }

    func appending(_ component: String) -> String { path + "/" + component }

    deinit {
        // Tests make directories read-only; give write access back so removal succeeds.
        if let enumerator = FileManager.default.enumerator(atPath: path) {
            for case let relative as String in enumerator {
                chmod(path + "/" + relative, 0o700)
            }
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A value guarded by a lock, for collecting results from plain threads.
final class Locked<Value>: @unchecked Sendable {
    // Every access to `value` goes through `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// Runs `body` on `count` plain threads at once and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            done.signal()
        }
        thread.start()
    }
    for _ in 0..<count { done.wait() }
}

/// Runs `body` with file permission checks that apply, even when the tests run as root.
///
/// Root bypasses file modes, so a read-only directory would not stop it.
/// `setfsuid(2)` changes the file-system user of the calling thread only, so
/// `body` runs on a thread of its own as `nobody` while the rest of the test
/// process keeps its rights.
func withoutRootPrivileges<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
    guard geteuid() == 0 else { return body() }
    typealias SetFSUID = @convention(c) (UInt32) -> Int32
    // setfsuid is declared in <sys/fsuid.h>, which the Glibc module does not import.
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setfsuid") else { return nil }
    let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
    let result = Locked<T?>(nil)
    onThreads(1) { _ in
        let previous = setfsuid(65534)
        let value = body()
        _ = setfsuid(UInt32(bitPattern: previous))
        result.withLock { $0 = value }
    }
    return result.withLock { $0 }
}

/// The permission bits of `path`, not following a link.
func mode(of path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

/// Whether `path` itself is a symbolic link.
func isSymbolicLink(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
}

/// The names in `directory`, sorted.
func names(in directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

/// Writes `text` to `path` with plain Foundation, bypassing the code under test.
func plant(_ text: String, at path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

/// The contents of `path` as text, or `nil`.
func contents(of path: String) -> String? {
    FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
}
