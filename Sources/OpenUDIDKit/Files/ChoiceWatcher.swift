import Glibc
import Synchronization
import XSelection

/// Tells a running participant when the user's choices change on disk: the
/// user-wide opt-out marker, the app's local cache (where a per-app opt-out is
/// kept), its consent record and the user's reset marker, whichever process changed them
/// (docs/PROTOCOL.md §8).
///
/// It watches, with inotify, the directory of each file, or while that does
/// not exist the nearest ancestor that does, and arms again when directories
/// appear. Only events on those names (and on the directories leading to them)
/// count, so the app's own writes elsewhere do not wake it. It has no thread:
/// the participant's loop polls `descriptor` and calls `takeEvents()`.
final class ChoiceWatcher: Sendable {
    /// The inotify descriptor; readable when something happened. It stays
    /// open as long as the watcher, so a loop polling it never polls a
    /// descriptor closed and reused meanwhile.
    let descriptor: Int32
    private let files: [String]
    /// Watch descriptor → the directory it watches.
    private let watches = Mutex<[Int32: String]>([:])
    private let state = Mutex<ChoiceState?>(nil)

    /// The choices last acted on, kept for the participant (which compares before it resolves again).
    var lastState: ChoiceState? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    /// Starts watching `files` (absolute paths); nil when inotify is not available.
    init?(files: [String]) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.files = files
        arm()
    }

    deinit { close(descriptor) }

    /// Reads every event waiting, without blocking, and arms again for
    /// directories that appeared.
    ///
    /// - Returns: Whether any of them concerns the watched files.
    func takeEvents() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var found = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            if relevant(buffer, count: count) { found = true }
        }
        if found { arm() }
        return found
    }

    /// The directories to watch: each file's own, or its nearest existing ancestor.
    private func arm() {
        var wanted: Set<String> = []
        for file in files {
            var directory = Self.parent(of: file)
            while !directory.isEmpty, directory != "/", access(directory, F_OK) != 0 {
                directory = Self.parent(of: directory)
            }
            wanted.insert(directory.isEmpty ? "/" : directory)
        }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)
        watches.withLock { watches in
            for directory in wanted where !watches.values.contains(directory) {
                let watch = inotify_add_watch(descriptor, directory, mask)
                if watch >= 0 { watches[watch] = directory }
            }
        }
    }

    /// Whether any event of the batch names one of the files or a directory on the way to one.
    private func relevant(_ buffer: [UInt8], count: Int) -> Bool {
        let known = watches.withLock { $0 }
        var offset = 0
        var found = false
        buffer.withUnsafeBytes { raw in
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameBytes = raw[nameStart..<min(nameStart + Int(event.len), count)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                if let directory = known[event.wd] {
                    let path = directory == "/" ? "/" + name : directory + "/" + name
                    if name.isEmpty || files.contains(where: { $0 == path || $0.hasPrefix(path + "/") }) {
                        found = true
                    }
                }
                offset = nameStart + Int(event.len)
            }
        }
        return found
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
