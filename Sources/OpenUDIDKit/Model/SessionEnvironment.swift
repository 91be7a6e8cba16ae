import FoundationEssentials
import Glibc

/// Something about the session that limits what this app can share, as a
/// line of a report (docs/PROTOCOL.md §12 `environment`).
public struct EnvironmentNote: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A stable token: `sandboxed`, `no-display`, `wayland-without-x` or `x-unreachable`.
    public let code: String
    /// What it means for sharing, for a person.
    public let detail: String

    /// Creates a note.
    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `code: detail`.
    public var description: String { "\(code): \(detail)" }
}

/// Where the app runs, as far as sharing is concerned: a Flatpak sandbox, a
/// session without an X server.
enum SessionEnvironment {
    /// The notes for an app configured with `configuration` whose sources came out as `sources`.
    static func notes(_ configuration: OpenUDID.Configuration, sources: [SourceStatus]) -> [EnvironmentNote] {
        let environment = configuration.environment
        var notes: [EnvironmentNote] = []
        if let sandbox = flatpakApp(environment) {
            notes.append(
                EnvironmentNote(
                    code: "sandboxed",
                    detail: """
                        in the Flatpak sandbox of \(sandbox): the file slots, local cache and opt-out marker are private \
                        to this app unless it may write xdg-data/openudid and read xdg-config/openudid; the selections need \
                        the X11 socket (--socket=x11); the vendor mirror is the vendor's only through the host's Secret \
                        Service (--talk-name=org.freedesktop.secrets)
                        """))
        }
        if configuration.usesSelections {
            let display = configuration.displayName
            let selections = sources.first { $0.name == "selections" }?.state
            if display == nil, let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty {
                // Without DISPLAY nothing says whether the compositor runs Xwayland
                // (weston and GNOME start it at the first X client), so the note
                // says what is known and where the display usually is.
                notes.append(
                    EnvironmentNote(
                        code: "wayland-without-x",
                        detail: """
                            a Wayland session (\(wayland)) with DISPLAY unset: the X selections cannot be reached, so \
                            apps share only through their file slots and the vendor mirror; a Wayland desktop usually \
                            exports its compositor's Xwayland display, when it has one, as DISPLAY, and an app started \
                            with it takes part in the selections
                            """))
            } else if display == nil {
                notes.append(
                    EnvironmentNote(
                        code: "no-display",
                        detail:
                            "no X display (DISPLAY is unset): no selections; apps share only through their file slots and the vendor mirror"
                    ))
            } else if let display, case .unavailable(let why)? = selections {
                notes.append(
                    EnvironmentNote(
                        code: "x-unreachable",
                        detail: "the X server \(display) cannot be reached (\(why)): no selections this time"))
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
