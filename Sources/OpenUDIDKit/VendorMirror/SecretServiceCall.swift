import CLibSecret
import FoundationEssentials
import Glibc

extension SecretServiceMirror {
    /// Runs `body` against a fresh connection and proxy, under the deadline.
    ///
    /// A fresh connection per call, rather than libsecret's cached singleton on GIO's
    /// shared session bus: the shared connection terminates the process when the bus
    /// closes, the singleton stays bound to whichever daemon answered first (a
    /// restarted daemon then looks dead), and neither can be pointed at another bus.
    func perform<T>(
        _ operation: String, vendor: String?,
        _ body: (SecretServiceCall) throws(StoreUnavailable) -> T
    ) -> (result: Result<T, StoreUnavailable>, timedOut: Bool) {
        let address: String
        let library: LibSecret
        do throws(StoreUnavailable) {
            if let vendor {
                do throws(IdentityError) {
                    try AppIdentity.validate(vendor, as: .vendor)
                } catch {
                    throw StoreUnavailable(.serviceError, "secret-service: refusing vendor: \(error.description)")
                }
            }
            // The session bus of this process's environment unless one was given; never a bus of its own.
            address = try (busAddress.map { .success($0) } ?? SessionBus.address(in: ProcessInfo.processInfo.environment)).get()
            // Only now, with a bus to talk to, is libsecret loaded (the first time).
            library = try LibSecret.loaded.get()
        } catch {
            return (.failure(error), false)
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
}

/// One vendor item as a search found it.
struct FoundItem {
    let pointer: OpaquePointer
    /// Locked for this client: its collection is locked, or (its collection being
    /// unlocked) the provider keeps it from this client until the user allows it.
    let isLocked: Bool
}

/// A connection, a Secret Service proxy and the objects made during one call.
///
/// Not Sendable: it lives and dies on the calling thread, inside `perform`.
final class SecretServiceCall {
    let library: LibSecret
    let connection: OpaquePointer
    let service: OpaquePointer
    let schema: OpaquePointer
    let timer: DeadlineTimer
    let operation: String
    let vendor: String
    let namespace: String
    /// The thread-default main context of the call, where signals arrive.
    let context: OpaquePointer?
    /// GObjects handed to us with a reference, released by `close()`.
    var owned: [UnsafeMutableRawPointer] = []

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
            throw Self.failure(error, library: library, timer: timer, operation: operation, connectingTo: address)
        }
        guard let service = library.newService(on: connection, cancellable: timer.cancellable, error: &error) else {
            _ = library.gDBusConnectionCloseSync(connection, nil, nil)
            library.gObjectUnref(UnsafeMutableRawPointer(connection))
            throw Self.failure(error, library: library, timer: timer, operation: operation)
        }
        self.connection = connection
        self.service = service
        schema = Self.makeSchema(library)
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
        library.secretSchemaUnref(schema)
        library.gObjectUnref(UnsafeMutableRawPointer(service))
        // Closing flushes nothing of ours and does not wait for the peer, so it
        // cannot hang on a stuck daemon.
        _ = library.gDBusConnectionCloseSync(connection, nil, nil)
        library.gObjectUnref(UnsafeMutableRawPointer(connection))
    }

    /// The attributes of the vendor's item in this namespace.
    private var attributes: [String: String] {
        [SecretServiceMirror.vendorAttribute: vendor, SecretServiceMirror.namespaceAttribute: namespace]
    }

    /// Every item of the vendor in this namespace, locked or not, in every collection; unlocks nothing.
    func items() throws(StoreUnavailable) -> [FoundItem] {
        try search(attributes)
    }

    /// Every item of the schema, whatever its vendor and namespace.
    func everyItem() throws(StoreUnavailable) -> [FoundItem] {
        try search([:])
    }

    /// Every item of this call's namespace, any vendor; outside a namespace
    /// also those with no namespace attribute at all (written before it existed).
    func namespaceItems() throws(StoreUnavailable) -> [FoundItem] {
        try everyItem().filter { (namespace(of: $0) ?? "") == namespace }
    }

    /// The vendor's items that have no namespace attribute at all (written before it existed).
    func unnamespacedItems() throws(StoreUnavailable) -> [FoundItem] {
        // The search also finds every namespaced item of the vendor: keep those without the attribute.
        try search([SecretServiceMirror.vendorAttribute: vendor]).filter { namespace(of: $0) == nil }
    }

    /// The namespace attribute of `item`, or nil when it has none.
    private func namespace(of item: FoundItem) -> String? {
        guard let table = library.secretItemGetAttributes(item.pointer) else { return nil }
        defer { library.gHashTableUnref(table) }
        let value = library.gHashTableLookup(table, SecretServiceMirror.namespaceAttribute)
        return value.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
    }

    /// The label of `item`, as keyring managers show it.
    func label(of item: FoundItem) -> String {
        guard let label = library.secretItemGetLabel(item.pointer) else { return "(no label)" }
        defer { library.gFree(label) }
        return String(cString: label)
    }

    private func search(_ attributes: [String: String]) throws(StoreUnavailable) -> [FoundItem] {
        var error: UnsafeMutablePointer<GError>?
        let table = library.newStringTable(attributes)
        defer { library.gHashTableUnref(table) }
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue)
        let list = library.secretServiceSearchSync(service, schema, table, flags, timer.cancellable, &error)
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

    /// Creates or replaces the vendor's item in the collection at `collectionPath`.
    func store(_ bytes: Data, in collectionPath: String) throws(StoreUnavailable) {
        // Records are UTF-8 text; anything else is still stored, but labelled as bytes.
        let contentType = String(data: bytes, encoding: .utf8) == nil ? "application/octet-stream" : "text/plain"
        let value = bytes.withUnsafeBytes { raw -> OpaquePointer in
            guard let base = raw.baseAddress else { return library.secretValueNew("", 0, contentType)! }
            return library.secretValueNew(base.assumingMemoryBound(to: CChar.self), raw.count, contentType)!
        }
        defer { library.secretValueUnref(UnsafeMutableRawPointer(value)) }
        let table = library.newStringTable(attributes)
        defer { library.gHashTableUnref(table) }
        var error: UnsafeMutablePointer<GError>?
        let stored = library.secretServiceStoreSync(
            service, schema, table, collectionPath, SecretServiceMirror.label(vendor: vendor), value, timer.cancellable, &error)
        if stored == 0 { throw failure(error) }
    }

    /// Which program provides the Secret Service, asked once per call: the owner
    /// of `org.freedesktop.secrets`, by its process's name.
    private(set) lazy var provider: SecretServiceProvider = {
        let reply = try? call(
            "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
            [library.gVariantNewString("org.freedesktop.secrets")], replyType: "(u)", of: "org.freedesktop.DBus")
        return SecretServiceProvider(processName: reply?[0].uint32.flatMap(SecretServiceProvider.processName(pid:)))
    }()

    /// The failure for an item that is locked although its collection is not: the
    /// provider keeps it from this client until the user allows it.
    func lockedItem() -> StoreUnavailable {
        StoreUnavailable(.locked, provider.accessConfirmationMessage(vendor: vendor, operation: operation))
    }
}
