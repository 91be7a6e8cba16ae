import FoundationEssentials
import Glibc
import InputGate

/// A vendor mirror kept in plain files, for sessions without a Secret Service.
///
/// One file per vendor, `<directory>/<vendor>.json`, written with the same
/// atomic, link-refusing rules as the file slots. Any process of the user can
/// read and write these files; see docs/SECURITY.md.
package struct FileVendorMirror: VendorMirrorStore, Hashable {
    /// `"file"`.
    package var name: String { "file" }

    /// The mirror files, one per vendor.
    let files: KeyedFiles
    /// The directory holding one file per vendor.
    package var directory: String { files.directory }
    /// The directory below which every directory must be a real one, never a link
    /// (the XDG data home); `nil` checks `directory` alone.
    package var root: String? { files.root }
    /// The file system every call goes through; `.system` outside tests.
    package var fileSystem: FileSystem { files.fileSystem }
    /// Why the automatic choice took this store rather than the Secret
    /// Service (what the bus or the service answered), for the report; nil otherwise.
    package var passedOver: String?

    /// A mirror in `directory`.
    ///
    /// - Parameters:
    ///   - directory: An absolute path; created on first write.
    ///   - root: The directory below which no link is followed; by default `directory` itself must not be a link.
    ///   - fileSystem: The file system to go through.
    package init(directory: String, root: String? = nil, fileSystem: FileSystem = .system) {
        files = KeyedFiles(directory: directory, root: root, fileSystem: fileSystem, role: .vendor, what: "vendor mirror")
    }

    /// The mirror at `paths.vendorsDirectory`.
    ///
    /// - Parameters:
    ///   - paths: The storage locations to use.
    ///   - fileSystem: The file system to go through.
    package init(paths: StoragePaths, fileSystem: FileSystem = .system) {
        self.init(directory: paths.vendorsDirectory, root: paths.sharedHome, fileSystem: fileSystem)
    }

    /// The path of `vendor`'s file, `<directory>/<vendor>.json`.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when `vendor` breaks
    ///   the app-id rules, so a vendor can never reach outside the directory.
    package func path(for vendor: String) throws(StoreUnavailable) -> String { try files.path(for: vendor) }

    /// The path of `vendor`'s file, or the vendor itself when it is not a valid one.
    package func location(vendor: String) -> String { (try? path(for: vendor)) ?? vendor }

    /// Reads the file of `vendor`: the bytes, `.absent`, or why the file could not be read.
    package func read(vendor: String) -> StoreRead { files.read(vendor) }

    /// Replaces the file of `vendor` with `bytes`, atomically; on failure the old file is intact.
    package func write(_ bytes: Data, vendor: String) throws(StoreUnavailable) { try files.write(bytes, vendor) }

    /// Deletes the file of `vendor`; a missing file is fine.
    package func remove(vendor: String) throws(StoreUnavailable) { try files.remove(vendor) }

    /// Moves the file of `vendor` aside as `<vendor>.json.corrupt-<milliseconds>`, keeping its bytes.
    ///
    /// - Returns: The new path, or `nil` when there was no file.
    package func quarantine(vendor: String, now: Date = Date()) throws(StoreUnavailable) -> String? {
        try files.quarantine(vendor, now: now)
    }
}
