import Foundation
import OpenUDIDKit
import ProcessSupport

/// A private D-Bus session bus with a gnome-keyring Secret Service on it, whose
/// login keyring is created and unlocked with a password given on standard input.
///
/// The bus has an empty service directory, so nothing is activated behind the
/// lab's back, and the daemon has a home of its own, so it never finds or touches
/// the user's real keyring.
final class PrivateKeyring: @unchecked Sendable {
    // Immutable after init; the children are only signalled.
    private let bus: ChildProcess
    private let daemon: ChildProcess

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    let address: String

    /// Starts the bus and the keyring in `directory` and waits until the
    /// Secret Service answers with an unlocked default collection.
    init(directory: String) throws(LabError) {
        let dbus = try Tools.require("dbus-daemon", package: "dbus")
        let keyring = try Tools.require("gnome-keyring-daemon", package: "gnome-keyring")
        let home = try Home(root: directory + "/home")
        let services = directory + "/services"
        try makeDirectory(services)
        let configuration = directory + "/session.conf"
        let text = privateSessionBusConfiguration(socketDirectory: home.runtime, serviceDirectory: services)
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: configuration))
        } catch {
            throw LabError("cannot write \(configuration): \(error.localizedDescription)")
        }
        bus = try ChildProcess(
            dbus, ["--config-file=\(configuration)", "--print-address=1", "--nofork"],
            environment: home.environment(display: nil, bus: nil))
        guard let line = bus.nextLine(timeout: 10), line.hasPrefix("unix:") else {
            bus.kill9()
            throw LabError("dbus-daemon printed no bus address within 10 s: \(bus.standardError)")
        }
        address = line
        // No trailing newline: it would become part of the password.
        daemon = try ChildProcess(
            keyring, ["--unlock", "--foreground", "--components=secrets"],
            environment: home.environment(display: nil, bus: address), input: Data("lab".utf8))
        let deadline = Date().addingTimeInterval(10)
        var state = SecretServiceMirror.probe(busAddress: address, deadline: .milliseconds(500))
        while state != .ready {
            guard Date() < deadline, daemon.isRunning else {
                daemon.kill9()
                bus.kill9()
                throw LabError("gnome-keyring-daemon did not offer an unlocked keyring within 10 s (\(state)): \(daemon.standardError)")
            }
            usleep(20_000)
            state = SecretServiceMirror.probe(busAddress: address, deadline: .milliseconds(500))
        }
    }

    /// Deletes the mirror items of `vendors` in each of `namespaces`, as wiping the secret store does.
    func clear(vendors: [String], namespaces: [String]) throws(LabError) {
        for namespace in namespaces {
            let store = SecretServiceMirror(busAddress: address, namespace: namespace)
            for vendor in vendors {
                do {
                    try store.remove(vendor: vendor)
                } catch {
                    throw LabError("cannot delete the keyring item of \(vendor) in \(namespace): \(error)")
                }
            }
        }
    }

    /// Stops the daemon and the bus.
    func stop() {
        daemon.kill9()
        bus.kill9()
    }

    deinit { stop() }
}
