import DesktopSandbox
import Foundation

// The tests' private desktop is DesktopSandbox's; these are the names the tests speak.

/// A failure of the test harness itself (a tool missing, a server that would not start).
public typealias HarnessError = SandboxError
/// A separate process started by a test, with its standard output read line by line.
public typealias ChildProcess = DesktopSandbox.ChildProcess
/// The result of running a command to completion.
public typealias CommandResult = CommandOutput
/// A private Xvfb on a display number of its own, stopped when the test process goes.
public typealias PrivateXServer = XServer

/// Runs `executable` to completion and captures its output.
public func runCommand(
    _ executable: URL, _ arguments: [String], environment: [String: String], input: String? = nil, timeout: TimeInterval = 30
) throws -> CommandResult {
    try DesktopSandbox.runCommand(
        executable.path, arguments, environment: environment, input: input.map { Data($0.utf8) }, timeout: timeout)
}

/// Finds the tools and built products the tests run.
public enum Tools {
    /// Looks `name` up on PATH (and the usual system directories).
    public static func find(_ name: String) throws -> URL {
        guard let path = DesktopSandbox.Tools.find(name) else { throw HarnessError("\(name) is not installed; run scripts/bootstrap") }
        return URL(fileURLWithPath: path)
    }

    /// The directory that holds the package's built executables (beside the test bundle).
    public static var productsDirectory: URL { URL(fileURLWithPath: DesktopSandbox.Tools.productsDirectory) }

    /// A built executable of this package, by product name.
    public static func product(_ name: String) -> URL { productsDirectory.appendingPathComponent(name) }
}

/// A private HOME with its own XDG directories, removed when the value goes away.
public final class PrivateHome: Sendable {
    /// The home's directories.
    public let home: Home

    /// Creates a fresh temporary home with `XDG_DATA_HOME`, `XDG_CONFIG_HOME`,
    /// `XDG_CACHE_HOME` and `XDG_RUNTIME_DIR` inside it.
    public init() throws {
        home = try Home(root: makePrivateDirectory(prefix: "openudid-test"))
    }

    /// The root directory (used as HOME).
    public var root: URL { URL(fileURLWithPath: home.root) }
    /// `$XDG_DATA_HOME`.
    public var dataHome: URL { URL(fileURLWithPath: home.data) }
    /// `$XDG_RUNTIME_DIR`.
    public var runtimeDir: URL { URL(fileURLWithPath: home.runtime) }

    /// The environment a child process of this home gets: these directories, PATH, and `extra`.
    public func environment(display: String? = nil, extra: [String: String] = [:]) -> [String: String] {
        home.environment(display: display, extra: extra)
    }

    deinit { try? FileManager.default.removeItem(atPath: home.root) }
}

/// One private Xvfb shared by the suites that do not kill it; every test has its own HOME and namespace.
public enum SharedDisplay {
    /// The server, or why it could not start (the suites using it need `.requiresXvfb`).
    public static let server = Result { try PrivateXServer() }
    /// Its display, or a name no server has, which makes every test on it fail saying why.
    public static var display: String {
        switch server {
        case .success(let server): server.display
        case .failure(let error): ":no-private-xvfb (\(error))"
        }
    }
}
