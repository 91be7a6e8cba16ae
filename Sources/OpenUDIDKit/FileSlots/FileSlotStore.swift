import FoundationEssentials
import Glibc
import InputGate

/// The fallback slots: one file per app in a shared directory.
///
/// An app's selection disappears when the app exits; its file slot stays, so
/// the identifier outlives the last running app for as long as the files
/// do. Each app writes only `<app-id>.json`; every app reads them all.
package struct FileSlotStore: Sendable, Hashable {
    /// How many file slots `list(limit:)` returns by default.
    package static let defaultLimit = 1000
    /// How many directory entries a listing looks at, at most, so that a
    /// directory stuffed with millions of names cannot stall an app.
    package static let scanLimit = 20_000

    /// The slot files, one per app.
    let files: KeyedFiles
    /// The directory holding the slot files.
    package var directory: String { files.directory }
    /// The directory below which every directory must be a real one, never a link
    /// (the XDG data home); `nil` checks `directory` alone.
    package var root: String? { files.root }
    /// The file system every call goes through; `.system` outside tests.
    package var fileSystem: FileSystem { files.fileSystem }

    /// A store in `directory`.
    ///
    /// - Parameters:
    ///   - directory: An absolute path; created on first write.
    ///   - root: The directory below which no link is followed; by default `directory` itself must not be a link.
    ///   - fileSystem: The file system to go through.
    package init(directory: String, root: String? = nil, fileSystem: FileSystem = .system) {
        files = KeyedFiles(directory: directory, root: root, fileSystem: fileSystem, role: .app, what: "file slot")
    }

    /// The store at `paths.slotsDirectory`.
    ///
    /// - Parameters:
    ///   - paths: The storage locations to use.
    ///   - fileSystem: The file system to go through.
    package init(paths: StoragePaths, fileSystem: FileSystem = .system) {
        self.init(directory: paths.slotsDirectory, root: paths.sharedHome, fileSystem: fileSystem)
    }

    /// The path of `app`'s slot file, `<directory>/<app>.json`.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when `app` is not a
    ///   valid app id, so no name can reach outside the directory.
    package func path(for app: String) throws(StoreUnavailable) -> String { try files.path(for: app) }

    /// Reads `app`'s slot file: the bytes, `.absent`, or why the file could not be read.
    package func read(app: String) -> StoreRead { files.read(app) }

    /// Replaces `app`'s slot file with `bytes`, atomically; on failure the old file is intact.
    package func write(_ bytes: Data, app: String) throws(StoreUnavailable) { try files.write(bytes, app) }

    /// Deletes `app`'s slot file; a missing file is fine.
    package func remove(app: String) throws(StoreUnavailable) { try files.remove(app) }

    /// Moves `app`'s slot file aside as `<app>.json.corrupt-<milliseconds>`, keeping its bytes.
    ///
    /// - Returns: The new path, or `nil` when there was no file.
    package func quarantine(app: String, now: Date = Date()) throws(StoreUnavailable) -> String? {
        try files.quarantine(app, now: now)
    }

    /// One file slot found by `list(limit:)`.
    package struct Entry: Sendable, Equatable {
        /// The application id the file is named for.
        package let app: String
        /// What reading the file gave.
        package let content: StoreRead
        /// What parsing the file's bytes gave, when it was found: the listing
        /// parses each to count the valid ones, and its reader needs not again.
        package let parsed: Result<SlotRecord, RecordError>?
    }

    /// What `list(limit:including:)` found, and what it passed over.
    package struct Listing: Sendable, Equatable {
        /// The slot files read, in byte order of their app ids.
        package let entries: [Entry]
        /// `*.json` names that are not a valid app id, in byte order (at most 100 are kept).
        package let invalidNames: [String]
        /// How many validly named slot files were not read because the limit of valid records was reached.
        package let omitted: Int
        /// Whether the directory had more than `FileSlotStore.scanLimit` entries, so some were never looked at.
        package let scanStopped: Bool

        /// One line on what was passed over, or `nil` when nothing was.
        package var report: String? {
            var parts: [String] = []
            if !invalidNames.isEmpty {
                parts.append(
                    "ignored \(invalidNames.count == 100 ? "100 or more" : String(invalidNames.count)) "
                        + "file(s) not named for a valid app id, such as \(quoted(invalidNames[0]))")
            }
            if omitted > 0 { parts.append("left out \(omitted) slot file(s) over the limit") }
            if scanStopped { parts.append("stopped after \(FileSlotStore.scanLimit) directory entries") }
            return parts.isEmpty ? nil : parts.joined(separator: "; ")
        }

        static let empty = Listing(entries: [], invalidNames: [], omitted: 0, scanStopped: false)
    }

    /// Reads the slot files: each `<app-id>.json` whose name is a valid app id.
    ///
    /// Files are read in byte order of their app ids until `limit` of them have
    /// held a valid record; files that do not (empty, corrupt, links, anything
    /// other than a regular file) are listed with what reading them gave but do
    /// not count towards the limit, so files planted beside the real slots can
    /// never push a valid slot out of the listing. Names that are not a valid app
    /// id are never read and never count. `app`'s own file is always read, by
    /// name, even when the listing stopped before reaching it (`scanStopped`).
    ///
    /// Links and other non-regular files are reported as unavailable, never
    /// followed. Files are opened relative to the directory opened once, so
    /// swapping the directory for a link mid-listing cannot redirect reads.
    ///
    /// - Parameters:
    ///   - limit: The most valid records to read.
    ///   - app: An app whose file is read whatever the limit (the caller's own).
    /// - Returns: The slots found; an empty listing when the directory does not exist.
    /// - Throws: `StoreUnavailable` when the directory exists but cannot be listed,
    ///   or it or a directory above it (below `root`) is a symbolic link.
    ///   - now: The time records are parsed at (`SlotRecord.parse(_:now:)`).
    package func list(limit: Int = defaultLimit, including app: String? = nil, now: Date = Date()) throws(StoreUnavailable) -> Listing {
        guard try AtomicFile.directoriesExist(directory, for: directory, below: root, fileSystem: fileSystem) else { return .empty }
        switch fileSystem.listing(directory, limit: Self.scanLimit, { slots(in: $0, limit: limit, including: app, now: now) }) {
        case .success(let listing):
            return listing
        case .failure(let error) where error.code == ENOENT:
            return .empty
        case .failure(let error) where error.code == ELOOP || error.code == ENOTDIR:
            throw StoreUnavailable(
                .unsafePath, "cannot list \(directory): it is not a directory (or is a symbolic link); remove or rename it")
        case .failure(let error):
            throw StoreUnavailable(.io, "cannot list \(directory): \(POSIX.message(error.code))", errno: error.code)
        }
    }

    /// The slot files of the directory listed, read as `list(limit:including:now:)` says.
    private func slots(in listing: FileSystem.Listing, limit: Int, including app: String?, now: Date) -> Listing {
        var apps: [String] = []
        var invalid: [String] = []
        for name in listing.names where name.hasSuffix(".json") {
            let stem = String(name.dropLast(5))
            if AppIdentity.isValid(stem) { apps.append(stem) } else { invalid.append(name) }
        }
        // Valid app ids are ASCII, whose String order is their byte order, and
        // compares a buffer at a time (a UTF-8 view compares a byte per step).
        apps.sort()
        invalid.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        func read(_ app: String) -> Entry {
            let content = AtomicFile.read(
                in: listing.descriptor, name: app + ".json",
                path: directory + "/" + app + ".json",
                limit: SlotRecord.maximumSize, fileSystem: fileSystem)
            var parsed: Result<SlotRecord, RecordError>?
            if case .found(let bytes) = content {
                parsed = Result { () throws(RecordError) in try SlotRecord.parse(bytes, now: now) }
            }
            return Entry(app: app, content: content, parsed: parsed)
        }
        var entries: [Entry] = []
        entries.reserveCapacity(min(apps.count, limit) + 1)
        var valid = 0
        var next = apps.startIndex
        while next < apps.endIndex, valid < limit {
            let entry = read(apps[next])
            if case .success = entry.parsed { valid += 1 }
            entries.append(entry)
            next += 1
        }
        var omitted = apps.endIndex - next
        if let app {
            if apps[next...].contains(app) {
                entries.append(read(app))
                omitted -= 1
            } else if !apps[..<next].contains(app) {
                // Not among the names looked at: the listing stopped before it (or it
                // was made since). Read by name, so that a crowded directory can never
                // make an app take its own slot for absent and write over it.
                let own = read(app)
                if own.content != .absent { entries.append(own) }
            }
        }
        return Listing(entries: entries, invalidNames: Array(invalid.prefix(100)), omitted: omitted, scanStopped: listing.stopped)
    }
}

/// One app's file slot as a `RecordPlace`.
package struct FileSlotPlace: RecordPlace {
    /// The store of every app's file slot.
    package let store: FileSlotStore
    /// The app whose slot this is.
    package let app: String

    /// The slot of `app` in `store`.
    package init(store: FileSlotStore, app: String) {
        self.store = store
        self.app = app
    }

    /// `"file slot"`.
    package var name: String { "file slot" }
    /// The kind of place: fileSlot.
    package var kind: Report.Place { .fileSlot }
    /// The slot file's path.
    package var location: String { (try? store.path(for: app)) ?? app }
    /// Reads the slot file.
    package func read() -> StoreRead { store.read(app: app) }
    /// Replaces the slot file.
    package func write(_ bytes: Data) throws(StoreUnavailable) { try store.write(bytes, app: app) }
    /// Moves the slot file aside as `<app>.json.corrupt-<milliseconds>`.
    package func quarantine(now: Date) throws(StoreUnavailable) -> String? { try store.quarantine(app: app, now: now) }
}
