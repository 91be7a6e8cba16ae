import Foundation

/// The columns whose value the system holds rather than the app: the hardware
/// identifier, the MAC addresses, the advertising and vendor identifiers, and the
/// push token. An app reads them where the system offers them, as its own code
/// would; it keeps nothing of its own but its opt-out.
final class SystemMechanism: Mechanism {
    let kind: MechanismKind
    /// Where in the apps' data directories this column keeps an app's opt-out.
    let namespace: String
    /// `dbus-send`, which the push-token column asks the session bus with.
    private let dbusSend: String?

    /// The columns this type computes.
    static let kinds: Set<MechanismKind> = [.hardwareID, .macAddress, .randomisedMAC, .advertising, .vendorID, .pushToken]

    /// The prefix of the bus name a UnifiedPush distributor owns on the session bus.
    static let distributorPrefix = "org.unifiedpush.Distributor."

    /// - Parameters:
    ///   - kind: One of `kinds`.
    ///   - namespace: Keeps this column's opt-outs apart from the others'.
    init(_ kind: MechanismKind, namespace: String) throws(LabError) {
        precondition(Self.kinds.contains(kind), "\(kind) is not held by the system")
        self.kind = kind
        self.namespace = namespace
        dbusSend = kind == .pushToken ? try Tools.require("dbus-send", package: "dbus-bin") : nil
    }

    func start(_ app: LabApp, at site: Site) throws(LabError) {
        // Starting an app that is installed already records nothing new.
        if kind == .vendorID { try site.machine.recordInstallation(of: app) }
    }

    func stop(_ app: LabApp) throws(LabError) {}
    func settle() {}
    func shutDown() {}

    func remove(_ app: LabApp, at site: Site) throws(LabError) {
        Preferences(app: app, site: site, namespace: namespace).remove()
        if kind == .vendorID { site.machine.recordRemoval(of: app) }
    }

    func setOptedOut(_ optedOut: Bool, app: LabApp, at site: Site) throws(LabError) {
        try Preferences(app: app, site: site, namespace: namespace).setOptedOut(optedOut)
    }

    func observe(_ app: LabApp, at site: Site) throws(LabError) -> String {
        // An app that respects the user's choice reports zeros, whatever its mechanism.
        if Preferences(app: app, site: site, namespace: namespace).optedOut { return optedOutUUID }
        switch kind {
        case .hardwareID: return try site.machine.rawMachineID()
        case .macAddress: return try site.machine.hardwareAddress(assignType: 0)
        case .randomisedMAC: return try site.machine.hardwareAddress(assignType: 1)
        case .advertising: return try site.machine.advertisingIdentifier()
        case .vendorID: return try site.machine.vendorIdentifier(for: app)
        case .pushToken: return try pushTokenHash(site)
        default: preconditionFailure("\(kind) is not held by the system")
        }
    }

    /// Asks the app's session bus for a UnifiedPush distributor, the Linux service
    /// that hands out push endpoints; without one there is no token to hash.
    private func pushTokenHash(_ site: Site) throws(LabError) -> String {
        guard let bus = site.bus, let dbusSend else { return unavailableIdentifier }
        var environment = site.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus
        let arguments = [
            "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"
        ]
        let result = try runCommand(dbusSend, arguments, environment: environment)
        guard result.status == 0 else {
            throw LabError("dbus-send \(arguments.joined(separator: " ")) failed (status \(result.status)): \(result.standardError)")
        }
        if result.standardOutput.contains("\"" + Self.distributorPrefix) {
            throw LabError(
                "a UnifiedPush distributor is on the lab's private session bus; the lab does not register with one, so it cannot hash a token"
            )
        }
        return unavailableIdentifier
    }
}
