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
    func callSecretService(
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
}
