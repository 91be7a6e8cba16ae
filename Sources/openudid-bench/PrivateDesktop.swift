import Foundation
import OpenUDIDKit
import ProcessSupport

/// Where the benchmark's tools are: the package's executables beside this one,
/// and the system's on PATH.
struct Tools {
    /// The directory of this executable, where `swift build` puts its siblings.
    let productsDirectory: String
    /// `openudid`, the command-line tool.
    let openudid: String
    /// `xselection-helper`, the owner and plain-Xlib requestor.
    let helper: String
    /// This executable, which also acts as the small host program of the footprint figure.
    let bench: String

    init() throws {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        bench = exe
        productsDirectory = (exe as NSString).deletingLastPathComponent
        openudid = productsDirectory + "/openudid"
        helper = productsDirectory + "/xselection-helper"
        for path in [openudid, helper] where !FileManager.default.isExecutableFile(atPath: path) {
            throw BenchError(
                """
                \((path as NSString).lastPathComponent) is missing from \(productsDirectory); \
                build the whole package (swift build -c release) so it sits beside openudid-bench
                """)
        }
    }

    /// `name` on PATH or in the usual system directories, or nil.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin"] {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Like `find`, but a missing tool is an error that says how to get it.
    static func require(_ name: String, package: String) throws -> String {
        guard let path = find(name) else {
            throw BenchError("\(name) is not installed; install the Debian package \(package) (scripts/bootstrap does)")
        }
        return path
    }
}

/// A scratch directory for the run, removed at the end.
final class Scratch {
    let path: String

    init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("openudid-bench-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw BenchError("cannot create a temporary directory: \(String(cString: strerror(errno)))") }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        Cleanup.created(path)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
        Cleanup.removed(path)
    }
}

/// A private Xvfb on a display number it picks itself (-displayfd), so the
/// benchmark never touches the user's desktop and never collides with tests.
final class PrivateXServer {
    let display: String
    private let child: Child
    /// The server's process id, for its CPU time.
    var pid: pid_t { child.pid }

    init(scratch: Scratch) throws {
        let xvfb = try Tools.require("Xvfb", package: "xvfb")
        child = try Child(
            xvfb, ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "800x600x24", "-noreset"],
            environment: ["PATH": "/usr/bin:/bin"], scratch: scratch.path)
        guard let line = child.nextLine(timeout: .seconds(10)), let number = Int(line.trimmingCharacters(in: .whitespaces)) else {
            throw BenchError("Xvfb reported no display number: \(child.standardError)")
        }
        display = ":\(number)"
    }

    deinit { child.stop(grace: .seconds(1)) }
}

/// A private HOME with its own XDG directories.
struct PrivateHome {
    let root: String

    init(scratch: Scratch, name: String) throws {
        root = scratch.path + "/" + name
        for sub in ["data", "config", "cache", "runtime"] {
            try FileManager.default.createDirectory(
                atPath: root + "/" + sub, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
    }

    /// The environment of a process of this home on `display`, plus `extra`.
    func environment(display: String?, extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "HOME": root,
            "XDG_DATA_HOME": root + "/data",
            "XDG_CONFIG_HOME": root + "/config",
            "XDG_CACHE_HOME": root + "/cache",
            "XDG_RUNTIME_DIR": root + "/runtime",
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        ]
        if let display { environment["DISPLAY"] = display }
        environment.merge(extra) { $1 }
        return environment
    }
}

/// A private session bus with a gnome-keyring Secret Service on it, its login
/// keyring created and unlocked, in a HOME of its own.
///
/// The bus gets a configuration with an empty service directory, so nothing is
/// activated behind the benchmark's back and the user's keyring is never seen.
final class PrivateKeyring {
    let home: PrivateHome
    let address: String
    private let bus: Child
    private let keyring: Child

    init(scratch: Scratch) throws {
        let dbus = try Tools.require("dbus-daemon", package: "dbus")
        let daemon = try Tools.require("gnome-keyring-daemon", package: "gnome-keyring")
        home = try PrivateHome(scratch: scratch, name: "keyring-home")
        let services = home.root + "/dbus-services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        let config = home.root + "/session-bus.conf"
        try privateSessionBusConfiguration(socketDirectory: home.root + "/runtime", serviceDirectory: services)
            .write(toFile: config, atomically: true, encoding: .utf8)
        bus = try Child(
            dbus, ["--config-file=\(config)", "--print-address=1", "--nofork"],
            environment: home.environment(display: nil), scratch: scratch.path)
        guard let line = bus.nextLine(timeout: .seconds(10)), line.hasPrefix("unix:") else {
            throw BenchError("dbus-daemon printed no address: \(bus.standardError)")
        }
        address = line
        // The password goes in without a newline, which would become part of it.
        keyring = try Child(
            daemon, ["--unlock", "--foreground", "--components=secrets"],
            environment: home.environment(display: nil, extra: ["DBUS_SESSION_BUS_ADDRESS": address]),
            input: Array("bench".utf8), captureOutput: false, scratch: scratch.path)
        let deadline = ContinuousClock.now + .seconds(10)
        while !SecretServiceMirror.probe(busAddress: address).canHoldMirror {
            guard ContinuousClock.now < deadline else {
                throw BenchError("gnome-keyring did not offer an unlocked login keyring within 10 s: \(keyring.standardError)")
            }
            usleep(50_000)
        }
    }

    deinit {
        keyring.stop(grace: .seconds(1))
        bus.stop(grace: .seconds(1))
    }
}
