import FoundationEssentials
import Glibc
import InputGate

/// Where OpenUDID keeps its files, following the XDG Base Directory specification.
///
/// | What | Path |
/// |---|---|
/// | file slots | `<data>/openudid/slots/<app-id>.json` |
/// | vendor mirrors | `<data>/openudid/vendors/<vendor>.json` |
/// | the lock held while generating a new identifier | `<data>/openudid/generate.lock` |
/// | the lock that erasing commands hold against apps' writes | `<data>/openudid/erase.lock` |
/// | the user's reset generation | `<data>/openudid/reset` |
/// | an app's local cache | `<data>/<app-id>/openudid.json` |
/// | user-wide opt-out marker | `<config>/openudid/opt-out` |
///
/// `<data>` is `$XDG_DATA_HOME`, or `$HOME/.local/share`; `<config>` is
/// `$XDG_CONFIG_HOME`, or `$HOME/.config`. A namespace moves the shared
/// directories to `<data>/openudid/ns/<namespace>/` and names the local cache
/// `openudid-<namespace>.json`, so that experiments never mix with real use.
/// The opt-out marker is never namespaced: a user who opts out means it everywhere.
///
/// In a Flatpak sandbox `$XDG_DATA_HOME` is the app's own (`~/.var/app/<id>/data`),
/// which no other app reads. The shared `openudid/` directory is then the
/// host's (`$HOST_XDG_DATA_HOME`, or `$HOME/.local/share`) where the sandbox
/// was given it (`--filesystem=xdg-data/openudid`, which binds it in: it is a
/// mount point in the sandbox), and the app's own otherwise,
/// where what it keeps is private: `filesShared` says which (docs/PROTOCOL.md
/// §4). The opt-out marker likewise comes from the host's config directory
/// where `--filesystem=xdg-config/openudid:ro` shows it.
package struct StoragePaths: Sendable, Hashable {
    /// The XDG data home, without a trailing slash: where the app's own files
    /// (its local cache, its consent) live.
    package let dataHome: String
    /// The data home that holds the shared `openudid/` directory: `dataHome`,
    /// or the host's in a sandbox that may see it.
    package let sharedHome: String
    /// Whether every app of the user reads the shared files; false for a
    /// sandbox's own directory, whose files are the app's own evidence alone.
    package let filesShared: Bool
    /// The config home of the user-wide opt-out marker: `configHome`, or the
    /// host's in a sandbox that may see it.
    private let sharedConfigHome: String
    /// The XDG config home, without a trailing slash.
    package let configHome: String
    /// The namespace that separates an experiment's files, or `nil` for real use.
    package let namespace: String?

    /// Works out the directories from an environment.
    ///
    /// A relative or empty `XDG_DATA_HOME` or `XDG_CONFIG_HOME` is ignored,
    /// as the XDG specification requires.
    ///
    /// - Parameters:
    ///   - environment: The variables to read; by default this process's.
    ///   - namespace: 1 to 64 characters from `A-Z a-z 0-9 _ -`, not starting with `-`; `nil` for real use.
    /// - Throws: `StoragePathsError` when no absolute home can be found or the namespace is invalid.
    package init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        namespace: String? = nil
    ) throws(StoragePathsError) {
        if let namespace, !Self.isValidNamespace(namespace) {
            throw StoragePathsError(.invalidNamespace(namespace))
        }
        func absolute(_ key: String) -> String? {
            guard let value = environment[key], value.hasPrefix("/") else { return nil }
            return Self.trimmingTrailingSlashes(value)
        }
        func home() throws(StoragePathsError) -> String {
            guard let home = environment["HOME"], !home.isEmpty else { throw StoragePathsError(.noHome) }
            guard home.hasPrefix("/") else { throw StoragePathsError(.relativeHome(home)) }
            return Self.trimmingTrailingSlashes(home)
        }
        if let data = absolute("XDG_DATA_HOME") {
            dataHome = data
        } else {
            dataHome = Self.joined(try home(), ".local/share")
        }
        if let config = absolute("XDG_CONFIG_HOME") {
            configHome = config
        } else {
            configHome = Self.joined(try home(), ".config")
        }
        self.namespace = namespace
        // A sandbox sees the host's directories only where it was given them.
        let sandboxed = SessionEnvironment.flatpakApp(environment) != nil
        let userHome = try? home()
        let hostData = absolute("HOST_XDG_DATA_HOME") ?? userHome.map { Self.joined($0, ".local/share") } ?? dataHome
        let hostConfig = absolute("HOST_XDG_CONFIG_HOME") ?? userHome.map { Self.joined($0, ".config") } ?? configHome
        let mounts = sandboxed ? Self.mountPoints() : []
        let seesHostData = mounts.contains(Self.canonical(Self.joined(hostData, "openudid")))
        sharedHome = seesHostData ? hostData : dataHome
        let boundHere = mounts.contains(Self.canonical(Self.joined(dataHome, "openudid")))
        filesShared = !sandboxed || seesHostData || hostData == dataHome || boundHere
        let seesHostConfig = mounts.contains(Self.canonical(Self.joined(hostConfig, "openudid")))
        sharedConfigHome = seesHostConfig ? hostConfig : configHome
    }

    /// The mount points of this process's mount namespace, from
    /// `/proc/self/mountinfo` (read through the file gate). Flatpak gives a
    /// sandbox a host directory by binding it in at the host's path: such a
    /// directory is a mount point there, while one of the sandbox's own is not.
    static func mountPoints(_ mountinfo: String = "/proc/self/mountinfo") -> Set<String> {
        guard case .success(let bytes?) = FileGate.read(mountinfo, limit: 4 << 20, links: .followed) else { return [] }
        var points: Set<String> = []
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            // "id parent major:minor root mount-point options ...": the fifth field,
            // its space, tab, line feed and backslash written as octal escapes.
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5)
            guard fields.count > 4 else { continue }
            points.insert(unescaped(fields[4]))
        }
        return points
    }

    private static func unescaped(_ field: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        var index = field.startIndex
        while index < field.endIndex {
            if field[index] == UInt8(ascii: "\\"), index + 3 < field.endIndex,
                let value = UInt8(String(decoding: field[(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(field[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `path` with every link resolved, as mountinfo names it; `path` itself when it does not exist.
    private static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `<data>/openudid`, or its namespace directory.
    private var sharedRoot: String {
        let root = Self.joined(sharedHome, "openudid")
        guard let namespace else { return root }
        return Self.joined(root, "ns/\(namespace)")
    }

    /// The directory of file slots, one `<app-id>.json` per app.
    package var slotsDirectory: String { Self.joined(sharedRoot, "slots") }

    /// The directory of file vendor mirrors, one `<vendor>.json` per vendor.
    package var vendorsDirectory: String { Self.joined(sharedRoot, "vendors") }

    /// The lock file apps hold while they generate a new identifier, so that
    /// apps starting at once from nothing pick one identifier, not one each.
    package var generationLock: String { Self.joined(sharedRoot, "generate.lock") }

    /// The lock file an app holds, shared, while it writes its own copies, and an
    /// erasing command holds exclusively while it erases (`ErasureLock`).
    package var erasureLock: String { Self.joined(sharedRoot, "erase.lock") }

    /// The file that holds the user's reset generation (`ResetMarker`).
    package var resetMarker: String { Self.joined(sharedRoot, "reset") }

    /// The file that holds the key of the user's latest reset (`ResetKey`).
    package var resetKey: String { Self.joined(sharedRoot, "reset-key") }

    /// The local cache file of `app`.
    ///
    /// - Parameter app: The app whose cache it is.
    /// - Returns: `<data>/<app-id>/openudid.json`, or `openudid-<namespace>.json` in a namespace.
    package func localCacheFile(for app: AppIdentity) -> String {
        Self.joined(Self.joined(dataHome, app.id), localCacheName)
    }

    /// The name of every app's local cache in its own directory: `openudid.json`, or `openudid-<namespace>.json`.
    package var localCacheName: String { namespace.map { "openudid-\($0).json" } ?? "openudid.json" }

    /// The file whose presence records the user's consent for `app`, beside its local cache.
    package func consentFile(for app: AppIdentity) -> String {
        let name = namespace.map { "openudid-\($0)-consent" } ?? "openudid-consent"
        return Self.joined(Self.joined(dataHome, app.id), name)
    }

    /// The file whose presence means the user opted out of OpenUDID altogether.
    package var optOutMarker: String { Self.joined(sharedConfigHome, "openudid/opt-out") }

    /// Whether `namespace` may name a namespace.
    ///
    /// - Parameter namespace: The candidate name.
    /// - Returns: `true` for 1 to 64 characters from `A-Z a-z 0-9 _ -` not starting with `-`.
    package static func isValidNamespace(_ namespace: String) -> Bool {
        let bytes = Array(namespace.utf8)
        guard (1...64).contains(bytes.count), bytes.first != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }

    private static func joined(_ base: String, _ component: String) -> String {
        base == "/" ? "/" + component : base + "/" + component
    }
}

/// Why the storage directories could not be worked out.
package struct StoragePathsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    package enum Reason: Sendable, Hashable {
        /// Neither `XDG_DATA_HOME`/`XDG_CONFIG_HOME` nor `HOME` is set.
        case noHome
        /// A home directory is given as a relative path.
        case relativeHome(String)
        /// The namespace breaks the naming rule.
        case invalidNamespace(String)
    }

    /// What is wrong.
    package let reason: Reason

    /// Creates an error for `reason`.
    package init(_ reason: Reason) {
        self.reason = reason
    }

    /// What is wrong and how to fix it, in one sentence.
    package var description: String {
        switch reason {
        case .noHome:
            return "cannot find a home directory: HOME is not set; set HOME or XDG_DATA_HOME and XDG_CONFIG_HOME"
        case .relativeHome(let path):
            return "cannot use \(quoted(path)) as a home directory: it is not an absolute path"
        case .invalidNamespace(let namespace):
            return "\(quoted(namespace)) is not a valid namespace: use 1 to 64 characters from A-Z a-z 0-9 _ -, not starting with -"
        }
    }
}
