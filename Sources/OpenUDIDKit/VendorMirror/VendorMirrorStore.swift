import FoundationEssentials
import Glibc

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

    /// Moves the item of `vendor` aside, keeping its bytes where the store can, so
    /// that a write can replace it (used when it does not hold a valid record).
    ///
    /// - Returns: Where the bytes were kept, or `nil` when there was nothing to keep
    ///   or the store keeps no side copies (the next write then replaces the item).
    func quarantine(vendor: String, now: Date) throws(StoreUnavailable) -> String?

    /// Where the item of `vendor` is, for messages: a path, or the store and vendor.
    func location(vendor: String) -> String
}

extension VendorMirrorStore {
    /// `"<store> mirror of <vendor>"`.
    package func location(vendor: String) -> String { "\(name) mirror of \(vendor)" }
}

/// The vendor's mirror as one `RecordPlace`: the item of `vendor` in `store`.
package struct VendorMirrorPlace: RecordPlace {
    /// The store holding the mirror.
    package let store: any VendorMirrorStore
    /// The vendor whose item this is.
    package let vendor: String

    /// The item of `vendor` in `store`.
    package init(store: any VendorMirrorStore, vendor: String) {
        self.store = store
        self.vendor = vendor
    }

    /// `"mirror"`.
    package var name: String { "mirror" }
    /// The kind of place: mirror.
    package var kind: Report.Place { .mirror }
    /// Where the item is, as the store names it.
    package var location: String { store.location(vendor: vendor) }
    /// Reads the item of `vendor`.
    package func read() -> StoreRead { store.read(vendor: vendor) }
    /// Replaces the item of `vendor`.
    package func write(_ bytes: Data) throws(StoreUnavailable) { try store.write(bytes, vendor: vendor) }
    /// Moves the item of `vendor` aside.
    package func quarantine(now: Date) throws(StoreUnavailable) -> String? { try store.quarantine(vendor: vendor, now: now) }
}
