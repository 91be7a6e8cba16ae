import CLibSecret
import FoundationEssentials
import Glibc

extension SecretServiceCall {
    /// Classifies and frees a GError of this call; a refusal for a lock names the provider and its remedy.
    func failure(_ error: UnsafeMutablePointer<GError>?) -> StoreUnavailable {
        Self.failure(error, library: library, timer: timer, operation: operation, provider: provider)
    }

    /// Classifies and frees a GError: what went wrong while `operation`, and what to do.
    ///
    /// - Parameters:
    ///   - address: The bus, when the error came from connecting to it.
    ///   - provider: The provider a refusal for a lock names; asked only for one.
    static func failure(
        _ error: UnsafeMutablePointer<GError>?, library: LibSecret, timer: DeadlineTimer, operation: String,
        connectingTo address: String? = nil,
        provider: @autoclosure () -> SecretServiceProvider = SecretServiceProvider(processName: nil)
    ) -> StoreUnavailable {
        let domain = error?.pointee.domain
        let code = error?.pointee.code
        let remote = error.flatMap { library.gDBusErrorGetRemoteError($0) }.map { name in
            defer { library.gFree(name) }
            return String(cString: name)
        }
        var message = "unknown error"
        if let error {
            // "GDBus.Error:org.freedesktop.DBus.Error.ServiceUnknown: " says nothing a reader needs.
            _ = library.gDBusErrorStripRemoteError(error)
            message = error.pointee.message.map { String(cString: $0) } ?? message
            library.gErrorFree(error)
        }
        func isDBus(_ wanted: GDBusError, _ name: String) -> Bool {
            (domain == library.gDBusErrorQuark() && code == Int32(wanted.rawValue)) || remote == "org.freedesktop.DBus.Error." + name
        }

        if timer.fired {
            return StoreUnavailable(
                .serviceError, "secret-service: Secret Service did not answer within \(timer.description) while \(operation)")
        }
        if let address {
            return StoreUnavailable(.notRunning, "secret-service: cannot connect to the session bus at \(address): \(message)")
        }
        guard error != nil else {
            return StoreUnavailable(.serviceError, "secret-service: the Secret Service failed without saying why while \(operation)")
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
            let provider = provider()
            return StoreUnavailable(
                .locked,
                """
                secret-service: \(provider.name) refused, locked, while \(operation) (\(message)); \
                \(provider.unlockRemedy)
                """)
        }
        if isDBus(G_DBUS_ERROR_NO_REPLY, "NoReply") {
            return StoreUnavailable(.serviceError, "secret-service: the Secret Service went away while \(operation): \(message)")
        }
        if domain == library.gIOErrorQuark() && code == Int32(G_IO_ERROR_CLOSED.rawValue) {
            return StoreUnavailable(
                .serviceError, "secret-service: the session bus closed the connection while \(operation): \(message)")
        }
        return StoreUnavailable(.serviceError, "secret-service: Secret Service error while \(operation): \(message)")
    }
}
