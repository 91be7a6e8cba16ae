import Foundation

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

    /// Creates a description of a failure.
    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
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

/// A per-vendor durable store: the Linux analogue of a keychain access group.
///
/// One item per vendor (`com.acme` for `com.acme.notes`). The store deals in the
/// serialized record's bytes; validating them is the caller's job. Scoping by
/// vendor is enforced by this API, not by the operating system: any process of
/// the same user can read every vendor's item (see docs/SECURITY.md).
package protocol VendorMirrorStore: Sendable {
    /// A short name for reports: `"secret-service"` or `"file"`.
    var name: String { get }

    /// Reads the item of `vendor`.
    func read(vendor: String) -> StoreRead

    /// Creates or replaces the item of `vendor` with `bytes`.
    ///
    /// - Throws: `StoreUnavailable` when the store cannot be written; the old item is then left as it was.
    func write(_ bytes: Data, vendor: String) throws(StoreUnavailable)

    /// Deletes the item of `vendor` (a "device reset" of that vendor's identifier).
    ///
    /// Deleting an item that does not exist succeeds.
    func remove(vendor: String) throws(StoreUnavailable)
}
