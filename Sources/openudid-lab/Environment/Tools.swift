import Foundation

/// A failure of the lab itself: a tool missing, a server that would not start, a
/// process that did not answer. Its text says what happened and what to do.
struct LabError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Finds the programs the lab runs.
enum Tools {
    /// The directory of the running executable, where SwiftPM also puts the `openudid` tool.
    static var productsDirectory: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().path
    }

    /// The `openudid` tool built beside the lab.
    static func openudid() throws(LabError) -> String {
        let path = productsDirectory + "/openudid"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw LabError(
                """
                cannot find the openudid tool at \(path): the lab runs it beside its own executable; \
                build it first with `swift build` (or `swift build -c release` for a release lab)
                """)
        }
        return path
    }

    /// `name` looked up on PATH and in the usual system directories, or nil.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// `name` looked up like `find`, or an error that says how to install it.
    static func require(_ name: String, package: String) throws(LabError) -> String {
        guard let path = find(name) else {
            throw LabError("\(name) is not installed; install it with `apt-get install \(package)` (scripts/bootstrap does)")
        }
        return path
    }
}
