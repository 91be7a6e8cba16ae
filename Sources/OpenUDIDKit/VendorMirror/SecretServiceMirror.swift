import FoundationEssentials

/// The per-vendor mirror kept in the freedesktop Secret Service (gnome-keyring,
/// KeePassXC, KWallet's Secret Service).
///
/// Each vendor has one item in the user's default collection, found by the
/// attributes `xdg:schema` = `org.openudid.VendorMirror`, `vendor` = the vendor
/// (`com.acme`) and `namespace` = the namespace (`""` outside one), labelled
/// "OpenUDID identifier for com.acme". Its secret is the serialized record
/// (UTF-8 text).
///
/// A Secret Service search matches every item that has at least the attributes
/// asked for, so the namespace is always stored, empty for none: a search for
/// `namespace` = `""` never finds an experiment's item, and the other way round.
/// Items written before the attribute existed (they have none) are read outside
/// a namespace when no item with the attribute exists, and are deleted once the
/// item with the attribute is written.
///
/// The Secret Service guards secrets per user, not per application: every process
/// of the same user can read every unlocked item. Keeping vendors apart is a rule
/// this type follows (every lookup, write and removal names the vendor), not a
/// boundary the system enforces.
///
/// Every call finishes within ``deadline`` and never asks the user anything: it does
/// not unlock a locked keyring and does not create a missing one, it reports them.
/// A service that is locked, missing, silent or failing gives
/// ``StoreRead/unavailable(_:)``, never ``StoreRead/absent``; `absent` means the
/// service answered, the default collection is unlocked, and no item matches.
package struct SecretServiceMirror: VendorMirrorStore {
    /// The schema name, stored in each item's `xdg:schema` attribute.
    package static let schemaName = "org.openudid.VendorMirror"

    /// The attribute that holds the vendor.
    package static let vendorAttribute = "vendor"

    /// The attribute that holds the namespace, `""` outside one.
    package static let namespaceAttribute = "namespace"

    /// The D-Bus address of the bus to use, or nil for the user's session bus.
    package var busAddress: String?

    /// The namespace whose items this mirror reads and writes, or `nil` for real use.
    package var namespace: String?

    /// The longest one call may take before it gives up with ``StoreUnavailable/Kind/serviceError``.
    package var deadline: Duration

    /// `"secret-service"`.
    package var name: String { "secret-service" }

    /// Creates a mirror on a bus.
    ///
    /// - Parameters:
    ///   - busAddress: A D-Bus address such as `unix:path=/run/user/1000/bus`. When nil,
    ///     `DBUS_SESSION_BUS_ADDRESS` is used, then `$XDG_RUNTIME_DIR/bus`; a bus is
    ///     never launched.
    ///   - namespace: The namespace that keeps an experiment's items apart (see `StoragePaths`); `nil` for real use.
    ///   - deadline: The longest one call may take, connection included.
    package init(busAddress: String? = nil, namespace: String? = nil, deadline: Duration = .seconds(2)) {
        self.busAddress = busAddress
        self.namespace = namespace
        self.deadline = deadline
    }

    /// The label of a vendor's item, as keyring managers such as Passwords and Keys show it.
    package static func label(vendor: String) -> String {
        "OpenUDID identifier for \(vendor)"
    }

    /// Reads the item of `vendor`.
    ///
    /// An unlocked matching item gives `.found`. A locked default collection that
    /// cannot be unlocked without the user, a missing one, an item the provider keeps
    /// from this client until the user allows it, or a service that does not answer
    /// gives `.unavailable`. The default collection is looked at before any search,
    /// so a provider that would ask the user to unlock before searching (KeePassXC)
    /// is never asked to.
    package func read(vendor: String) -> StoreRead {
        let outcome = perform("reading the item of \(vendor)", vendor: vendor) { call throws(StoreUnavailable) -> StoreRead in
            _ = try call.usableDefaultCollection()
            var items = try call.items()
            if items.isEmpty, namespace == nil { items = try call.unnamespacedItems() }
            if let unlocked = items.first(where: { !$0.isLocked }) {
                return .found(try call.secret(of: unlocked))
            }
            if !items.isEmpty { throw call.lockedItem() }
            return .absent
        }
        switch outcome.result {
        case .success(let read): return read
        case .failure(let failure): return .unavailable(failure)
        }
    }

    /// Creates or replaces the item of `vendor` in the default collection.
    ///
    /// An item that already holds `bytes` is left alone. A provider that keeps each
    /// earlier secret of an entry in its history (KeePassXC) gets a new item in place
    /// of the old one rather than a changed secret. An item the provider keeps from
    /// this client is never replaced: KeePassXC would ask the user to allow it.
    ///
    /// A new item is written even where the provider will keep it from later clients
    /// until the user allows them (KeePassXC's default): it costs one entry, which
    /// ``remove(vendor:)`` and `forget --all` can still delete, and it serves every
    /// app of the vendor as soon as the user lets them read it.
    ///
    /// - Throws: `StoreUnavailable` (`.locked` when the default collection is locked
    ///   or the item is kept from this client, `.serviceError` when there is no default
    ///   collection); the old item is then left as it was.
    package func write(_ bytes: Data, vendor: String) throws(StoreUnavailable) {
        try perform("writing the item of \(vendor)", vendor: vendor) { call throws(StoreUnavailable) in
            // Storing to the alias "default" would make libsecret create a collection
            // (an interactive prompt) when there is none; the resolved path never does.
            let collection = try call.usableDefaultCollection()
            let existing = try call.items()
            if existing.contains(where: \.isLocked) { throw call.lockedItem() }
            if let current = existing.first, existing.count == 1, (try? call.secret(of: current)) == bytes { return }
            if call.provider.keepsHistory {
                // libsecret's store replaces a matching item, so the old one goes
                // first. Should the new one then fail, the mirror is absent until the
                // next write; the apps' own copies still hold the identifier.
                for item in existing { try call.delete(item) }
            }
            try call.store(bytes, in: collection)
            // The item now has the namespace attribute; one written before it existed
            // would only be found again if this one went away. Best effort: a left-over
            // is never read while the new item exists.
            if namespace == nil, let old = try? call.unnamespacedItems() {
                for item in old { try? call.delete(item) }
            }
        }.result.get()
    }

    /// Deletes the item of `vendor`.
    ///
    /// Succeeds when the item is gone afterwards, including when there was none. When
    /// the default collection is locked, nothing is deleted and the call throws, since
    /// a locked collection may hide the item. An item that the provider only keeps
    /// from this client's reads (KeePassXC) is deleted like any other.
    ///
    /// - Throws: `StoreUnavailable` when the service cannot confirm the item is gone.
    package func remove(vendor: String) throws(StoreUnavailable) {
        try perform("removing the item of \(vendor)", vendor: vendor) { call throws(StoreUnavailable) in
            _ = try call.usableDefaultCollection()
            let items = try call.items()
            let old = namespace == nil ? try call.unnamespacedItems() : []
            for item in items + old { try call.delete(item) }
        }.result.get()
    }

    /// The labels of every item of the mirror's schema, any vendor and any
    /// namespace; with `delete`, deletes them too (one that cannot be deleted
    /// throws, and nothing after it is deleted).
    ///
    /// - Returns: The labels, and a sentence naming the copies the provider still
    ///   keeps of what it deleted (KeePassXC's Recycle Bin and entry history) and
    ///   how to remove them, or nil when it keeps none (or nothing was deleted).
    /// - Throws: `StoreUnavailable` when the service cannot be asked, or an item cannot be deleted.
    package func everyItem(delete: Bool) throws(StoreUnavailable) -> (labels: [String], keptCopies: String?) {
        try perform(delete ? "deleting every item" : "listing every item", vendor: nil) {
            call throws(StoreUnavailable) -> (labels: [String], keptCopies: String?) in
            _ = try call.usableDefaultCollection()
            let items = try call.everyItem()
            let labels = items.map { call.label(of: $0) }.sorted()
            guard delete else { return (labels, nil) }
            for item in items { try call.delete(item) }
            return (labels, call.provider.keptCopies(of: labels))
        }.result.get()
    }

    /// Deletes every item of this mirror's namespace, whatever its vendor
    /// (outside a namespace, also the items written before the namespace
    /// attribute existed): what a user reset removes. Items of other namespaces
    /// are left alone.
    ///
    /// - Returns: Each item's label and secret, and a sentence naming the copies
    ///   the provider still keeps of what it deleted (KeePassXC's Recycle Bin) and
    ///   how to remove them, or nil when it keeps none.
    /// - Throws: `StoreUnavailable` when the service cannot be asked, the default
    ///   collection is locked, or an item cannot be deleted (nothing after it is deleted).
    package func removeEveryVendorItem() throws(StoreUnavailable) -> (
        removed: [(label: String, secret: Data)], keptCopies: String?
    ) {
        try perform("removing every item of the namespace", vendor: nil) {
            call throws(StoreUnavailable) -> (removed: [(label: String, secret: Data)], keptCopies: String?) in
            _ = try call.usableDefaultCollection()
            var removed: [(label: String, secret: Data)] = []
            for item in try call.namespaceItems() {
                removed.append((call.label(of: item), (try? call.secret(of: item)) ?? Data()))
                try call.delete(item)
            }
            return (
                removed.sorted { $0.label.utf8.lexicographicallyPrecedes($1.label.utf8) },
                call.provider.keptCopies(of: removed.map(\.label))
            )
        }.result.get()
    }
}

// MARK: - Probing

extension SecretServiceMirror {
    /// What a probe of the bus found.
    package enum Availability: Sendable, Equatable {
        /// A Secret Service answered and its default collection is unlocked.
        case ready
        /// A Secret Service answered; its default collection is locked until the user unlocks it.
        case locked(StoreUnavailable)
        /// A Secret Service answered but cannot hold the mirror (no default collection, or an error).
        case unusable(StoreUnavailable)
        /// No Secret Service is there: no session bus, or no Secret Service on it.
        case unreachable(StoreUnavailable)
        /// Something on the bus did not answer within the deadline (a hung keyring
        /// or bus): the mirror may exist there, so what it holds is unknown.
        case unresponsive(StoreUnavailable)

        /// Whether this store is worth choosing (as the automatic choice does): the
        /// service answered and has a default collection, unlocked now or once the
        /// user unlocks it.
        package var canHoldMirror: Bool {
            switch self {
            case .ready, .locked: true
            case .unusable, .unreachable, .unresponsive: false
            }
        }
    }

    /// Asks whether a Secret Service answers on the bus, and in what state.
    ///
    /// Reads only the default alias and the collection's `Locked` property, so it
    /// never triggers a prompt. It may start a D-Bus-activatable service, as any
    /// client's first call does.
    ///
    /// - Parameters:
    ///   - busAddress: As in ``init(busAddress:namespace:deadline:)``.
    ///   - deadline: The longest the probe may take.
    package static func probe(busAddress: String? = nil, deadline: Duration = .seconds(2)) -> Availability {
        let mirror = SecretServiceMirror(busAddress: busAddress, namespace: nil, deadline: deadline)
        let outcome = mirror.perform("probing the Secret Service", vendor: nil) { call throws(StoreUnavailable) in
            _ = try call.usableDefaultCollection()
        }
        switch outcome.result {
        case .success:
            return .ready
        case .failure(let failure) where outcome.timedOut:
            return .unresponsive(failure)
        case .failure(let failure) where failure.kind == .notRunning:
            return .unreachable(failure)
        case .failure(let failure) where failure.kind == .locked:
            return .locked(failure)
        case .failure(let failure):
            return .unusable(failure)
        }
    }
}

// MARK: - Quarantine

extension SecretServiceMirror {
    /// Moves nothing: the Secret Service keeps no side copies, so an item that does
    /// not hold a valid record is replaced by the next write.
    ///
    /// - Returns: `nil`.
    package func quarantine(vendor: String, now: Date = Date()) throws(StoreUnavailable) -> String? {
        nil
    }
}
