import Foundation

/// A private HOME with its own XDG directories, removed when the value goes away.
public final class PrivateHome: @unchecked Sendable {
    // Immutable after init.
    /// The root directory (used as HOME).
    public let root: URL

    /// Creates a fresh temporary home with `XDG_DATA_HOME`, `XDG_CONFIG_HOME`,
    /// `XDG_CACHE_HOME` and `XDG_RUNTIME_DIR` inside it.
    public init() throws {
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("openudid-test-\(UUID().uuidString.prefix(8))")
        root = base
        for sub in ["data", "config", "cache", "runtime"] {
            try FileManager.default.createDirectory(
                at: base.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
    }

    /// `$XDG_DATA_HOME`.
    public var dataHome: URL { root.appendingPathComponent("data") }
    /// `$XDG_RUNTIME_DIR`.
    public var runtimeDir: URL { root.appendingPathComponent("runtime") }

    /// The environment a child process of this home gets: these directories, PATH, and `extra`.
    public func environment(display: String? = nil, extra: [String: String] = [:]) -> [String: String] {
        var env: [String: String] = [
            "HOME": root.path,
            "XDG_DATA_HOME": dataHome.path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
            "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
            "XDG_RUNTIME_DIR": runtimeDir.path,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        ]
        if let display { env["DISPLAY"] = display }
        for (key, value) in extra { env[key] = value }
        return env
    }

    deinit { try? FileManager.default.removeItem(at: root) }
}
