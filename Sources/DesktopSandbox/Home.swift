import Foundation

/// A private user account: a HOME with its own XDG directories, so nothing run
/// in it reaches the real user's files, keyring or desktop.
public struct Home: Sendable {
    /// The HOME directory.
    public let root: String

    /// `XDG_DATA_HOME`, where apps keep their data (and the file slots and file mirror live).
    public var data: String { root + "/.local/share" }
    /// `XDG_CONFIG_HOME`, where the user-wide opt-out lives.
    public var config: String { root + "/.config" }
    /// `XDG_CACHE_HOME`.
    public var cache: String { root + "/.cache" }
    /// `XDG_RUNTIME_DIR`: private, so no real session bus is ever found through it.
    public var runtime: String { root + "/.run" }

    /// Creates the directories of a home at `root` (mode 0700, with their parents).
    public init(root: String) throws(SandboxError) {
        self.root = root
        try create()
    }

    private func create() throws(SandboxError) {
        for directory in [data, config, cache, runtime] { try makeDirectory(directory) }
    }

    /// The environment of a process of this user: the home, the X display and
    /// session bus given, PATH, and `extra`; nothing else of this process's environment leaks in.
    public func environment(display: String? = nil, bus: String? = nil, extra: [String: String] = [:]) -> [String: String] {
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
        environment.merge(extra) { $1 }
        return environment
    }

    /// Deletes everything the user had, as a factory reset does, and recreates the empty directories.
    public func wipe() throws(SandboxError) {
        do {
            for entry in try FileManager.default.contentsOfDirectory(atPath: root) {
                try FileManager.default.removeItem(atPath: root + "/" + entry)
            }
        } catch {
            throw SandboxError("cannot wipe \(root): \(error.localizedDescription)")
        }
        try create()
    }
}

/// Creates `path` and its parents with mode 0700.
public func makeDirectory(_ path: String) throws(SandboxError) {
    do {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
        throw SandboxError("cannot create \(path): \(error.localizedDescription)")
    }
}

/// Creates a fresh, empty directory that only this user can enter, in the system's temporary directory.
///
/// - Parameter prefix: The start of its name, such as `openudid-lab`.
/// - Returns: Its absolute path.
public func makePrivateDirectory(prefix: String) throws(SandboxError) -> String {
    var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw .system("cannot create a private directory in \(NSTemporaryDirectory()) (check TMPDIR)")
    }
    return String(cString: made)
}
