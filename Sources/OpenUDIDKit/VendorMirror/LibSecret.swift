import CLibSecret
import Glibc

/// libsecret, with the GLib, GObject and GIO functions the Secret Service mirror
/// calls, loaded the first time the mirror talks to the Secret Service.
///
/// Linked at build time, libsecret brought GIO, GObject, GLib, gcrypt and their own
/// dependencies into every process that uses the library, about 2.4 MiB resident and
/// a few milliseconds of dynamic linking at start-up, even a process that never asks
/// the Secret Service anything (`openudid --help`, an app with the file mirror, a C
/// host). Now nothing of them is mapped until ``loaded`` is first read, which only
/// ``SecretServiceMirror`` does, right before it connects to a bus.
///
/// The types and constants are declared in the project's own CLibSecret/shim.h (no
/// GLib or libsecret header is needed to build); each function is resolved by name
/// with `dlsym` and called through a C function pointer of the type declared here,
/// which follows the function's declaration in GLib's or libsecret's header. When the library cannot be loaded, ``loaded`` says why, and the mirror
/// reports the Secret Service as not available (`StoreUnavailable.Kind.notRunning`):
/// an automatic mirror choice then falls back to the file mirror.
// @unchecked: every stored property is a C function pointer or a GType, set once
// in init and never changed.
struct LibSecret: @unchecked Sendable {
    /// The library as loaded on first use, or why it cannot be used; loaded once per process.
    static let loaded: Result<LibSecret, StoreUnavailable> = load()

    /// libsecret's ABI 0, the name every distribution installs it under.
    static let soname = "libsecret-1.so.0"

    typealias Cancellable = OpaquePointer?
    typealias ErrorOut = UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?
    typealias Service = OpaquePointer?
    typealias Schema = OpaquePointer?
    typealias Item = OpaquePointer?
    typealias Variant = OpaquePointer?

    // GLib
    let gMainContextNew: @convention(c) () -> OpaquePointer?
    let gMainContextPushThreadDefault: @convention(c) (OpaquePointer?) -> Void
    let gMainContextIteration: @convention(c) (OpaquePointer?, gboolean) -> gboolean
    let gMainContextPopThreadDefault: @convention(c) (OpaquePointer?) -> Void
    let gMainContextUnref: @convention(c) (OpaquePointer?) -> Void
    let gMainContextRef: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let gMainContextWakeup: @convention(c) (OpaquePointer?) -> Void
    let gHashTableNewFull: @convention(c) (GHashFunc?, GEqualFunc?, GDestroyNotify?, GDestroyNotify?) -> OpaquePointer?
    let gHashTableInsert: @convention(c) (OpaquePointer?, gpointer?, gpointer?) -> gboolean
    let gHashTableUnref: @convention(c) (OpaquePointer?) -> Void
    let gHashTableLookup: @convention(c) (OpaquePointer?, gconstpointer?) -> gpointer?
    let gStrHash: GHashFunc
    let gStrEqual: GEqualFunc
    let gFree: GDestroyNotify
    let gStrdup: @convention(c) (UnsafePointer<gchar>?) -> UnsafeMutablePointer<gchar>?
    let gListFree: @convention(c) (UnsafeMutablePointer<GList>?) -> Void
    let gErrorFree: @convention(c) (UnsafeMutablePointer<GError>?) -> Void

    // GObject
    let gObjectUnref: @convention(c) (gpointer?) -> Void
    let gTypeClassPeek: @convention(c) (GType) -> gpointer?
    let gTypeQuery: @convention(c) (GType, UnsafeMutablePointer<GTypeQuery>?) -> Void
    let gTypeFromName: @convention(c) (UnsafePointer<gchar>?) -> GType
    let gTypeRegisterStaticSimple:
        @convention(c) (GType, UnsafePointer<gchar>?, guint, GClassInitFunc?, guint, GInstanceInitFunc?, GTypeFlags) -> GType
    let gObjectNewWithProperties:
        @convention(c) (GType, guint, UnsafeMutablePointer<UnsafePointer<CChar>?>?, UnsafePointer<GValue>?) -> OpaquePointer?
    let gObjectSetProperty: @convention(c) (OpaquePointer?, UnsafePointer<gchar>?, UnsafePointer<GValue>?) -> Void
    let gValueInit: @convention(c) (UnsafeMutablePointer<GValue>?, GType) -> UnsafeMutablePointer<GValue>?
    let gValueUnset: @convention(c) (UnsafeMutablePointer<GValue>?) -> Void
    let gValueSetEnum: @convention(c) (UnsafeMutablePointer<GValue>?, gint) -> Void
    let gValueSetFlags: @convention(c) (UnsafeMutablePointer<GValue>?, guint) -> Void
    let gValueSetObject: @convention(c) (UnsafeMutablePointer<GValue>?, gpointer?) -> Void

    // GIO
    let gCancellableNew: @convention(c) () -> OpaquePointer?
    let gCancellableCancel: @convention(c) (Cancellable) -> Void
    let gCancellableIsCancelled: @convention(c) (Cancellable) -> gboolean
    let gDBusConnectionNewForAddressSync:
        @convention(c) (UnsafePointer<gchar>?, GDBusConnectionFlags, OpaquePointer?, Cancellable, ErrorOut) -> OpaquePointer?
    let gDBusConnectionCloseSync: @convention(c) (OpaquePointer?, Cancellable, ErrorOut) -> gboolean
    let gDBusConnectionGetType: @convention(c) () -> GType
    let gDBusProxyGetObjectPath: @convention(c) (OpaquePointer?) -> UnsafePointer<gchar>?
    let gDBusConnectionCallSync:
        @convention(c) (
            OpaquePointer?, UnsafePointer<gchar>?, UnsafePointer<gchar>?, UnsafePointer<gchar>?, UnsafePointer<gchar>?,
            Variant, Variant, GDBusCallFlags, gint, Cancellable, ErrorOut
        ) -> Variant
    let gVariantTypeNew: @convention(c) (UnsafePointer<gchar>?) -> Variant
    let gVariantTypeFree: @convention(c) (Variant) -> Void
    let gVariantNewString: @convention(c) (UnsafePointer<gchar>?) -> Variant
    let gVariantNewObjectPath: @convention(c) (UnsafePointer<gchar>?) -> Variant
    let gVariantNewTuple: @convention(c) (UnsafePointer<Variant>?, gsize) -> Variant
    let gVariantNewArray: @convention(c) (Variant, UnsafePointer<Variant>?, gsize) -> Variant
    let gVariantNChildren: @convention(c) (Variant) -> gsize
    let gVariantGetChildValue: @convention(c) (Variant, gsize) -> Variant
    let gVariantGetVariant: @convention(c) (Variant) -> Variant
    let gVariantGetString: @convention(c) (Variant, UnsafeMutablePointer<gsize>?) -> UnsafePointer<gchar>?
    let gVariantGetBoolean: @convention(c) (Variant) -> gboolean
    let gVariantGetUint32: @convention(c) (Variant) -> UInt32
    let gVariantIsOfType: @convention(c) (Variant, Variant) -> gboolean
    let gVariantUnref: @convention(c) (Variant) -> Void
    let gDBusConnectionSignalSubscribe:
        @convention(c) (
            OpaquePointer?, UnsafePointer<gchar>?, UnsafePointer<gchar>?, UnsafePointer<gchar>?, UnsafePointer<gchar>?,
            UnsafePointer<gchar>?, gint, GDBusSignalCallback?, gpointer?, GDestroyNotify?
        ) -> guint
    let gDBusConnectionSignalUnsubscribe: @convention(c) (OpaquePointer?, guint) -> Void
    let gDBusErrorGetRemoteError: @convention(c) (UnsafePointer<GError>?) -> UnsafeMutablePointer<gchar>?
    let gDBusErrorStripRemoteError: @convention(c) (UnsafeMutablePointer<GError>?) -> gboolean
    let gDBusErrorQuark: @convention(c) () -> GQuark
    let gIOErrorQuark: @convention(c) () -> GQuark
    let gInitableInit: @convention(c) (OpaquePointer?, Cancellable, ErrorOut) -> gboolean
    let gBusTypeGetType: @convention(c) () -> GType

    // libsecret
    let secretServiceGetType: @convention(c) () -> GType
    let secretServiceFlagsGetType: @convention(c) () -> GType
    let secretSchemaNewv: @convention(c) (UnsafePointer<gchar>?, SecretSchemaFlags, OpaquePointer?) -> OpaquePointer?
    let secretSchemaUnref: @convention(c) (OpaquePointer?) -> Void
    let secretServiceSearchSync:
        @convention(c) (Service, Schema, OpaquePointer?, SecretSearchFlags, Cancellable, ErrorOut) -> UnsafeMutablePointer<GList>?
    let secretServiceStoreSync:
        @convention(c) (
            Service, Schema, OpaquePointer?, UnsafePointer<gchar>?, UnsafePointer<gchar>?, OpaquePointer?, Cancellable, ErrorOut
        ) -> gboolean
    let secretCollectionForAliasSync:
        @convention(c) (Service, UnsafePointer<gchar>?, SecretCollectionFlags, Cancellable, ErrorOut) -> OpaquePointer?
    let secretCollectionGetLocked: @convention(c) (OpaquePointer?) -> gboolean
    let secretItemGetLabel: @convention(c) (Item) -> UnsafeMutablePointer<gchar>?
    let secretItemGetAttributes: @convention(c) (Item) -> OpaquePointer?
    let secretItemGetLocked: @convention(c) (Item) -> gboolean
    let secretItemDeleteSync: @convention(c) (Item, Cancellable, ErrorOut) -> gboolean
    let secretItemLoadSecretSync: @convention(c) (Item, Cancellable, ErrorOut) -> gboolean
    let secretItemGetSecret: @convention(c) (Item) -> OpaquePointer?
    let secretValueNew: @convention(c) (UnsafePointer<gchar>?, gssize, UnsafePointer<gchar>?) -> OpaquePointer?
    let secretValueGet: @convention(c) (OpaquePointer?, UnsafeMutablePointer<gsize>?) -> UnsafePointer<gchar>?
    let secretValueUnref: @convention(c) (gpointer?) -> Void
    let secretErrorGetQuark: @convention(c) () -> GQuark

    /// `OpenUDIDSecretService`, the Secret Service proxy class that accepts a connection (see ``newService(on:cancellable:error:)``).
    private(set) var serviceType: GType = 0

    private static func load() -> Result<LibSecret, StoreUnavailable> {
        // Never closed: GObject types cannot be unregistered, and the process may come back to the mirror.
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "dlopen failed"
            return .failure(
                StoreUnavailable(
                    .notRunning,
                    """
                    secret-service: no Secret Service client library: cannot load \(soname) (\(reason)); \
                    install libsecret (libsecret-1-0 on Debian and Ubuntu, libsecret elsewhere) to use the Secret Service mirror
                    """))
        }
        do throws(StoreUnavailable) {
            var library = try LibSecret(handle)
            library.serviceType = library.registerServiceType()
            guard library.serviceType != 0 else {
                return .failure(
                    StoreUnavailable(.notRunning, "secret-service: \(soname) does not describe its SecretService class"))
            }
            return .success(library)
        } catch {
            return .failure(error)
        }
    }

    /// Resolves every function in `handle`, which dlsym searches with its dependencies (GIO, GObject, GLib).
    private init(_ handle: UnsafeMutableRawPointer) throws(StoreUnavailable) {
        func resolve<Function>(_ name: String) throws(StoreUnavailable) -> Function {
            guard let address = dlsym(handle, name) else {
                throw StoreUnavailable(
                    .notRunning,
                    "secret-service: \(LibSecret.soname) or its GLib lacks \(name); the Secret Service mirror needs libsecret 0.20 and GLib 2.54 or later"
                )
            }
            return unsafeBitCast(address, to: Function.self)
        }
        gMainContextNew = try resolve("g_main_context_new")
        gMainContextPushThreadDefault = try resolve("g_main_context_push_thread_default")
        gMainContextIteration = try resolve("g_main_context_iteration")
        gMainContextPopThreadDefault = try resolve("g_main_context_pop_thread_default")
        gMainContextUnref = try resolve("g_main_context_unref")
        gMainContextRef = try resolve("g_main_context_ref")
        gMainContextWakeup = try resolve("g_main_context_wakeup")
        gHashTableNewFull = try resolve("g_hash_table_new_full")
        gHashTableInsert = try resolve("g_hash_table_insert")
        gHashTableUnref = try resolve("g_hash_table_unref")
        gHashTableLookup = try resolve("g_hash_table_lookup")
        gStrHash = try resolve("g_str_hash")
        gStrEqual = try resolve("g_str_equal")
        gFree = try resolve("g_free")
        gStrdup = try resolve("g_strdup")
        gListFree = try resolve("g_list_free")
        gErrorFree = try resolve("g_error_free")

        gObjectUnref = try resolve("g_object_unref")
        gTypeClassPeek = try resolve("g_type_class_peek")
        gTypeQuery = try resolve("g_type_query")
        gTypeFromName = try resolve("g_type_from_name")
        gTypeRegisterStaticSimple = try resolve("g_type_register_static_simple")
        gObjectNewWithProperties = try resolve("g_object_new_with_properties")
        gObjectSetProperty = try resolve("g_object_set_property")
        gValueInit = try resolve("g_value_init")
        gValueUnset = try resolve("g_value_unset")
        gValueSetEnum = try resolve("g_value_set_enum")
        gValueSetFlags = try resolve("g_value_set_flags")
        gValueSetObject = try resolve("g_value_set_object")

        gCancellableNew = try resolve("g_cancellable_new")
        gCancellableCancel = try resolve("g_cancellable_cancel")
        gCancellableIsCancelled = try resolve("g_cancellable_is_cancelled")
        gDBusConnectionNewForAddressSync = try resolve("g_dbus_connection_new_for_address_sync")
        gDBusConnectionCloseSync = try resolve("g_dbus_connection_close_sync")
        gDBusConnectionGetType = try resolve("g_dbus_connection_get_type")
        gDBusProxyGetObjectPath = try resolve("g_dbus_proxy_get_object_path")
        gDBusConnectionCallSync = try resolve("g_dbus_connection_call_sync")
        gVariantTypeNew = try resolve("g_variant_type_new")
        gVariantTypeFree = try resolve("g_variant_type_free")
        gVariantNewString = try resolve("g_variant_new_string")
        gVariantNewObjectPath = try resolve("g_variant_new_object_path")
        gVariantNewTuple = try resolve("g_variant_new_tuple")
        gVariantNewArray = try resolve("g_variant_new_array")
        gVariantNChildren = try resolve("g_variant_n_children")
        gVariantGetChildValue = try resolve("g_variant_get_child_value")
        gVariantGetVariant = try resolve("g_variant_get_variant")
        gVariantGetString = try resolve("g_variant_get_string")
        gVariantGetBoolean = try resolve("g_variant_get_boolean")
        gVariantGetUint32 = try resolve("g_variant_get_uint32")
        gVariantIsOfType = try resolve("g_variant_is_of_type")
        gVariantUnref = try resolve("g_variant_unref")
        gDBusConnectionSignalSubscribe = try resolve("g_dbus_connection_signal_subscribe")
        gDBusConnectionSignalUnsubscribe = try resolve("g_dbus_connection_signal_unsubscribe")
        gDBusErrorGetRemoteError = try resolve("g_dbus_error_get_remote_error")
        gDBusErrorStripRemoteError = try resolve("g_dbus_error_strip_remote_error")
        gDBusErrorQuark = try resolve("g_dbus_error_quark")
        gIOErrorQuark = try resolve("g_io_error_quark")
        gInitableInit = try resolve("g_initable_init")
        gBusTypeGetType = try resolve("g_bus_type_get_type")

        secretServiceGetType = try resolve("secret_service_get_type")
        secretServiceFlagsGetType = try resolve("secret_service_flags_get_type")
        secretSchemaNewv = try resolve("secret_schema_newv")
        secretSchemaUnref = try resolve("secret_schema_unref")
        secretServiceSearchSync = try resolve("secret_service_search_sync")
        secretServiceStoreSync = try resolve("secret_service_store_sync")
        secretCollectionForAliasSync = try resolve("secret_collection_for_alias_sync")
        secretCollectionGetLocked = try resolve("secret_collection_get_locked")
        secretItemGetLabel = try resolve("secret_item_get_label")
        secretItemGetAttributes = try resolve("secret_item_get_attributes")
        secretItemGetLocked = try resolve("secret_item_get_locked")
        secretItemDeleteSync = try resolve("secret_item_delete_sync")
        secretItemLoadSecretSync = try resolve("secret_item_load_secret_sync")
        secretItemGetSecret = try resolve("secret_item_get_secret")
        secretValueNew = try resolve("secret_value_new")
        secretValueGet = try resolve("secret_value_get")
        secretValueUnref = try resolve("secret_value_unref")
        secretErrorGetQuark = try resolve("secret_error_get_quark")
    }
}

// MARK: - A Secret Service proxy on a chosen connection

extension LibSecret {
    /// Creates and initializes (GetAll of its properties) a Secret Service proxy on `connection`.
    ///
    /// libsecret only offers proxies on the process-wide session bus: SecretService's
    /// GObject constructor sets "g-bus-type" to the session bus on every instance,
    /// which makes GDBusProxy ignore (and assert against) a "g-connection". The
    /// subclass `OpenUDIDSecretService` chains up to that constructor and then clears
    /// the bus type while the object is still under construction, so the proxy uses
    /// the given connection. Everything else (collections, items, prompts, sessions)
    /// follows the proxy's connection already.
    ///
    /// - Returns: The proxy with one reference, or nil with `error` set.
    func newService(on connection: OpaquePointer, cancellable: Cancellable, error: ErrorOut) -> OpaquePointer? {
        var connectionValue = GValue()
        _ = gValueInit(&connectionValue, gDBusConnectionGetType())
        gValueSetObject(&connectionValue, UnsafeMutableRawPointer(connection))
        var flagsValue = GValue()
        _ = gValueInit(&flagsValue, secretServiceFlagsGetType())
        gValueSetFlags(&flagsValue, guint(SECRET_SERVICE_NONE.rawValue))
        defer {
            gValueUnset(&connectionValue)
            gValueUnset(&flagsValue)
        }
        var names: [UnsafePointer<CChar>?] = [Self.cString("g-connection"), Self.cString("flags")]
        let values = [connectionValue, flagsValue]
        guard let object = gObjectNewWithProperties(serviceType, guint(values.count), &names, values) else { return nil }
        guard gInitableInit(object, cancellable, error) != 0 else {
            gObjectUnref(UnsafeMutableRawPointer(object))
            return nil
        }
        return object
    }

    /// Registers `OpenUDIDSecretService`, or finds it when another copy of this
    /// library in the process (a Swift app beside libopenudid) registered it first.
    private func registerServiceType() -> GType {
        let name = "OpenUDIDSecretService"
        let existing = gTypeFromName(name)
        if existing != 0 { return existing }
        let classInit: GClassInitFunc = { classPointer, _ in
            classPointer?.assumingMemoryBound(to: OpenUDIDObjectClassHead.self).pointee.constructor = { type, count, properties in
                LibSecret.constructService(type, count, properties)
            }
        }
        // The subclass adds nothing: its class and instances are the size of
        // SecretService's, as this libsecret says (no header of it is used to build).
        var parent = GTypeQuery()
        gTypeQuery(secretServiceGetType(), &parent)
        guard parent.class_size > 0, parent.instance_size > 0 else { return 0 }
        let registered = gTypeRegisterStaticSimple(
            secretServiceGetType(), name, parent.class_size, classInit, parent.instance_size, nil, G_TYPE_FLAG_NONE)
        // 0: the other copy registered it between the lookup and here.
        return registered != 0 ? registered : gTypeFromName(name)
    }

    /// The constructor of `OpenUDIDSecretService`: SecretService's, then "g-bus-type" back to none.
    private static func constructService(
        _ type: GType, _ count: guint, _ properties: UnsafeMutablePointer<GObjectConstructParam>?
    ) -> OpaquePointer? {
        // The class exists only once `loaded` succeeded, so this always finds it.
        guard case .success(let library) = loaded,
            let parent = library.gTypeClassPeek(library.secretServiceGetType()),
            let construct = parent.assumingMemoryBound(to: OpenUDIDObjectClassHead.self).pointee.constructor,
            let object = construct(type, count, properties)
        else { return nil }
        var busType = GValue()
        _ = library.gValueInit(&busType, library.gBusTypeGetType())
        library.gValueSetEnum(&busType, G_BUS_TYPE_NONE.rawValue)
        library.gObjectSetProperty(object, "g-bus-type", &busType)
        library.gValueUnset(&busType)
        return object
    }

    /// A C string that lives as long as the program: the text of a literal.
    private static func cString(_ literal: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

extension LibSecret {
    /// A new GHashTable holding copies of `pairs`, which it owns (and frees with `g_free`).
    func newStringTable(_ pairs: [String: String]) -> OpaquePointer {
        let table = gHashTableNewFull(gStrHash, gStrEqual, gFree, gFree)!
        for (key, value) in pairs { _ = gHashTableInsert(table, gStrdup(key), gStrdup(value)) }
        return table
    }
}
