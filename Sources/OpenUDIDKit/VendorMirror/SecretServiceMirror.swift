import CLibSecret
import Dispatch
import FoundationEssentials
import Glibc
import XSelection

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

// MARK: - One call

extension SecretServiceMirror {
    /// Runs `body` against a fresh connection and proxy, under the deadline.
    ///
    /// A fresh connection per call, rather than libsecret's cached singleton on GIO's
    /// shared session bus: the shared connection terminates the process when the bus
    /// closes, the singleton stays bound to whichever daemon answered first (a
    /// restarted daemon then looks dead), and neither can be pointed at another bus.
    fileprivate func perform<T>(
        _ operation: String, vendor: String?,
        _ body: (SecretServiceCall) throws(StoreUnavailable) -> T
    ) -> (result: Result<T, StoreUnavailable>, timedOut: Bool) {
        if let vendor {
            do throws(IdentityError) {
                try AppIdentity.validate(vendor, as: .vendor)
            } catch {
                return (.failure(StoreUnavailable(.serviceError, "secret-service: refusing vendor: \(error.description)")), false)
            }
        }
        let address: String
        switch Self.resolveBusAddress(busAddress) {
        case .success(let found): address = found
        case .failure(let failure): return (.failure(failure), false)
        }
        // Only now, with a bus to talk to, is libsecret loaded (the first time).
        let library: LibSecret
        switch LibSecret.loaded {
        case .success(let loaded): library = loaded
        case .failure(let failure): return (.failure(failure), false)
        }

        // Proxies subscribe to signals on the thread-default main context. A private
        // one, drained and dropped at the end, keeps those subscriptions from piling
        // up in a global context that the application may never run.
        let context = library.gMainContextNew()
        library.gMainContextPushThreadDefault(context)
        let timer = DeadlineTimer(deadline, library: library, waking: context)
        defer {
            timer.finish()
            var pending = 0
            while library.gMainContextIteration(context, 0) != 0 && pending < 1000 { pending += 1 }
            library.gMainContextPopThreadDefault(context)
            library.gMainContextUnref(context)
        }

        let result: Result<T, StoreUnavailable>
        do throws(StoreUnavailable) {
            let call = try SecretServiceCall(
                library: library, address: address, operation: operation, vendor: vendor ?? "",
                namespace: namespace ?? "", timer: timer, context: context)
            defer { call.close() }
            result = .success(try body(call))
        } catch {
            result = .failure(error)
        }
        return (result, timer.fired)
    }

    /// The address to connect to: the explicit one, or the session bus of this
    /// process's environment (`SessionBus`). Never autolaunches a bus.
    fileprivate static func resolveBusAddress(_ explicit: String?) -> Result<String, StoreUnavailable> {
        if let explicit { return .success(explicit) }
        return SessionBus.address(in: ProcessInfo.processInfo.environment)
    }
}

/// Cancels a `GCancellable` when a deadline passes.
///
/// Cancelling makes every pending libsecret/GDBus `_sync` call return at once, so a
/// daemon that hangs (or a bus that never answers) cannot hold the caller. The
/// deadlines of every call of the process are kept by one loop (`EventLoop`),
/// not a thread per call, nor a Dispatch timer: Dispatch's global queues, once
/// used, make libdispatch wake the process once a second for good.
private final class DeadlineTimer: @unchecked Sendable {
    // `cancellable` never changes after init and GCancellable is thread-safe.
    // The timer's job holds its own references to it and to the context,
    // dropped with the job, whether it ran or was cancelled.
    let cancellable: OpaquePointer
    let duration: Duration
    private let library: LibSecret
    private let timer: Int

    /// The loop that keeps every call's deadline, made at the first call.
    private static let clock = EventLoop(name: "openudid-deadline")

    /// A timer that cancels its cancellable when `duration` has passed, and wakes
    /// `context` so that a wait for a signal in it ends too.
    init(_ duration: Duration, library: LibSecret, waking context: OpaquePointer?) {
        self.duration = duration
        self.library = library
        let cancellable = library.gCancellableNew()!
        self.cancellable = cancellable
        let held = GObjects(library, cancellable: cancellable, context: context)
        timer = Self.clock.schedule(after: duration) {
            library.gCancellableCancel(held.cancellable)
            library.gMainContextWakeup(held.context)
        }
    }

    /// References to the cancellable and the context, dropped with the timer's job.
    private final class GObjects: @unchecked Sendable {
        let library: LibSecret
        let cancellable: OpaquePointer
        let context: OpaquePointer?

        init(_ library: LibSecret, cancellable: OpaquePointer, context: OpaquePointer?) {
            self.library = library
            self.cancellable = cancellable
            self.context = library.gMainContextRef(context)
            _ = library.gObjectRef(UnsafeMutableRawPointer(cancellable))
        }

        deinit {
            library.gObjectUnref(UnsafeMutableRawPointer(cancellable))
            library.gMainContextUnref(context)
        }
    }

    /// Whether the deadline passed (nothing else cancels the cancellable).
    var fired: Bool { library.gCancellableIsCancelled(cancellable) != 0 }

    /// How the deadline reads in a message: "2 s", "0.5 s".
    var description: String {
        Milliseconds.seconds(duration)
    }

    /// Stops the timer and drops the caller's reference.
    func finish() {
        Self.clock.cancel(timer)
        library.gObjectUnref(UnsafeMutableRawPointer(cancellable))
    }
}

/// One vendor item as a search found it.
private struct FoundItem {
    let pointer: OpaquePointer
    /// Locked for this client: its collection is locked, or (its collection being
    /// unlocked) the provider keeps it from this client until the user allows it.
    let isLocked: Bool
}

/// A connection, a Secret Service proxy and the objects made during one call.
///
/// Not Sendable: it lives and dies on the calling thread, inside `perform`.
private final class SecretServiceCall {
    private let library: LibSecret
    private let connection: OpaquePointer
    private let service: OpaquePointer
    private let schema: OpaquePointer
    private let attributes: OpaquePointer
    private let timer: DeadlineTimer
    private let operation: String
    private let vendor: String
    private let namespace: String
    /// The thread-default main context of the call, where signals arrive.
    private let context: OpaquePointer?
    /// GObjects handed to us with a reference, released by `close()`.
    private var owned: [UnsafeMutableRawPointer] = []

    init(
        library: LibSecret, address: String, operation: String, vendor: String, namespace: String, timer: DeadlineTimer,
        context: OpaquePointer?
    ) throws(StoreUnavailable) {
        self.library = library
        self.context = context
        self.timer = timer
        self.operation = operation
        self.vendor = vendor
        self.namespace = namespace
        var error: UnsafeMutablePointer<GError>?
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        guard let connection = library.gDBusConnectionNewForAddressSync(address, flags, nil, timer.cancellable, &error) else {
            throw Self.connectFailure(error, address: address, timer: timer, operation: operation, library: library)
        }
        guard let service = library.newService(on: connection, cancellable: timer.cancellable, error: &error) else {
            _ = library.gDBusConnectionCloseSync(connection, nil, nil)
            library.gObjectUnref(UnsafeMutableRawPointer(connection))
            throw Self.failure(error, timer: timer, operation: operation, library: library)
        }
        self.connection = connection
        self.service = service
        schema = Self.makeSchema(library)
        attributes = library.newStringTable()
        _ = library.gHashTableInsert(attributes, library.gStrdup(SecretServiceMirror.vendorAttribute), library.gStrdup(vendor))
        _ = library.gHashTableInsert(attributes, library.gStrdup(SecretServiceMirror.namespaceAttribute), library.gStrdup(namespace))
    }

    private static func makeSchema(_ library: LibSecret) -> OpaquePointer {
        let types = library.gHashTableNewFull(library.gStrHash, library.gStrEqual, library.gFree, nil)
        // The value is the attribute type; SECRET_SCHEMA_ATTRIBUTE_STRING is 0, a null pointer.
        for attribute in [SecretServiceMirror.vendorAttribute, SecretServiceMirror.namespaceAttribute] {
            _ = library.gHashTableInsert(
                types, library.gStrdup(attribute),
                UnsafeMutableRawPointer(bitPattern: Int(SECRET_SCHEMA_ATTRIBUTE_STRING.rawValue)))
        }
        // SECRET_SCHEMA_NONE (not DONT_MATCH_NAME): searches also match xdg:schema.
        let schema = library.secretSchemaNewv(SecretServiceMirror.schemaName, SECRET_SCHEMA_NONE, types)!
        library.gHashTableUnref(types)
        return schema
    }

    func close() {
        for object in owned.reversed() { library.gObjectUnref(object) }
        owned.removeAll()
        library.gHashTableUnref(attributes)
        library.secretSchemaUnref(schema)
        library.gObjectUnref(UnsafeMutableRawPointer(service))
        // Closing flushes nothing of ours and does not wait for the peer, so it
        // cannot hang on a stuck daemon.
        _ = library.gDBusConnectionCloseSync(connection, nil, nil)
        library.gObjectUnref(UnsafeMutableRawPointer(connection))
    }

    /// Every item of the vendor in this namespace, locked or not, in every collection; unlocks nothing.
    func items() throws(StoreUnavailable) -> [FoundItem] {
        try search(attributes)
    }

    /// Every item of the schema, whatever its vendor and namespace.
    func everyItem() throws(StoreUnavailable) -> [FoundItem] {
        let none = library.newStringTable()
        defer { library.gHashTableUnref(none) }
        return try search(none)
    }

    /// Every item of this call's namespace, any vendor; outside a namespace
    /// also those with no namespace attribute at all (written before it existed).
    func namespaceItems() throws(StoreUnavailable) -> [FoundItem] {
        try everyItem().filter { item in
            guard let table = library.secretItemGetAttributes(item.pointer) else { return false }
            defer { library.gHashTableUnref(table) }
            guard let value = library.gHashTableLookup(table, SecretServiceMirror.namespaceAttribute) else { return namespace.isEmpty }
            return String(cString: value.assumingMemoryBound(to: CChar.self)) == namespace
        }
    }

    /// The label of `item`, as keyring managers show it.
    func label(of item: FoundItem) -> String {
        guard let label = library.secretItemGetLabel(item.pointer) else { return "(no label)" }
        defer { library.gFree(label) }
        return String(cString: label)
    }

    /// The vendor's items that have no namespace attribute at all (written before it existed).
    func unnamespacedItems() throws(StoreUnavailable) -> [FoundItem] {
        let vendorOnly = library.newStringTable()
        defer { library.gHashTableUnref(vendorOnly) }
        _ = library.gHashTableInsert(vendorOnly, library.gStrdup(SecretServiceMirror.vendorAttribute), library.gStrdup(vendor))
        // The search also finds every namespaced item of the vendor: keep those without the attribute.
        return try search(vendorOnly).filter { item in
            guard let table = library.secretItemGetAttributes(item.pointer) else { return true }
            defer { library.gHashTableUnref(table) }
            return library.gHashTableContains(table, SecretServiceMirror.namespaceAttribute) == 0
        }
    }

    private func search(_ attributes: OpaquePointer) throws(StoreUnavailable) -> [FoundItem] {
        var error: UnsafeMutablePointer<GError>?
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue)
        let list = library.secretServiceSearchSync(service, schema, attributes, flags, timer.cancellable, &error)
        if let error { throw failure(error) }
        var found: [FoundItem] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data {
                owned.append(data)
                let item = OpaquePointer(data)
                found.append(FoundItem(pointer: item, isLocked: library.secretItemGetLocked(item) != 0))
            }
            node = current.pointee.next
        }
        library.gListFree(list)
        return found
    }

    /// Deletes one item.
    func delete(_ item: FoundItem) throws(StoreUnavailable) {
        var error: UnsafeMutablePointer<GError>?
        if library.secretItemDeleteSync(item.pointer, timer.cancellable, &error) == 0 {
            throw failure(error)
        }
    }

    /// The secret of an unlocked item.
    func secret(of item: FoundItem) throws(StoreUnavailable) -> Data {
        var error: UnsafeMutablePointer<GError>?
        if library.secretItemLoadSecretSync(item.pointer, timer.cancellable, &error) == 0 {
            throw failure(error)
        }
        guard let value = library.secretItemGetSecret(item.pointer) else {
            throw StoreUnavailable(
                .serviceError,
                "secret-service: the Secret Service returned no secret while \(operation)")
        }
        defer { library.secretValueUnref(UnsafeMutableRawPointer(value)) }
        var length: gsize = 0
        guard let bytes = library.secretValueGet(value, &length) else { return Data() }
        return Data(bytes: bytes, count: Int(length))
    }

    /// The object path of the default collection, if it exists and is unlocked.
    ///
    /// A locked one is unlocked when the provider can do it without the user: when
    /// `Unlock` needs no prompt, or its prompt is known to ask nobody (KWallet, whose
    /// wallet pam_kwallet opened at login, reports its collection locked until a
    /// client runs that prompt; see ``opensWithoutUser(_:)``). Any other prompt is
    /// dismissed, never run: it could open a window.
    func usableDefaultCollection() throws(StoreUnavailable) -> String {
        var error: UnsafeMutablePointer<GError>?
        let collection = library.secretCollectionForAliasSync(
            service, "default", SECRET_COLLECTION_NONE,
            timer.cancellable, &error)
        if let error { throw failure(error) }
        guard let collection else {
            throw StoreUnavailable(
                .serviceError,
                """
                secret-service: \(provider.name) has no default collection (no login keyring \
                was ever created), found while \(operation); create one, for example in Passwords and Keys
                """)
        }
        owned.append(UnsafeMutableRawPointer(collection))
        let path = String(cString: library.gDBusProxyGetObjectPath(collection)!)
        if library.secretCollectionGetLocked(collection) != 0, try !unlockWithoutPrompt(path) {
            throw StoreUnavailable(
                .locked,
                """
                secret-service: \(provider.name)'s default collection is locked, found while \(operation); \
                unlocking it needs the user, and the library never asks: \(provider.unlockRemedy)
                """)
        }
        return path
    }

    /// Asks the provider to unlock `collection` and says whether it is unlocked
    /// afterwards; a prompt that would ask the user is dismissed, never shown.
    private func unlockWithoutPrompt(_ collection: String) throws(StoreUnavailable) -> Bool {
        let paths = library.gVariantNewArray(
            nil, [library.gVariantNewObjectPath(collection)], 1)
        guard
            let reply = try callSecretService(
                "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Unlock", [paths], replyType: "(aoo)")
        else { return false }
        defer { library.gVariantUnref(reply) }
        let promptValue = library.gVariantGetChildValue(reply, 1)
        defer { library.gVariantUnref(promptValue) }
        guard let promptPath = library.gVariantGetString(promptValue, nil) else { return false }
        let prompt = String(cString: promptPath)
        if prompt != "/" {
            let completed = try opensWithoutUser(collection) ? run(prompt) : false
            if !completed {
                // Best effort: a prompt left undismissed opens nothing either.
                if let dismissed = try? callSecretService(prompt, "org.freedesktop.Secret.Prompt", "Dismiss", [], replyType: "()") {
                    library.gVariantUnref(dismissed)
                }
                return false
            }
        }
        // The proxy's cached property may lag behind: ask again.
        guard let value = try property("Locked", of: collection, interface: "org.freedesktop.Secret.Collection") else { return false }
        defer { library.gVariantUnref(value) }
        let boolean = library.gVariantTypeNew("b")
        defer { library.gVariantTypeFree(boolean) }
        return library.gVariantIsOfType(value, boolean) != 0 && library.gVariantGetBoolean(value) == 0
    }

    /// Whether the prompt of an `Unlock` of `collection` completes without asking
    /// the user. Only known for KWallet: its prompt opens the collection's wallet
    /// through kwalletd, which asks for nothing when the wallet is open already
    /// (pam_kwallet opened it at login) and applications need no permission to
    /// open it (kwalletd's "Prompt on Open", off by default). Any other prompt may
    /// show a dialog, so it is not run.
    private func opensWithoutUser(_ collection: String) throws(StoreUnavailable) -> Bool {
        guard provider.kind == .kWallet,
            let labelValue = try property("Label", of: collection, interface: "org.freedesktop.Secret.Collection")
        else { return false }
        defer { library.gVariantUnref(labelValue) }
        let stringType = library.gVariantTypeNew("s")
        defer { library.gVariantTypeFree(stringType) }
        guard library.gVariantIsOfType(labelValue, stringType) != 0, let label = library.gVariantGetString(labelValue, nil)
        else { return false }
        for daemon in ["org.kde.kwalletd5", "org.kde.kwalletd6"] {
            let path = "/modules/" + daemon.dropFirst("org.kde.".count)
            guard
                let reply = try? call(
                    daemon, path, "org.kde.KWallet", "isOpen", [library.gVariantNewString(label)], replyType: "(b)")
            else { continue }
            defer { library.gVariantUnref(reply) }
            let open = library.gVariantGetChildValue(reply, 0)
            defer { library.gVariantUnref(open) }
            return library.gVariantGetBoolean(open) != 0
        }
        return false
    }

    /// Runs a prompt that is known to need no user (see ``opensWithoutUser(_:)``) and waits for its
    /// `Completed` signal, within the call's deadline.
    ///
    /// - Returns: Whether it completed without being dismissed.
    private func run(_ prompt: String) throws(StoreUnavailable) -> Bool {
        final class Completion {
            var done = false
            var dismissed = true
        }
        let completion = Completion()
        let box = Unmanaged.passRetained(completion)
        let subscription = library.gDBusConnectionSignalSubscribe(
            connection, nil, "org.freedesktop.Secret.Prompt", "Completed", prompt, nil, 0,
            { _, _, _, _, _, parameters, userData in
                guard let userData else { return }
                let completion = Unmanaged<Completion>.fromOpaque(userData).takeUnretainedValue()
                completion.done = true
                // (b dismissed, v result); anything else counts as dismissed.
                guard case .success(let library) = LibSecret.loaded, let parameters,
                    library.gVariantNChildren(parameters) >= 1
                else { return }
                let dismissed = library.gVariantGetChildValue(parameters, 0)
                defer { library.gVariantUnref(dismissed) }
                let boolean = library.gVariantTypeNew("b")
                defer { library.gVariantTypeFree(boolean) }
                completion.dismissed = library.gVariantIsOfType(dismissed, boolean) == 0 || library.gVariantGetBoolean(dismissed) != 0
            }, box.toOpaque(), { userData in if let userData { Unmanaged<AnyObject>.fromOpaque(userData).release() } })
        defer { library.gDBusConnectionSignalUnsubscribe(connection, subscription) }
        guard
            let reply = try callSecretService(
                prompt, "org.freedesktop.Secret.Prompt", "Prompt", [library.gVariantNewString("")], replyType: "()")
        else { return false }
        library.gVariantUnref(reply)
        while !completion.done && !timer.fired {
            _ = library.gMainContextIteration(context, 1)
        }
        if timer.fired { throw failure(nil) }
        return !completion.dismissed
    }

    /// Reads a property of an object of the Secret Service (or of `destination`).
    ///
    /// - Returns: The value (to be unreffed), or nil when there is no such property.
    func property(
        _ name: String, of path: String, interface: String, destination: String = "org.freedesktop.secrets"
    ) throws(StoreUnavailable) -> OpaquePointer? {
        guard
            let reply = try call(
                destination, path, "org.freedesktop.DBus.Properties", "Get",
                [library.gVariantNewString(interface), library.gVariantNewString(name)], replyType: "(v)")
        else { return nil }
        defer { library.gVariantUnref(reply) }
        let boxed = library.gVariantGetChildValue(reply, 0)
        defer { library.gVariantUnref(boxed) }
        return library.gVariantGetVariant(boxed)
    }

    /// Calls a method of the Secret Service on this call's connection, under its deadline.
    ///
    /// - Returns: The reply, checked against `replyType`, or nil when the service has
    ///   no such method (an older provider); other errors throw.
    private func callSecretService(
        _ path: String, _ interface: String, _ method: String, _ arguments: [OpaquePointer?], replyType: String
    ) throws(StoreUnavailable) -> OpaquePointer? {
        try call("org.freedesktop.secrets", path, interface, method, arguments, replyType: replyType)
    }

    func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String, _ arguments: [OpaquePointer?],
        replyType: String
    ) throws(StoreUnavailable) -> OpaquePointer? {
        let parameters = library.gVariantNewTuple(arguments, gsize(arguments.count))
        let type = library.gVariantTypeNew(replyType)
        defer { library.gVariantTypeFree(type) }
        var error: UnsafeMutablePointer<GError>?
        // No auto-start: the Secret Service is already known to answer.
        let reply = library.gDBusConnectionCallSync(
            connection, destination, path, interface, method, parameters, type, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1,
            timer.cancellable, &error)
        if let reply { return reply }
        if let error, error.pointee.domain == library.gDBusErrorQuark(),
            error.pointee.code == Int32(G_DBUS_ERROR_UNKNOWN_METHOD.rawValue)
        {
            library.gErrorFree(error)
            return nil
        }
        throw failure(error)
    }

    // MARK: The provider

    /// Which program provides the Secret Service, asked once per call: the owner
    /// of `org.freedesktop.secrets`, by its process's name.
    private(set) lazy var provider: SecretServiceProvider = {
        guard
            let reply = try? call(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                [library.gVariantNewString("org.freedesktop.secrets")], replyType: "(u)")
        else { return SecretServiceProvider(processName: nil) }
        defer { library.gVariantUnref(reply) }
        let pidValue = library.gVariantGetChildValue(reply, 0)
        defer { library.gVariantUnref(pidValue) }
        let pid = library.gVariantGetUint32(pidValue)
        return SecretServiceProvider(processName: SecretServiceProvider.processName(pid: pid))
    }()

    /// Creates or replaces the vendor's item in the collection at `collectionPath`.
    func store(_ bytes: Data, in collectionPath: String) throws(StoreUnavailable) {
        // Records are UTF-8 text; anything else is still stored, but labelled as bytes.
        let contentType = String(data: bytes, encoding: .utf8) == nil ? "application/octet-stream" : "text/plain"
        let value = bytes.withUnsafeBytes { raw -> OpaquePointer in
            guard let base = raw.baseAddress else { return library.secretValueNew("", 0, contentType)! }
            return library.secretValueNew(base.assumingMemoryBound(to: CChar.self), raw.count, contentType)!
        }
        defer { library.secretValueUnref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        let stored = library.secretServiceStoreSync(
            service, schema, attributes, collectionPath,
            SecretServiceMirror.label(vendor: vendor), value,
            timer.cancellable, &error)
        if stored == 0 { throw failure(error) }
    }

    /// The failure for an item that is locked although its collection is not: the
    /// provider keeps it from this client until the user allows it.
    func lockedItem() -> StoreUnavailable {
        StoreUnavailable(.locked, provider.accessConfirmationMessage(vendor: vendor, operation: operation))
    }

    // MARK: Errors

    /// Classifies and frees a GError of this call; a refusal for a lock names the provider and its remedy.
    private func failure(_ error: UnsafeMutablePointer<GError>?) -> StoreUnavailable {
        Self.failure(error, timer: timer, operation: operation, library: library) { [self] in provider }
    }

    private static func connectFailure(
        _ error: UnsafeMutablePointer<GError>?, address: String,
        timer: DeadlineTimer, operation: String, library: LibSecret
    ) -> StoreUnavailable {
        if timer.fired { return timeout(timer: timer, operation: operation, error, library: library) }
        let message = take(error, library: library)
        return StoreUnavailable(
            .notRunning,
            "secret-service: cannot connect to the session bus at \(address): \(message)")
    }

    /// Classifies and frees a GError.
    private static func failure(
        _ error: UnsafeMutablePointer<GError>?, timer: DeadlineTimer,
        operation: String, library: LibSecret, provider: (() -> SecretServiceProvider)? = nil
    ) -> StoreUnavailable {
        if timer.fired { return timeout(timer: timer, operation: operation, error, library: library) }
        guard let error else {
            return StoreUnavailable(
                .serviceError,
                "secret-service: the Secret Service failed without saying why while \(operation)")
        }
        let domain = error.pointee.domain
        let code = error.pointee.code
        let remote = library.gDBusErrorGetRemoteError(error).map { name in
            defer { library.gFree(name) }
            return String(cString: name)
        }
        let message = take(error, library: library)
        func isDBus(_ wanted: GDBusError, _ name: String) -> Bool {
            (domain == library.gDBusErrorQuark() && code == Int32(wanted.rawValue))
                || remote == "org.freedesktop.DBus.Error." + name
        }
        if isDBus(G_DBUS_ERROR_SERVICE_UNKNOWN, "ServiceUnknown") || isDBus(G_DBUS_ERROR_NAME_HAS_NO_OWNER, "NameHasNoOwner") {
            return StoreUnavailable(
                .notRunning,
                """
                secret-service: no Secret Service on the session bus while \(operation) (\(message)); \
                start gnome-keyring, KeePassXC or another Secret Service provider
                """)
        }
        if (domain == library.secretErrorGetQuark() && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue))
            || remote == "org.freedesktop.Secret.Error.IsLocked"
        {
            let provider = provider?() ?? SecretServiceProvider(processName: nil)
            return StoreUnavailable(
                .locked,
                """
                secret-service: \(provider.name) refused, locked, while \(operation) (\(message)); \
                \(provider.unlockRemedy)
                """)
        }
        if isDBus(G_DBUS_ERROR_NO_REPLY, "NoReply") {
            return StoreUnavailable(
                .serviceError,
                "secret-service: the Secret Service went away while \(operation): \(message)")
        }
        if domain == library.gIOErrorQuark() && code == Int32(G_IO_ERROR_CLOSED.rawValue) {
            return StoreUnavailable(
                .serviceError,
                "secret-service: the session bus closed the connection while \(operation): \(message)")
        }
        return StoreUnavailable(.serviceError, "secret-service: Secret Service error while \(operation): \(message)")
    }

    private static func timeout(
        timer: DeadlineTimer, operation: String,
        _ error: UnsafeMutablePointer<GError>?, library: LibSecret
    ) -> StoreUnavailable {
        _ = take(error, library: library)
        return StoreUnavailable(
            .serviceError,
            "secret-service: Secret Service did not answer within \(timer.description) while \(operation)")
    }

    /// The message of a GError, which is then freed.
    private static func take(_ error: UnsafeMutablePointer<GError>?, library: LibSecret) -> String {
        guard let error else { return "unknown error" }
        defer { library.gErrorFree(error) }
        // "GDBus.Error:org.freedesktop.DBus.Error.ServiceUnknown: " says nothing a reader needs.
        _ = library.gDBusErrorStripRemoteError(error)
        return error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    }
}
