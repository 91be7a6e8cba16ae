import Foundation
import TestSupport

/// libopenudid installed by `scripts/install` into a temporary prefix, once
/// per test process, from the products this test run built; and the
/// programs of `Programs/` compiled against it, each once.
final class Installation: Sendable {
    /// The package's root directory.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The test programs' sources.
    static let programs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Programs")

    /// The installation every test shares.
    static let shared = Result { try Installation() }

    /// The install prefix.
    let prefix: URL
    /// Where compiled test programs go.
    let binaries: URL

    private init() throws {
        let base = FileManager.default.temporaryDirectory
        Self.removeStale(in: base)
        let root = base.appendingPathComponent("openudid-install-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        prefix = root.appendingPathComponent("prefix")
        binaries = root.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: binaries, withIntermediateDirectories: true)
        let result = try Self.install(["--prefix", prefix.path])
        guard result.status == 0 else {
            throw HarnessError("scripts/install failed (\(result.status)): \(result.standardError)")
        }
    }

    /// Runs `scripts/install` with the products of this test run and `arguments`.
    static func install(_ arguments: [String], extra: [String: String] = [:]) throws -> CommandResult {
        var environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        environment.merge(extra) { $1 }
        return try runCommand(
            Tools.find("bash"),
            [packageRoot.appendingPathComponent("scripts/install").path, "--products", Tools.productsDirectory.path] + arguments,
            environment: environment, timeout: 120)
    }

    /// Earlier runs' installations whose process is gone (each holds a copy of the library).
    private static func removeStale(in base: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? []
        for name in names where name.hasPrefix("openudid-install-") {
            guard let pid = Int32(name.dropFirst("openudid-install-".count)), kill(pid, 0) != 0 else { continue }
            try? FileManager.default.removeItem(at: base.appendingPathComponent(name))
        }
    }

    /// The environment that finds the installation: pkg-config's path, and the loader's.
    func environment(_ base: [String: String] = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]) -> [String:
        String]
    {
        var environment = base
        environment["PKG_CONFIG_PATH"] = prefix.appendingPathComponent("lib/pkgconfig").path
        environment["LD_LIBRARY_PATH"] = prefix.appendingPathComponent("lib").path
        return environment
    }

    /// `pkg-config ARGUMENTS openudid`, split into words.
    func pkgConfig(_ arguments: [String]) throws -> [String] {
        let result = try runCommand(Tools.find("pkg-config"), arguments + ["openudid"], environment: environment())
        guard result.status == 0 else { throw HarnessError("pkg-config \(arguments) openudid failed: \(result.standardError)") }
        return result.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// Compiles `source` (in Programs/) with `compiler` and `flags`, as
    /// `compiler flags source -o out $(pkg-config --cflags --libs openudid)`.
    func compile(_ source: String, with compiler: String, flags: [String], output: String) throws -> CommandResult {
        let out = binaries.appendingPathComponent(output)
        let arguments =
            flags + [Self.programs.appendingPathComponent(source).path, "-o", out.path] + (try pkgConfig(["--cflags", "--libs"]))
        return try runCommand(Tools.find(compiler), arguments, environment: environment(), timeout: 120)
    }

    /// The warnings every program is compiled with; a warning fails the build.
    static let strictC = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]
    static let strictCxx = ["-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]

    /// The C client, the C++ client, the bad-input program and the threaded host, compiled once.
    static let client = Result { try compiled("client.c", "cc", strictC, "client") }
    static let clientCxx = Result { try compiled("client.cpp", "c++", strictCxx, "client-cxx") }
    static let badInput = Result { try compiled("bad-input.c", "cc", strictC, "bad-input") }
    /// The stale-handle program, plain and under AddressSanitizer.
    static let handles = Result { try compiled("handles.c", "cc", strictC, "handles") }
    static let handlesUnderASan = Result {
        try compiled("handles.c", "cc", strictC + ["-fsanitize=address", "-fno-omit-frame-pointer", "-g"], "handles-asan")
    }
    /// The header's promises, compiled as C99, C11 and C++11.
    static let header = Result {
        [
            try compiled("header.c", "cc", strictC, "header-c99"),
            try compiled("header.c", "cc", ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror"], "header-c11"),
            try compiled("header.c", "c++", ["-x", "c++"] + strictCxx, "header-c++11")
        ]
    }
    /// The program whose callback blocks while it closes its handle.
    static let blockingClose = Result { try compiled("blocking-close.c", "cc", strictC + ["-pthread"], "blocking-close") }
    static let threadedHost = Result { try compiled("threaded-host.c", "cc", strictC + ["-pthread"], "threaded-host") }
    /// The host with a participating handle per slot.
    static let manyHandles = Result { try compiled("many-handles.c", "cc", strictC, "many-handles") }

    private static func compiled(_ source: String, _ compiler: String, _ flags: [String], _ output: String) throws -> URL {
        let installation = try shared.get()
        let result = try installation.compile(source, with: compiler, flags: flags, output: output)
        guard result.status == 0 else {
            throw HarnessError("\(compiler) \(source) failed (\(result.status)): \(result.standardError)\(result.standardOutput)")
        }
        return installation.binaries.appendingPathComponent(output)
    }

    /// The functions openudid.h declares, read from the header itself.
    static let declaredFunctions: [String] = {
        let header = (try? String(contentsOf: packageRoot.appendingPathComponent("include/openudid.h"), encoding: .utf8)) ?? ""
        let pattern = try! NSRegularExpression(pattern: #"^[a-z][a-z_ ]*[ *]+(openudid_[a-z_]+)\("#, options: [.anchorsMatchLines])
        let range = NSRange(header.startIndex..., in: header)
        return pattern.matches(in: header, range: range).compactMap { match in
            Range(match.range(at: 1), in: header).map { String(header[$0]) }
        }
    }()
}
