import FoundationEssentials
import Glibc

/// Something about the session that limits what this app can share, as a
/// line of a report (docs/PROTOCOL.md §12 `environment`: `{code, detail}`).
public struct EnvironmentNote: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind of note, a token of §12. New kinds may come in later versions.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable {
        /// The token, such as `sandboxed`.
        public let rawValue: String

        /// The kind spelled `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A Flatpak sandbox (`FLATPAK_ID` or `/.flatpak-info`).
        public static let sandboxed = Code(rawValue: "sandboxed")
        /// No `DISPLAY`.
        public static let noDisplay = Code(rawValue: "no-display")
        /// `WAYLAND_DISPLAY` set, no `DISPLAY`.
        public static let waylandWithoutX = Code(rawValue: "wayland-without-x")
        /// The X server named cannot be reached.
        public static let xUnreachable = Code(rawValue: "x-unreachable")
    }

    /// The kind of note.
    public let code: Code
    /// What the note means for sharing, for a person.
    public let detail: String

    /// A note of `code` saying `detail`.
    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `code: detail`.
    public var description: String { "\(code.rawValue): \(detail)" }
}

/// Where the app runs, as far as sharing is concerned: a Flatpak sandbox, a
/// session without an X server.
enum SessionEnvironment {
    /// The notes for an app configured with `configuration` whose sources came out as `sources`.
    static func notes(_ configuration: OpenUDID.Configuration, sources: [SourceStatus]) -> [EnvironmentNote] {
        let environment = configuration.environment
        var notes: [EnvironmentNote] = []
        let sandbox = flatpakApp(environment)
        if let sandbox {
            // The permissions are finish-args of the app's manifest, the only
            // thing that changes what a sandbox may reach (measured with Flatpak 1.14).
            notes.append(
                EnvironmentNote(
                    .sandboxed,
                    """
                    in the Flatpak sandbox of \(sandbox): its file slots and local cache are its own unless its \
                    manifest adds --filesystem=xdg-data/openudid:create, and the user's opt-out reaches it only with \
                    --filesystem=xdg-config/openudid:ro; the selections need --socket=x11; the vendor mirror is the \
                    vendor's only with --talk-name=org.freedesktop.secrets
                    """))
        }
        // In a sandbox the user cannot give the app a DISPLAY: only its manifest can.
        let x11 =
            sandbox == nil
            ? "a Wayland desktop usually exports its compositor's Xwayland display, when it has one, as DISPLAY, and an app started with it takes part in the selections"
            : "in a Flatpak sandbox the selections need the X11 socket: the app's manifest adds --socket=x11 (--socket=fallback-x11 gives no X11 in a Wayland session)"
        if configuration.usesSelections {
            let display = configuration.displayName
            let selections = sources.first { $0.place == .selection }
            if display == nil, let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty {
                // Without DISPLAY nothing says whether the compositor runs Xwayland
                // (weston and GNOME start it at the first X client), so the note
                // says what is known and where the display usually is.
                notes.append(
                    EnvironmentNote(
                        .waylandWithoutX,
                        """
                        a Wayland session (\(wayland)) with DISPLAY unset: the X selections cannot be reached, so \
                        apps share only through their file slots and the vendor mirror; \(x11)
                        """))
            } else if display == nil {
                notes.append(
                    EnvironmentNote(
                        .noDisplay,
                        "no X display (DISPLAY is unset): no selections; apps share only through their file slots and the vendor mirror"
                            + (sandbox == nil ? "" : "; \(x11)")))
            } else if let display, case .unavailable(_, let why)? = selections {
                notes.append(
                    EnvironmentNote(
                        .xUnreachable,
                        "the X server \(display) cannot be reached (\(why)): no selections this time"))
            }
        }
        return notes
    }

    /// The Flatpak app id when this process runs in a Flatpak sandbox:
    /// `FLATPAK_ID`, or the `/.flatpak-info` file every sandbox has.
    static func flatpakApp(_ environment: [String: String], info: String = "/.flatpak-info") -> String? {
        if let id = environment["FLATPAK_ID"], !id.isEmpty { return id }
        return access(info, F_OK) == 0 ? "an unnamed app" : nil
    }
}
