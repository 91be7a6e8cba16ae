import FoundationEssentials
import Glibc
import InputGate

/// A directory of small files named `<key>.json`, one per app id or vendor, each
/// read and replaced by `AtomicFile`'s rules: what the file slots and the file
/// mirror share.
package struct KeyedFiles: Sendable, Hashable {
    /// The directory holding the files.
    package let directory: String
    /// The directory below which every directory must be a real one, never a link
    /// (the XDG data home); `nil` checks `directory` alone.
    package let root: String?
    /// The file system every call goes through; `.system` outside tests.
    package let fileSystem: FileSystem
    /// What a key names: an app (file slots) or a vendor (the mirror).
    let role: IdentityError.Role
    /// What one file is, for messages: `"file slot"`, `"vendor mirror"`.
    let what: String

    /// `<directory>/<key>.json`.
    ///
    /// - Throws: `StoreUnavailable` of kind `.unsafePath` when `key` breaks the
    ///   application-id rules, which also keeps `/` and a leading `.` out of the
    ///   name, so no key can reach outside the directory.
    func path(for key: String) throws(StoreUnavailable) -> String {
        do {
            try AppIdentity.validate(key, as: role)
        } catch {
            throw StoreUnavailable(.unsafePath, "no \(what) for \(error.description)")
        }
        return directory + "/" + key + ".json"
    }

    /// Reads the file of `key`: its bytes, `.absent`, or why it could not be read.
    func read(_ key: String) -> StoreRead {
        do {
            return AtomicFile.read(try path(for: key), below: root, fileSystem: fileSystem)
        } catch {
            return .unavailable(error)
        }
    }

    /// Replaces the file of `key` with `bytes`, atomically; on failure the old file is intact.
    func write(_ bytes: Data, _ key: String) throws(StoreUnavailable) {
        try AtomicFile.write(bytes, to: try path(for: key), below: root, fileSystem: fileSystem)
    }

    /// Deletes the file of `key`; a missing file is fine.
    func remove(_ key: String) throws(StoreUnavailable) {
        try AtomicFile.remove(try path(for: key), below: root, fileSystem: fileSystem)
    }

    /// Moves the file of `key` aside as `<key>.json.corrupt-<milliseconds>`, keeping its bytes.
    ///
    /// - Returns: The new path, or `nil` when there was no file.
    func quarantine(_ key: String, now: Date) throws(StoreUnavailable) -> String? {
        try AtomicFile.quarantine(try path(for: key), now: now, below: root, fileSystem: fileSystem)
    }
}
