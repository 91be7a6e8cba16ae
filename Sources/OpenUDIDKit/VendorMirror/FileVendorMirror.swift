import Foundation

/// A vendor mirror kept in plain files, for sessions without a Secret Service.
///
/// One file per vendor, `<directory>/<vendor>.json`, written with the same
/// atomic, link-refusing rules as the file slots. Any process of the user can
/// read and write these files; see docs/SECURITY.md.
package struct FileVendorMirror: VendorMirrorStore, Hashable {
    /// `"file"`.
    package var name: String { "file" }

    /// The directory holding one file per vendor.
    package let directory: String
    /// The directory below which every directory must be a real one, never a link
    /// (the XDG data home); `nil` checks `directory` alone.
    package let root: String?
    /// The file system every call goes through; `.system` outside tests.
    package let fileSystem: FileSystem

    /// A mirror in `directory`.
    ///
    /// - Parameters:
    ///   - directory: An absolute path; created on first write.
    ///   - root: The directory below which no link is followed; by default `directory` itself must not be a link.
    ///   - fileSystem: The file system to go through.
    package init(directory: String, root: String? = nil, fileSystem: FileSystem = .system) {
        self.directory = directory
        self.root = root
        self.fileSystem = fileSystem
    }

    /// The mirror at `paths.vendorsDirectory`.
    ///
    /// - Parameters:
    ///   - paths: The storage locations to use.
    ///   - fileSystem: The file system to go through.
    package init(paths: StoragePaths, fileSystem: FileSystem = .system) {
        self.init(directory: paths.vendorsDirectory, root: paths.dataHome, fileSystem: fileSystem)
    }

    /// The path of `vendor`'s file.
    ///
    /// - Parameter vendor: A vendor such as `com.acme`.
    /// - Returns: `<directory>/<vendor>.json`.
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when `vendor` breaks
    ///   the app-id rules, which also keeps `/` and a leading `.` out of the
    ///   name, so a vendor can never reach outside the directory.
    package func path(for vendor: String) throws(StoreUnavailable) -> String {
        do {
            try AppIdentity.validate(vendor, as: .vendor)
        } catch {
            throw StoreUnavailable(.unsafePath, "no vendor mirror for \(error.description)")
        }
        return directory + "/" + vendor + ".json"
    }

    /// The path of `vendor`'s file, or the vendor itself when it is not a valid one.
    package func location(vendor: String) -> String { (try? path(for: vendor)) ?? vendor }

    /// Reads the file of `vendor`.
    ///
    /// - Parameter vendor: A vendor such as `com.acme`.
    /// - Returns: The bytes, `.absent`, or why the file could not be read.
    package func read(vendor: String) -> StoreRead {
        do {
            return AtomicFile.read(try path(for: vendor), below: root, fileSystem: fileSystem)
        } catch {
            return .unavailable(error)
        }
    }

    /// Replaces the file of `vendor` with `bytes`, atomically.
    ///
    /// - Parameters:
    ///   - bytes: A serialized record.
    ///   - vendor: A vendor such as `com.acme`.
    /// - Throws: `StoreUnavailable`; the old file is then intact.
    package func write(_ bytes: Data, vendor: String) throws(StoreUnavailable) {
        try AtomicFile.write(bytes, to: try path(for: vendor), below: root, fileSystem: fileSystem)
    }

    /// Deletes the file of `vendor`; a missing file is fine.
    ///
    /// - Parameter vendor: A vendor such as `com.acme`.
    /// - Throws: `StoreUnavailable` when it cannot be removed.
    package func remove(vendor: String) throws(StoreUnavailable) {
        try AtomicFile.remove(try path(for: vendor), below: root, fileSystem: fileSystem)
    }

    /// Moves the file of `vendor` aside as `<vendor>.json.corrupt-<milliseconds>`, keeping its bytes.
    ///
    /// - Parameters:
    ///   - vendor: A vendor such as `com.acme`.
    ///   - now: The time for the new name.
    /// - Returns: The new path, or `nil` when there was no file.
    /// - Throws: `StoreUnavailable` when it cannot be moved.
    package func quarantine(vendor: String, now: Date = Date()) throws(StoreUnavailable) -> String? {
        try AtomicFile.quarantine(try path(for: vendor), now: now, below: root, fileSystem: fileSystem)
    }
}
