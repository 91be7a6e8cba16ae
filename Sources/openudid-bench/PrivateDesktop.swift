import DesktopSandbox
import Foundation
import OpenUDIDKit

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
        bench = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        productsDirectory = DesktopSandbox.Tools.productsDirectory
        openudid = try DesktopSandbox.Tools.product("openudid")
        helper = try DesktopSandbox.Tools.product("xselection-helper")
    }

    /// `name` on PATH or in the usual system directories, or nil.
    static func find(_ name: String) -> String? { DesktopSandbox.Tools.find(name) }
}

/// A scratch directory for the run, removed at the end.
final class Scratch {
    let path: String

    init() throws {
        path = try makePrivateDirectory(prefix: "openudid-bench")
        Cleanup.created(path)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
        Cleanup.removed(path)
    }
}

/// A private Xvfb on a display number it picks itself (-displayfd), so the
/// benchmark never touches the user's desktop and never collides with tests.
typealias PrivateXServer = XServer

extension XServer {
    /// Starts a server for a run of the benchmark.
    convenience init(scratch: Scratch) throws(BenchError) { try self.init(screen: "800x600x24") }
}

/// A private HOME with its own XDG directories.
typealias PrivateHome = Home

extension Home {
    /// The home `name` in the run's scratch directory.
    init(scratch: Scratch, name: String) throws(BenchError) { try self.init(root: scratch.path + "/" + name) }
}

/// A private session bus with a gnome-keyring Secret Service on it, its login
/// keyring created and unlocked, in a HOME of its own.
final class PrivateKeyring {
    private let bus: SessionBus
    /// The bus address.
    var address: String { bus.address }

    init(scratch: Scratch) throws {
        bus = try SessionBus(home: Home(scratch: scratch, name: "keyring-home"))
        // The password goes in without a newline, which would become part of it.
        try bus.startKeyring(password: "bench")
        guard waitUntil(timeout: 10, interval: 0.05, { SecretServiceMirror.probe(busAddress: bus.address).canHoldMirror }) else {
            throw BenchError("gnome-keyring did not offer an unlocked login keyring within 10 s: \(bus.keyringLog)")
        }
    }
}
