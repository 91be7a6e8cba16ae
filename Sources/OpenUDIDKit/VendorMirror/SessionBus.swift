import FoundationEssentials
import Glibc
import InputGate

/// Where the session bus of an environment is: the one lookup every Secret
/// Service call and every mirror choice makes. It never launches a bus.
enum SessionBus {
    /// The address of the session bus of `environment`: `DBUS_SESSION_BUS_ADDRESS`,
    /// else `$XDG_RUNTIME_DIR/bus` when a socket stands there.
    ///
    /// - Returns: The address, or why there is none.
    static func address(
        in environment: [String: String], fileSystem: FileSystem = .system
    ) -> Result<String, StoreUnavailable> {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return .success(address)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let socket = runtime + "/bus"
            var info = stat()
            if fileSystem.stat(socket, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK {
                return .success("unix:path=" + socket)
            }
        }
        return .failure(
            StoreUnavailable(
                .notRunning,
                """
                secret-service: no session bus: DBUS_SESSION_BUS_ADDRESS is not set and \
                $XDG_RUNTIME_DIR/bus does not exist; run inside a desktop session or under dbus-run-session
                """))
    }
}
