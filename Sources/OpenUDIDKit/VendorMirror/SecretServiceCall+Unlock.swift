import CLibSecret
import FoundationEssentials
import Glibc

extension SecretServiceCall {
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
        let paths = library.gVariantNewArray(nil, [library.gVariantNewObjectPath(collection)], 1)
        guard
            let prompt = try call(
                "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Unlock", [paths], replyType: "(aoo)")?[1].string
        else { return false }
        if prompt != "/" {
            let completed = try opensWithoutUser(collection) ? run(prompt) : false
            if !completed {
                // Best effort: a prompt left undismissed opens nothing either.
                _ = try? call(prompt, "org.freedesktop.Secret.Prompt", "Dismiss")
                return false
            }
        }
        // The proxy's cached property may lag behind: ask again.
        return try property("Locked", of: collection, interface: "org.freedesktop.Secret.Collection")?.bool == false
    }

    /// Whether the prompt of an `Unlock` of `collection` completes without asking
    /// the user. Only known for KWallet: its prompt opens the collection's wallet
    /// through kwalletd, which asks for nothing when the wallet is open already
    /// (pam_kwallet opened it at login) and applications need no permission to
    /// open it (kwalletd's "Prompt on Open", off by default). Any other prompt may
    /// show a dialog, so it is not run.
    private func opensWithoutUser(_ collection: String) throws(StoreUnavailable) -> Bool {
        guard provider.kind == .kWallet,
            let label = try property("Label", of: collection, interface: "org.freedesktop.Secret.Collection")?.string
        else { return false }
        for daemon in ["org.kde.kwalletd5", "org.kde.kwalletd6"] {
            let path = "/modules/" + daemon.dropFirst("org.kde.".count)
            if let reply = try? call(path, "org.kde.KWallet", "isOpen", [library.gVariantNewString(label)], replyType: "(b)", of: daemon) {
                return reply[0].bool == true
            }
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
                guard case .success(let library) = LibSecret.loaded, let parameters, library.gVariantNChildren(parameters) >= 1
                else { return }
                completion.dismissed = DBusValue(library.gVariantGetChildValue(parameters, 0), library).bool ?? true
            }, box.toOpaque(), { userData in if let userData { Unmanaged<AnyObject>.fromOpaque(userData).release() } })
        defer { library.gDBusConnectionSignalUnsubscribe(connection, subscription) }
        guard try call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", [library.gVariantNewString("")]) != nil else { return false }
        while !completion.done && !timer.fired {
            _ = library.gMainContextIteration(context, 1)
        }
        if timer.fired { throw failure(nil) }
        return !completion.dismissed
    }

    /// Reads a property of an object of the Secret Service.
    ///
    /// - Returns: The value, or nil when the service cannot be asked for properties.
    private func property(_ name: String, of path: String, interface: String) throws(StoreUnavailable) -> DBusValue? {
        let arguments = [library.gVariantNewString(interface), library.gVariantNewString(name)]
        return try call(path, "org.freedesktop.DBus.Properties", "Get", arguments, replyType: "(v)")?[0].unboxed
    }

    /// Calls a method of the Secret Service (or of `destination`) on this call's
    /// connection, under its deadline.
    ///
    /// - Returns: The reply, checked against `replyType`, or nil when the service has
    ///   no such method (an older provider); other errors throw.
    func call(
        _ path: String, _ interface: String, _ method: String, _ arguments: [OpaquePointer?] = [], replyType: String = "()",
        of destination: String = "org.freedesktop.secrets"
    ) throws(StoreUnavailable) -> DBusValue? {
        let parameters = library.gVariantNewTuple(arguments, gsize(arguments.count))
        let type = library.gVariantTypeNew(replyType)
        defer { library.gVariantTypeFree(type) }
        var error: UnsafeMutablePointer<GError>?
        // No auto-start: the Secret Service is already known to answer.
        let reply = library.gDBusConnectionCallSync(
            connection, destination, path, interface, method, parameters, type, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1,
            timer.cancellable, &error)
        if let reply { return DBusValue(reply, library) }
        if let error, error.pointee.domain == library.gDBusErrorQuark(),
            error.pointee.code == Int32(G_DBUS_ERROR_UNKNOWN_METHOD.rawValue)
        {
            library.gErrorFree(error)
            return nil
        }
        throw failure(error)
    }
}

/// A D-Bus value (a GVariant) held with one reference, dropped with it.
final class DBusValue {
    private let library: LibSecret
    private let pointer: OpaquePointer

    /// Takes over the reference that `pointer` carries.
    init(_ pointer: OpaquePointer?, _ library: LibSecret) {
        self.pointer = pointer!
        self.library = library
    }

    deinit { library.gVariantUnref(pointer) }

    /// The child at `index` of a container (a tuple: a reply, a signal's parameters).
    subscript(index: Int) -> DBusValue { DBusValue(library.gVariantGetChildValue(pointer, gsize(index)), library) }

    /// The value inside a variant (`v`).
    var unboxed: DBusValue { DBusValue(library.gVariantGetVariant(pointer), library) }

    /// The value of a boolean, else nil.
    var bool: Bool? { isOf("b") ? library.gVariantGetBoolean(pointer) != 0 : nil }

    /// The value of a string or an object path, else nil.
    var string: String? {
        isOf("s") || isOf("o") ? library.gVariantGetString(pointer, nil).map { String(cString: $0) } : nil
    }

    /// The value of an unsigned 32-bit integer, else nil.
    var uint32: UInt32? { isOf("u") ? library.gVariantGetUint32(pointer) : nil }

    private func isOf(_ type: String) -> Bool {
        let type = library.gVariantTypeNew(type)
        defer { library.gVariantTypeFree(type) }
        return library.gVariantIsOfType(pointer, type) != 0
    }
}
