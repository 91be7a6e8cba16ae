import DesktopSandbox
import Foundation

/// Real Flatpak sandboxes for tests, without a network: apps whose program is
/// the built `openudid`, on a runtime made from this machine's own libraries,
/// run with the real `flatpak run`.
///
/// The runtime (`org.test.Platform//1`: the C and Swift libraries `openudid`
/// and libsecret load, the dynamic loader, `ldconfig` and `/bin/sh`) is
/// exported once into an OSTree repository under `.build`, named by a hash of
/// the files it holds, so every test of a run, and every later run on the
/// same libraries, installs that one. Each test's home then has a Flatpak user
/// installation of its own (`$XDG_DATA_HOME/flatpak`), with the runtime and
/// its apps, gone with the home.
public final class FlatpakApps: Sendable {
    private let repository: String
    private let build: String
    private let environment: [String: String]

    /// Why Flatpak cannot run sandboxes here, or nil when it can.
    private static let unavailable: String? = {
        do {
            _ = try DesktopSandbox.Tools.require("flatpak", package: "flatpak")
            // Flatpak's own sandboxing, as it calls bwrap: a machine without user namespaces fails here.
            let probe = try DesktopSandbox.runCommand(
                try DesktopSandbox.Tools.require("bwrap", package: "bubblewrap"),
                ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
                environment: ["PATH": "/usr/bin:/bin"])
            return probe.status == 0 ? nil : "bubblewrap cannot make a sandbox: \(probe.standardError)"
        } catch {
            return "\(error)"
        }
    }()

    /// The runtime's OSTree repository, made once.
    private static let runtime: Result<String, HarnessError> = Result { () throws(HarnessError) in try makeRuntime() }

    /// Installs the runtime into `home`'s Flatpak user installation. Where
    /// Flatpak cannot run sandboxes the test is skipped, saying why.
    public init(home: PrivateHome) throws {
        let started = ContinuousClock.now
        let runtime = try Self.runtimeOrSkip()
        environment = home.environment()
        build = home.root.path + "/flatpak-build"
        repository = build + "/repo"
        try Self.flatpak(["--user", "remote-add", "--no-gpg-verify", "runtime", runtime], environment)
        try Self.flatpak(["--user", "install", "-y", "--noninteractive", "runtime", "org.test.Platform//1"], environment)
        print("Flatpak: the runtime was ready \(started.duration(to: .now)) after a test asked for it")
    }

    private static func runtimeOrSkip() throws -> String {
        if let unavailable { try skip("Flatpak cannot run sandboxes here: \(unavailable)") }
        return try runtime.get()
    }

    /// Builds a Flatpak app `id` (such as `com.acme.Notes`) whose command is the
    /// built `openudid`, and installs it.
    public func install(_ id: String) throws {
        let directory = build + "/" + id
        try Self.flatpak(["build-init", directory, id, "org.test.Platform", "org.test.Platform", "1"], environment)
        try FileManager.default.createDirectory(atPath: directory + "/files/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Tools.product("openudid").path, toPath: directory + "/files/bin/openudid")
        try Self.flatpak(["build-finish", directory, "--command=openudid"], environment)
        try Self.flatpak(["build-export", repository, directory], environment)
        try Self.flatpak(["--user", "remote-add", "--if-not-exists", "--no-gpg-verify", "apps", repository], environment)
        try Self.flatpak(["--user", "install", "-y", "--noninteractive", "apps", id], environment)
    }

    /// The command that runs the app `id` in its sandbox with `permissions`
    /// (`flatpak run` options such as `--socket=x11`): a `TestSession`'s `program`.
    ///
    /// `flatpak run` passes no signal on to the sandbox, whose bwrap ignores
    /// SIGTERM: without `--die-with-parent` a stopped app would outlive its test.
    public func program(_ id: String, _ permissions: [String] = []) throws -> [String] {
        [try Tools.find("flatpak").path, "run", "--die-with-parent"] + permissions + [id]
    }

    @discardableResult
    private static func flatpak(_ arguments: [String], _ environment: [String: String]) throws(HarnessError) -> String {
        let result = try DesktopSandbox.runCommand(
            try DesktopSandbox.Tools.require("flatpak", package: "flatpak"), arguments, environment: environment, timeout: 120)
        guard result.status == 0 else {
            throw HarnessError("flatpak \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.standardError)")
        }
        return result.standardOutput
    }

    // MARK: - The runtime

    /// Exports the runtime once, or finds it exported by an earlier run.
    private static func makeRuntime() throws(HarnessError) -> String {
        let files = try runtimeFiles()
        let version = try DesktopSandbox.runCommand(
            try DesktopSandbox.Tools.require("flatpak", package: "flatpak"), ["--version"], environment: ["PATH": "/usr/bin:/bin"])
        var description = version.standardOutput
        for (source, destination) in files.sorted(by: { $0.key < $1.key }) {
            var status = stat()
            guard stat(source, &status) == 0 else { throw HarnessError("cannot read \(source) for the Flatpak runtime") }
            description += "\(source) \(destination) \(status.st_size) \(status.st_mtim.tv_sec)\n"
        }
        let cache = Tools.productsDirectory.path + "/flatpak-runtime"
        let repository = cache + "/" + String(fnv1a(description), radix: 16)
        if FileManager.default.fileExists(atPath: repository) { return repository }

        let started = ContinuousClock.now
        let scratch = try makePrivateDirectory(prefix: "openudid-flatpak-runtime")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let tree = scratch + "/runtime"
        do {
            for (source, destination) in files {
                let target = tree + "/" + destination
                try FileManager.default.createDirectory(
                    atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: URL(fileURLWithPath: source).resolvingSymlinksInPath().path, toPath: target)
            }
            for directory in ["files", "usr/etc"] {
                try FileManager.default.createDirectory(atPath: tree + "/" + directory, withIntermediateDirectories: true)
            }
            try "/usr/lib/\(multiarch)\n".write(toFile: tree + "/usr/etc/ld.so.conf", atomically: true, encoding: .utf8)
            let metadata = "[Runtime]\nname=org.test.Platform\nruntime=org.test.Platform/x86_64/1\nsdk=org.test.Platform/x86_64/1\n"
            try metadata.write(toFile: tree + "/metadata", atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        } catch {
            throw HarnessError("cannot lay out the Flatpak runtime in \(tree): \(error.localizedDescription)")
        }
        // Exported beside its final name, then renamed: a run that stops half-way leaves no repository that looks whole.
        let exported = cache + "/partial-" + UUID().uuidString
        try flatpak(["build-export", "--runtime", exported, tree, "1"], ["PATH": "/usr/bin:/bin", "HOME": scratch])
        if rename(exported, repository) != 0 { try? FileManager.default.removeItem(atPath: exported) }
        print("Flatpak: the runtime was exported in \(started.duration(to: .now)) to \(repository)")
        return repository
    }

    /// Debian's directory of the host's libraries, such as `x86_64-linux-gnu`.
    private static let multiarch: String = {
        let libc = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8))?.split(separator: "\n")
            .compactMap { $0.split(separator: " ").last }.first { $0.hasSuffix("/libc.so.6") }
        return libc.map { (String($0) as NSString).deletingLastPathComponent }.map { ($0 as NSString).lastPathComponent }
            ?? "x86_64-linux-gnu"
    }()

    /// What the runtime holds: each host file and where it goes in the runtime's tree.
    ///
    /// Every library `openudid` and libsecret load (Swift's included) goes to
    /// `usr/lib/<multiarch>`, the loader to its own path under `usr`, with
    /// `ldconfig` and dash as `/bin/sh`, which Flatpak needs to start an app.
    private static func runtimeFiles() throws(HarnessError) -> [String: String] {
        let libsecret = try DesktopSandbox.runCommand("/sbin/ldconfig", ["-p"], environment: ["PATH": "/usr/bin:/bin"])
            .standardOutput.split(separator: "\n").first { $0.contains("libsecret-1.so.0 ") && $0.contains("x86-64") }
            .flatMap { $0.components(separatedBy: " => ").last }
        guard let libsecret else {
            throw HarnessError("libsecret-1.so.0 is not installed; apt-get install libsecret-1-0 (scripts/bootstrap does)")
        }
        var files = [libsecret: "usr/lib/\(multiarch)/libsecret-1.so.0", "/sbin/ldconfig": "usr/sbin/ldconfig", "/bin/dash": "usr/bin/sh"]
        for program in [Tools.product("openudid").path, libsecret] {
            let ldd = try DesktopSandbox.runCommand(
                try DesktopSandbox.Tools.require("ldd", package: "libc-bin"), [program], environment: ["PATH": "/usr/bin:/bin"])
            for line in ldd.standardOutput.split(separator: "\n") {
                let words = line.split(whereSeparator: \.isWhitespace).map(String.init)
                if words.count >= 3, words[1] == "=>", words[2].hasPrefix("/") {
                    files[words[2]] = "usr/lib/\(multiarch)/\(words[0])"
                } else if let loader = words.first, loader.hasPrefix("/"), loader.contains("ld-linux") {
                    files[loader] = "usr" + loader
                }
            }
        }
        return files
    }

    /// FNV-1a, 64 bits: a name for the runtime's files that stays the same from one run to the next.
    private static func fnv1a(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
