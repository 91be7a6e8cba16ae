import DesktopSandbox
import Foundation

/// The lab's private directory tree, under the system's temporary directory.
struct PrivateRoot: Sendable {
    /// The absolute path of the tree.
    let path: String

    /// Creates a fresh, empty tree that only this user can enter.
    init() throws(LabError) {
        path = try makePrivateDirectory(prefix: "openudid-lab")
    }

    /// Creates `relative` inside the tree (mode 0700, with its parents) and returns its path.
    func directory(_ relative: String) throws(LabError) -> String {
        let full = path + "/" + relative
        try makeDirectory(full)
        return full
    }

    /// Removes the whole tree.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A computer in the lab: one user's home, and the machine id that systemd-style
/// identifiers derive from (a stand-in for /etc/machine-id, made up for the run).
struct Machine: Sendable {
    /// A short name for reports ("this machine", "another machine").
    let name: String
    /// The user's home on it.
    let home: Home
    /// The file holding the machine id: 32 lowercase hex digits and a newline, like /etc/machine-id.
    let machineIDPath: String

    /// Creates the machine's directories under `directory` and gives it a fresh machine id.
    init(name: String, directory: String) throws(LabError) {
        self.name = name
        home = try Home(root: directory + "/home")
        try makeDirectory(directory + "/etc")
        machineIDPath = directory + "/etc/machine-id"
        try newMachineID()
    }

    /// Writes a new random machine id, as installing the system afresh does.
    func newMachineID() throws(LabError) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = bytes.map { String(format: "%02x", $0) }.joined() + "\n"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: machineIDPath), options: .atomic)
        } catch {
            throw LabError("cannot write the machine id \(machineIDPath): \(error.localizedDescription)")
        }
    }

    /// The machine id's 16 raw bytes, read from its file.
    func machineID() throws(LabError) -> [UInt8] {
        guard let text = try? String(contentsOfFile: machineIDPath, encoding: .utf8) else {
            throw LabError("cannot read the machine id \(machineIDPath)")
        }
        let hex = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard hex.count == 32 else { throw LabError("\(machineIDPath) does not hold 32 hex digits") }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: hex[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw LabError("\(machineIDPath) does not hold 32 hex digits")
            }
            bytes.append(byte)
        }
        return bytes
    }
}

extension Home {
    /// Deletes every file mirror the tool keeps in place of a keyring
    /// (`openudid/ns/<namespace>/vendors/`), in the home and in every sandbox's
    /// data directory: what losing the keyring does to a user without one.
    func removeFileMirrors() throws(LabError) {
        let manager = FileManager.default
        let sandboxes = (try? manager.contentsOfDirectory(atPath: root + "/.var/app")) ?? []
        for dataHome in [data] + sandboxes.map({ root + "/.var/app/" + $0 + "/data" }) {
            let namespaces = dataHome + "/openudid/ns"
            for namespace in (try? manager.contentsOfDirectory(atPath: namespaces)) ?? [] {
                let vendors = namespaces + "/" + namespace + "/vendors"
                guard manager.fileExists(atPath: vendors) else { continue }
                do {
                    try manager.removeItem(atPath: vendors)
                } catch {
                    throw LabError("cannot delete the file mirror \(vendors): \(error.localizedDescription)")
                }
            }
        }
    }
}
