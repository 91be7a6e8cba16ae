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
    private static func resolveBusAddress(_ explicit: String?) -> Result<String, StoreUnavailable> {
        if let explicit { return .success(explicit) }
        return SessionBus.address(in: ProcessInfo.processInfo.environment)
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
    let attributes: OpaquePointer
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
}
