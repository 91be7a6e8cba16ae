import Foundation

/// The lab's private directory tree, under the system's temporary directory.
struct PrivateRoot: Sendable {
    /// The absolute path of the tree.
    let path: String

    /// Creates a fresh, empty tree that only this user can enter.
    init() throws(LabError) {
        var template = Array((NSTemporaryDirectory() + "/openudid-lab-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw LabError(
                "cannot create a private directory in \(NSTemporaryDirectory()): \(String(cString: strerror(errno))); check TMPDIR")
        }
        path = String(cString: made)
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

/// Creates `path` and its parents with mode 0700.
func makeDirectory(_ path: String) throws(LabError) {
    do {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    } catch {
        throw LabError("cannot create \(path): \(error.localizedDescription)")
    }
}

/// A private user account: a HOME with its own XDG directories, so nothing the
/// lab does reaches the real user's files, keyring or desktop.
struct Home: Sendable {
    /// The HOME directory.
    let root: String

    /// `XDG_DATA_HOME`, where the apps' data, the file slots and the file mirror live.
    var data: String { root + "/.local/share" }
    /// `XDG_CONFIG_HOME`, where the user-wide opt-out lives.
    var config: String { root + "/.config" }
    /// `XDG_CACHE_HOME`.
    var cache: String { root + "/.cache" }
    /// `XDG_RUNTIME_DIR`: private, so no real session bus is ever found through it.
    var runtime: String { root + "/.run" }

    /// Creates the directories of a home at `root`.
    init(root: String) throws(LabError) {
        self.root = root
        try create()
    }

    private func create() throws(LabError) {
        for directory in [data, config, cache, runtime] { try makeDirectory(directory) }
    }

    /// The environment of a process of this user: the home, the X display and the
    /// session bus given, and PATH; nothing else of the lab's own environment leaks in.
    func environment(display: String?, bus: String?) -> [String: String] {
        var environment = [
            "HOME": root,
            "XDG_DATA_HOME": data,
            "XDG_CONFIG_HOME": config,
            "XDG_CACHE_HOME": cache,
            "XDG_RUNTIME_DIR": runtime,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "LANG": "C.UTF-8"
        ]
        if let display { environment["DISPLAY"] = display }
        if let bus { environment["DBUS_SESSION_BUS_ADDRESS"] = bus }
        return environment
    }

    /// Deletes everything the user had, as a factory reset does, and recreates the empty directories.
    func wipe() throws(LabError) {
        do {
            for entry in try FileManager.default.contentsOfDirectory(atPath: root) {
                try FileManager.default.removeItem(atPath: root + "/" + entry)
            }
        } catch {
            throw LabError("cannot wipe \(root): \(error.localizedDescription)")
        }
        try create()
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
