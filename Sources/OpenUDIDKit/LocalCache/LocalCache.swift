import FoundationEssentials
import Glibc
import InputGate

/// One app's own copy of the identifier, and its own opt-out choice.
///
/// The file holds a single `SlotRecord` in the same format as every slot,
/// checked by the same parser. The app's opt-out choice is that record's
/// `optOut` field: opting out replaces the cached identifier with an
/// opted-out record, so an app that opted out keeps no copy of the
/// identifier; opting back in removes the file, and the next resolution
/// fetches the consensus again.
package struct LocalCache: Sendable, Hashable {
    /// The app whose cache this is.
    package let app: AppIdentity
    /// The cache file.
    package let path: String
    /// The directory below which every directory must be a real one, never a link
    /// (the XDG data home); `nil` checks the cache's own directory alone.
    package let root: String?
    /// The file system every call goes through; `.system` outside tests.
    package let fileSystem: FileSystem

    /// The cache of `app` at `path`.
    ///
    /// - Parameters:
    ///   - app: The app whose cache it is.
    ///   - path: The cache file, created on first write.
    ///   - root: The directory below which no link is followed; by default the file's own directory must not be a link.
    ///   - fileSystem: The file system to go through.
    package init(app: AppIdentity, path: String, root: String? = nil, fileSystem: FileSystem = .system) {
        self.app = app
        self.path = path
        self.root = root
        self.fileSystem = fileSystem
    }

    /// The cache of `app` at its standard place in `paths`.
    ///
    /// - Parameters:
    ///   - app: The app whose cache it is.
    ///   - paths: The storage locations to use.
    ///   - fileSystem: The file system to go through.
    package init(app: AppIdentity, paths: StoragePaths, fileSystem: FileSystem = .system) {
        self.init(app: app, path: paths.localCacheFile(for: app), root: paths.dataHome, fileSystem: fileSystem)
    }

    /// What the cache holds.
    package enum Content: Sendable, Equatable {
        /// No cache file: the app has not resolved an identifier yet (or was reset).
        case absent
        /// The app's identifier.
        case identifier(SlotRecord)
        /// The app opted out; the record carries when.
        case optedOut(SlotRecord)
        /// The cache could not be read or holds no valid record of this app; what it means is unknown.
        case unavailable(StoreUnavailable)
    }

    /// Reads and validates the cache.
    ///
    /// A file that does not parse, or that holds another app's record, is
    /// reported as `.unavailable` with kind `.corrupt`; reading leaves it
    /// as it is, and `quarantine(now:)` moves it aside.
    ///
    /// - Parameter now: The reader's clock, for `SlotRecord.parse(_:now:)`.
    /// - Returns: What the cache holds.
    package func read(now: Date = Date()) -> Content {
        switch AtomicFile.read(path, below: root, fileSystem: fileSystem) {
        case .absent:
            return .absent
        case .unavailable(let problem):
            return .unavailable(problem)
        case .found(let bytes):
            let record: SlotRecord
            do {
                record = try SlotRecord.parse(bytes, now: now)
            } catch {
                return .unavailable(StoreUnavailable(.corrupt, "\(path): \(error.description)", code: error.code))
            }
            guard record.app == app.id else {
                return .unavailable(
                    StoreUnavailable(
                        .corrupt,
                        "\(path) holds a record of \(quoted(record.app)), not of \(quoted(app.id))", code: .misplaced))
            }
            return record.optOut ? .optedOut(record) : .identifier(record)
        }
    }

    /// Stores `identifier` as the app's value.
    ///
    /// - Parameters:
    ///   - identifier: The identifier; `Identifier.optedOut` records an opt-out.
    ///   - born: When `identifier` was first generated, in milliseconds since the epoch.
    ///   - date: The time to record as `written`.
    /// - Throws: `StoreUnavailable`; the old file is then intact.
    package func write(_ identifier: Identifier, born: Int64, at date: Date = Date()) throws(StoreUnavailable) {
        let record = SlotRecord(id: identifier, app: app, born: born, written: Milliseconds.since1970(date))
        try AtomicFile.write(record.encoded(), to: path, below: root, fileSystem: fileSystem)
    }

    /// Records that the app opted out, forgetting its cached identifier.
    ///
    /// - Parameter date: When the app opted out.
    /// - Throws: `StoreUnavailable`; the old file is then intact.
    package func optOut(at date: Date = Date()) throws(StoreUnavailable) {
        let milliseconds = Milliseconds.since1970(date)
        let record = SlotRecord(id: .optedOut, app: app, born: milliseconds, written: milliseconds)
        try AtomicFile.write(record.encoded(), to: path, below: root, fileSystem: fileSystem)
    }

    /// Deletes the cache file: the app's value and any opt-out; a missing file is fine.
    ///
    /// - Throws: `StoreUnavailable` when it cannot be removed.
    package func remove() throws(StoreUnavailable) {
        try AtomicFile.remove(path, below: root, fileSystem: fileSystem)
    }

    /// Moves the cache file aside as `<file>.corrupt-<milliseconds>`, keeping its bytes.
    ///
    /// - Parameter now: The time for the new name.
    /// - Returns: The new path, or `nil` when there was no file.
    /// - Throws: `StoreUnavailable` when it cannot be moved.
    package func quarantine(now: Date = Date()) throws(StoreUnavailable) -> String? {
        try AtomicFile.quarantine(path, now: now, below: root, fileSystem: fileSystem)
    }
}

/// An app's local cache as a `RecordPlace`: its bytes, whatever record they hold.
package struct LocalCachePlace: RecordPlace {
    /// The cache.
    package let cache: LocalCache

    /// The place of `cache`.
    package init(_ cache: LocalCache) {
        self.cache = cache
    }

    /// `"local cache"`.
    package var name: String { "local cache" }
    /// The kind of place: localCache.
    package var kind: Report.Place { .localCache }
    /// The cache file's path.
    package var location: String { cache.path }
    /// Reads the cache file's bytes.
    package func read() -> StoreRead { AtomicFile.read(cache.path, below: cache.root, fileSystem: cache.fileSystem) }
    /// Replaces the cache file.
    package func write(_ bytes: Data) throws(StoreUnavailable) {
        try AtomicFile.write(bytes, to: cache.path, below: cache.root, fileSystem: cache.fileSystem)
    }
    /// Moves the cache file aside as `<file>.corrupt-<milliseconds>`.
    package func quarantine(now: Date) throws(StoreUnavailable) -> String? { try cache.quarantine(now: now) }
}
