import FoundationEssentials
import Glibc
import InputGate

/// Where the per-vendor mirror lives. New stores may come in later versions.
public struct MirrorChoice: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The choice's name: `automatic`, `secret-service`, `file` or `none`.
    public let rawValue: String

    /// The choice named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The Secret Service if one answers on the session bus, else the file store.
    public static let automatic = MirrorChoice(rawValue: "automatic")
    /// The freedesktop Secret Service (gnome-keyring, KeePassXC, KWallet's service).
    public static let secretService = MirrorChoice(rawValue: "secret-service")
    /// The embedded file store under `$XDG_DATA_HOME/openudid/vendors/`.
    public static let file = MirrorChoice(rawValue: "file")
    /// No mirror: the identifier lives in selections, file slots and local caches only.
    public static let none = MirrorChoice(rawValue: "none")

    /// The choice's name.
    public var description: String { rawValue }

    /// Parses the names the command-line tool accepts: `automatic` (or `auto`), `secret-service`, `file`, `none`.
    package init?(name: String) {
        let choice = MirrorChoice(rawValue: name == "auto" ? "automatic" : name)
        guard [.automatic, .secretService, .file, .none].contains(choice) else { return nil }
        self = choice
    }
}

extension OpenUDID {
    /// How an `OpenUDID` instance finds and keeps the identifier.
    public struct Configuration: Sendable {
        /// The X display to use; nil means `$DISPLAY` from `environment`.
        public var display: String?
        /// Whether to use X selections at all; false works from files and the mirror only.
        public var usesSelections: Bool
        /// Separates experiments: selections become `_OPENUDID_<NAMESPACE>_SLOT_<n>` and
        /// shared files move under `openudid/ns/<namespace>/`.
        public var namespace: String?
        /// What to do when the app's own value disagrees with the consensus.
        public var policy: ResolutionPolicy
        /// Where the per-vendor mirror lives.
        public var mirror: MirrorChoice
        /// The environment to take `DISPLAY`, `HOME` and the XDG variables from.
        public var environment: [String: String]

        // Experiment knobs: the protocol fixes them for real use (docs/PROTOCOL.md),
        // so only the package's tools and tests may change them.

        /// Whether to use the file slots and the local cache; false leaves the
        /// selections (and the mirror, if chosen) as the only places, which is
        /// how an experiment shows what each mechanism alone is worth.
        package var usesFiles = true
        /// How many selection slots there are (default 100); every participant of a namespace must agree.
        package var slotCount = 100
        /// The longest one Secret Service call may take (a hung keyring costs this much).
        package var secretServiceDeadline: Duration = .seconds(2)
        /// The deadline of one pass over the selection slots.
        package var readDeadline: Duration = .milliseconds(250)
        /// How long a participating app waits after a slot change before it resolves again,
        /// so a burst of changes costs one resolution: it waits until no change has come
        /// for this long, or `debounceLongest` after the first.
        package var debounce: Duration = .milliseconds(20)
        /// The longest a participating app puts off resolving while changes keep coming.
        package var debounceLongest: Duration = .milliseconds(200)
        /// Whether the app takes part only once the user has consented: until
        /// `OpenUDID.grantConsent()` records the user's consent for the app, it
        /// reads, generates, writes and publishes nothing, and reports the
        /// all-zero identifier with `OptOut.noConsent`. Off by default.
        ///
        /// A device identifier is personal data in the EU, and storing or reading
        /// one on the user's device needs consent unless strictly necessary.
        public var requiresConsent = false
        /// The file system every file call of this handle goes through: `.system`,
        /// or in a test an instance with injected faults.
        package var fileSystem: FileSystem = .system

        /// Creates a configuration; every default suits a real desktop session.
        public init(
            display: String? = nil, usesSelections: Bool = true, namespace: String? = nil,
            policy: ResolutionPolicy = .followConsensus, mirror: MirrorChoice = .automatic,
            environment: [String: String] = ProcessInfo.processInfo.environment
        ) {
            self.display = display
            self.usesSelections = usesSelections
            self.namespace = namespace
            self.policy = policy
            self.mirror = mirror
            self.environment = environment
        }

        /// The display name to open, if any.
        package var displayName: String? {
            guard usesSelections else { return nil }
            if let display, !display.isEmpty { return display }
            if let display = environment["DISPLAY"], !display.isEmpty { return display }
            return nil
        }
    }
}
