import DesktopSandbox
import Foundation
import OpenUDIDKit

// The lab's private desktop is DesktopSandbox's; these are the names the lab speaks.

/// A failure of the lab itself: a tool missing, a server that would not start, a
/// process that did not answer. Its text says what happened and what to do.
typealias LabError = SandboxError
/// A process the lab started, with its standard output collected line by line.
typealias ChildProcess = DesktopSandbox.ChildProcess
/// What a command that ran to completion printed.
typealias CommandOutput = DesktopSandbox.CommandOutput
/// A private Xvfb, restartable as a rebooted machine's session is.
typealias XServer = DesktopSandbox.XServer
/// A private user account: a HOME with its own XDG directories.
typealias Home = DesktopSandbox.Home
/// Finds the programs the lab runs.
typealias Tools = DesktopSandbox.Tools

/// Runs `executable` to completion, or kills it after `timeout` seconds.
func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String], timeout: TimeInterval = 20
) throws(LabError) -> CommandOutput {
    try DesktopSandbox.runCommand(executable, arguments, environment: environment, timeout: timeout)
}

/// Creates `path` and its parents with mode 0700.
func makeDirectory(_ path: String) throws(LabError) { try DesktopSandbox.makeDirectory(path) }

/// Forbids new children and kills every live one with SIGKILL.
func killEveryChild() { ChildProcess.killAll() }

extension Tools {
    /// The `openudid` tool built beside the lab.
    static func openudid() throws(LabError) -> String { try product("openudid") }
}

/// A private session bus with a gnome-keyring Secret Service on it, whose login
/// keyring is created and unlocked with a password given on standard input.
final class PrivateKeyring: Sendable {
    private let bus: SessionBus

    /// The bus address, as `DBUS_SESSION_BUS_ADDRESS` holds it.
    var address: String { bus.address }

    /// Starts the bus and the keyring in `directory` and waits until the
    /// Secret Service answers with an unlocked default collection.
    init(directory: String) throws(LabError) {
        bus = try SessionBus(home: Home(root: directory + "/home"))
        try bus.startKeyring(password: "lab")
        let address = bus.address
        var state = SecretServiceMirror.probe(busAddress: address, deadline: .milliseconds(500))
        let ready = waitUntil(timeout: 10, interval: 0.02) {
            state = SecretServiceMirror.probe(busAddress: address, deadline: .milliseconds(500))
            return state == .ready
        }
        guard ready else {
            bus.stop()
            throw LabError("gnome-keyring-daemon did not offer an unlocked keyring within 10 s (\(state)): \(bus.keyringLog)")
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
    func stop() { bus.stop() }
}
