import FoundationEssentials
import Glibc

/// Something about the session that limits what this app can share, as a
/// line of a report (docs/PROTOCOL.md §12 `environment`: `{code, detail}`).
/// Each case carries what it means for sharing, for a person.
public enum EnvironmentNote: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `sandboxed`: a Flatpak sandbox (`FLATPAK_ID` or `/.flatpak-info`).
    case sandboxed(String)
    /// `no-display`: no `DISPLAY`.
    case noDisplay(String)
    /// `wayland-without-x`: `WAYLAND_DISPLAY` set, no `DISPLAY`.
    case waylandWithoutX(String)
    /// `x-unreachable`: the X server named cannot be reached.
    case xUnreachable(String)

    /// The stable token of §12.
    package var code: String {
        switch self {
        case .sandboxed: "sandboxed"
        case .noDisplay: "no-display"
        case .waylandWithoutX: "wayland-without-x"
        case .xUnreachable: "x-unreachable"
        }
    }

    /// What the note means for sharing, for a person.
    public var detail: String {
        switch self {
        case .sandboxed(let detail), .noDisplay(let detail), .waylandWithoutX(let detail), .xUnreachable(let detail): detail
        }
    }

    /// `code: detail`.
    public var description: String { "\(code): \(detail)" }

    private enum CodingKeys: String, CodingKey { case code, detail }

    /// Decodes `{code, detail}`.
    ///
    /// - Throws: `DecodingError` for a code §12 does not list.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let detail = try container.decode(String.self, forKey: .detail)
        switch try container.decode(String.self, forKey: .code) {
        case "sandboxed": self = .sandboxed(detail)
        case "no-display": self = .noDisplay(detail)
        case "wayland-without-x": self = .waylandWithoutX(detail)
        case "x-unreachable": self = .xUnreachable(detail)
        case let code: throw DecodingError.dataCorruptedError(forKey: .code, in: container, debugDescription: "unknown note \(code)")
        }
    }

    /// Encodes `{code, detail}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(detail, forKey: .detail)
    }
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
                .sandboxed(
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
                    .waylandWithoutX(
                        """
                        a Wayland session (\(wayland)) with DISPLAY unset: the X selections cannot be reached, so \
                        apps share only through their file slots and the vendor mirror; \(x11)
                        """))
            } else if display == nil {
                notes.append(
                    .noDisplay(
                        "no X display (DISPLAY is unset): no selections; apps share only through their file slots and the vendor mirror"
                            + (sandbox == nil ? "" : "; \(x11)")))
            } else if let display, case .unavailable(_, let why)? = selections {
                notes.append(
                    .xUnreachable(
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
