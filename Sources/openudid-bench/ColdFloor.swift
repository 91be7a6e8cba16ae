import Dispatch
import Foundation
import Glibc
import OpenUDIDKit
import Synchronization

extension Bench {
    /// The durable writes a new app's first `value()` cannot skip, made with
    /// plain POSIX calls and nothing else: its file slot and its local cache,
    /// each written to a temporary file in the same directory, flushed,
    /// renamed over its name and its directory flushed, the app's own data
    /// directory made first and the directory above it flushed. The two are
    /// written at the same time, as the library writes them. A pass of it
    /// follows each pass of `cold.value.file`, so that both meet the same disk:
    /// its flush times move from minute to minute by more than the figures differ.
    ///
    /// This is one pass, for a new app `com.bench.floor<pass>`, timed; the
    /// files are removed again afterwards, untimed.
    func coldFloorPass(_ paths: StoragePaths, pass: Int) throws -> Double {
        let app = "com.bench.floor\(pass)"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let record = [UInt8](SlotRecord(id: .random(), app: app, vendor: "com.bench", born: now, written: now, optOut: false).encoded())
        let places = [
            (directory: paths.slotsDirectory, name: app + ".json", makeDirectory: false),
            (directory: paths.dataHome + "/" + app, name: paths.localCacheName, makeDirectory: true)
        ]
        let failures = Mutex([String]())
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: places.count) { index in
            let place = places[index]
            if let failure = DurableWrite.replace(place.name, in: place.directory, with: record, makingDirectory: place.makeDirectory) {
                failures.withLock { $0.append(failure) }
            }
        }
        let elapsed = seconds(ContinuousClock.now - start)
        // Untimed: the next pass meets the same session as the first.
        unlink(paths.slotsDirectory + "/" + app + ".json")
        unlink(paths.dataHome + "/" + app + "/" + paths.localCacheName)
        rmdir(paths.dataHome + "/" + app)
        if let failure = failures.withLock({ $0.first }) { throw BenchError("the cold floor's write failed: \(failure)") }
        return elapsed
    }
}

/// A file replaced durably with plain POSIX calls.
enum DurableWrite {
    /// Writes `bytes` to a temporary file in `directory`, flushes it, renames it
    /// to `name` and flushes the directory; with `makingDirectory`, makes the
    /// directory first and flushes the one above it. Returns what failed, or nil.
    static func replace(_ name: String, in directory: String, with bytes: [UInt8], makingDirectory: Bool) -> String? {
        if makingDirectory {
            if mkdir(directory, 0o700) == 0 {
                // The new directory is an entry in the one above it.
                let parent = directory.lastIndex(of: "/").map { String(directory[..<$0]) } ?? "."
                if let failure = flush(parent.isEmpty ? "/" : parent) { return failure }
            } else if errno != EEXIST {
                return "mkdir \(directory): \(errno)"
            }
        }
        let temporary = directory + "/.openudid-tmp-" + String(UInt64.random(in: .min ... .max), radix: 16)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return "open \(temporary): \(errno)" }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        close(descriptor)
        guard written == bytes.count, synced == 0 else {
            unlink(temporary)
            return "write \(temporary): \(errno)"
        }
        guard rename(temporary, directory + "/" + name) == 0 else { return "rename \(temporary): \(errno)" }
        return flush(directory)
    }

    /// Flushes `directory`'s entries; returns what failed, or nil.
    private static func flush(_ directory: String) -> String? {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return "open \(directory): \(errno)" }
        defer { close(descriptor) }
        return fsync(descriptor) == 0 ? nil : "fsync \(directory): \(errno)"
    }
}
