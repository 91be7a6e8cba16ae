import CLibSecret
import FoundationEssentials
import Glibc

extension SecretServiceCall {
    /// Classifies and frees a GError of this call; a refusal for a lock names the provider and its remedy.
    func failure(_ error: UnsafeMutablePointer<GError>?) -> StoreUnavailable {
        Self.failure(error, timer: timer, operation: operation, library: library) { [self] in provider }
    }

    static func connectFailure(
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
    static func failure(
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
