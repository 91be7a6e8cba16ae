import Foundation

/// Finds the programs a sandbox runs: the package's own built products, and the
/// system's tools on PATH.
public enum Tools {
    /// The directory that holds the package's built executables: the one of the
    /// running program, which SwiftPM also uses for its tests.
    public static var productsDirectory: String {
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        // On some layouts a test binary sits inside a `.xctest` bundle.
        while directory.path.hasSuffix(".xctest") || ["Contents", "MacOS"].contains(directory.lastPathComponent) {
            directory = directory.deletingLastPathComponent()
        }
        return directory.path
    }

    /// The path of `name`, an executable built from this package, beside the running program.
    ///
    /// - Throws: `SandboxError` telling to build the package when it is not there.
    public static func product(_ name: String) throws(SandboxError) -> String {
        let path = productsDirectory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw SandboxError(
                "\(name) is missing from \(productsDirectory); build the whole package (`swift build`, or `swift build -c release`) first")
        }
        return path
    }

    /// `name` looked up on PATH and in the usual system directories, or nil.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// `name` looked up like `find`, or an error that says which Debian package to install.
    public static func require(_ name: String, package: String) throws(SandboxError) -> String {
        guard let path = find(name) else {
            throw SandboxError("\(name) is not installed; install it with `apt-get install \(package)` (scripts/bootstrap does)")
        }
        return path
    }
}

/// Checks `condition` every `interval` seconds until it holds or `timeout` seconds have passed.
///
/// For waiting on something another process does: the bound is generous, and
/// the wait ends as soon as the condition holds, so a slow machine makes the
/// wait longer, never the result different.
/// - Returns: Whether the condition held in time.
public func waitUntil(timeout: TimeInterval, interval: TimeInterval = 0.01, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        guard Date() < deadline else { return false }
        usleep(useconds_t(interval * 1_000_000))
    }
}
