import FoundationEssentials
import Glibc

/// Why a store could not say what it holds.
///
/// Every case means *unknown*, never *absent*: a caller that sees one of these
/// must not write a fresh identifier over whatever the store may still hold.
package struct StoreUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, for callers that react differently to each.
    package enum Kind: String, Sendable, Equatable, Codable {
        /// The collection or item is locked (for example a keyring not yet unlocked).
        case locked
        /// No service answers (no session bus, or no Secret Service on it).
        case notRunning
        /// The service answered with an error, or vanished in the middle of a call.
        case serviceError
        /// A file could not be read or written (permissions, full disk, I/O error).
        case io
        /// The stored content is not a valid record; it is left in place.
        case corrupt
        /// A symlink or other non-regular file stands where the store's file goes.
        case unsafePath
    }

    /// The kind of failure.
    package var kind: Kind
    /// One sentence that names the store and the thing that failed, and the remedy where there is one.
    package var message: String

    /// The system's error number when a system call failed, else `nil`.
    package var errno: Int32?
    /// The report's `rejected[].code` for it (docs/PROTOCOL.md §12): `unreadable`
    /// unless a more precise code applies (`too-large`, `misplaced`, a record token of §3).
    package var code: Rejection.Code

    /// Creates a description of a failure.
    package init(_ kind: Kind, _ message: String, errno: Int32? = nil, code: Rejection.Code = .unreadable) {
        self.kind = kind
        self.message = message
        self.errno = errno
        self.code = code
    }

    package var description: String { message }
}

/// What a read of a store found.
package enum StoreRead: Sendable, Equatable {
    /// The store holds these bytes (a serialized slot record, not yet validated).
    case found(Data)
    /// The store answered and holds nothing for this key.
    case absent
    /// The store could not be read; what it holds is unknown.
    case unavailable(StoreUnavailable)
}

/// A place where one record lives: an app's file slot, its local cache, its
/// vendor's mirror (docs/PROTOCOL.md §4). The engine reads, repairs and
/// quarantines through this protocol alone, so it knows no concrete store.
///
/// Every implementation keeps the same promises: `read()` after a successful
/// `write(_:)` gives the bytes written; `read()` gives `.unavailable`, never
/// `.absent`, when it cannot tell what is there; `quarantine(now:)` moves content
/// that is not a valid record out of the way, keeping its bytes where the place
/// can, and after it `read()` gives `.absent`.
package protocol RecordPlace: Sendable {
    /// The place's name in reports: `"file slot"`, `"local cache"`, `"mirror"`.
    var name: String { get }
    /// The kind of place it is, as reports name it.
    var kind: Report.Place { get }
    /// Where the record is, for messages: a path, or the store and vendor.
    var location: String { get }
    /// Reads the record's bytes, not yet validated.
    func read() -> StoreRead
    /// Replaces the record with `bytes`; on failure the old record is intact.
    func write(_ bytes: Data) throws(StoreUnavailable)
    /// Moves what the place holds aside so that a write can replace it.
    ///
    /// - Returns: Where the old bytes were kept, or `nil` when there was nothing
    ///   (or the place keeps no side copies).
    func quarantine(now: Date) throws(StoreUnavailable) -> String?
}
