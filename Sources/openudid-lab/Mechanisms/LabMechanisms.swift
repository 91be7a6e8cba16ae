import Foundation
import OpenUDIDKit

/// The preferences an app of the lab's own columns keeps in its data directory:
/// `<data>/<app-id>/<namespace>.uuid` and `<namespace>.opted-out`. Removing the
/// app deletes them, as uninstalling an app with its data does.
struct Preferences {
    let app: LabApp
    let site: Site
    /// Keeps one column's preferences apart from another's in the same app directory.
    let namespace: String

    private var directory: String { site.dataHome + "/" + app.id }
    private var uuidFile: String { directory + "/" + namespace + ".uuid" }
    private var optOutFile: String { directory + "/" + namespace + ".opted-out" }

    /// Whether the app opted out.
    var optedOut: Bool { FileManager.default.fileExists(atPath: optOutFile) }

    /// Records the app's choice.
    func setOptedOut(_ optedOut: Bool) throws(LabError) {
        if optedOut {
            try write("opted out\n", to: optOutFile)
        } else {
            try? FileManager.default.removeItem(atPath: optOutFile)
        }
    }

    /// The stored UUID, made and stored on first use.
    func storedUUID() throws(LabError) -> String {
        if let text = try? String(contentsOfFile: uuidFile, encoding: .utf8) {
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if UUID(uuidString: value) != nil { return value }
        }
        let value = UUID().uuidString.lowercased()
        try write(value + "\n", to: uuidFile)
        return value
    }

    /// Deletes the app's preferences, as uninstalling it with its data does.
    func remove() {
        try? FileManager.default.removeItem(atPath: uuidFile)
        try? FileManager.default.removeItem(atPath: optOutFile)
    }

    private func write(_ text: String, to path: String) throws(LabError) {
        try makeDirectory(directory)
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw LabError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}

/// The columns the lab computes itself, as an app's own code would: nothing runs
/// besides the app, so starting and stopping change nothing.
final class LocalMechanism: Mechanism {
    let kind: MechanismKind
    /// Where in the apps' data directories this column keeps its preferences.
    let namespace: String

    /// - Parameters:
    ///   - kind: `.freshUUID`, `.cachedUUID` or `.machineScoped`.
    ///   - namespace: Keeps this column's preferences apart from the others'.
    init(_ kind: MechanismKind, namespace: String) {
        precondition([.freshUUID, .cachedUUID, .machineScoped].contains(kind), "\(kind) is not computed by the lab")
        self.kind = kind
        self.namespace = namespace
    }

    func start(_ app: LabApp, at site: Site) throws(LabError) {}
    func stop(_ app: LabApp) throws(LabError) {}
    func settle() {}
    func shutDown() {}

    func remove(_ app: LabApp, at site: Site) throws(LabError) {
        Preferences(app: app, site: site, namespace: namespace).remove()
    }

    func setOptedOut(_ optedOut: Bool, app: LabApp, at site: Site) throws(LabError) {
        try Preferences(app: app, site: site, namespace: namespace).setOptedOut(optedOut)
    }

    func observe(_ app: LabApp, at site: Site) throws(LabError) -> String {
        let preferences = Preferences(app: app, site: site, namespace: namespace)
        // An app that respects the user's choice reports zeros, whatever its mechanism.
        if preferences.optedOut { return optedOutUUID }
        switch kind {
        case .freshUUID:
            return UUID().uuidString.lowercased()
        case .cachedUUID:
            return try preferences.storedUUID()
        case .machineScoped:
            return AppScopedIdentifier(key: try site.machine.machineID(), message: Array(app.id.utf8)).uuidString
        default:
            preconditionFailure("\(kind) is not computed by LocalMechanism")
        }
    }
}
