import CommandLineKit
import OpenUDIDKit

/// The command line every example app accepts: the CLI's options that matter for a desktop app.
struct Options {
    var display: String?
    var namespace: String?
    var mirror: MirrorChoice = .automatic
    /// Where to put the window, `[WxH][+X+Y]` as X programs spell it.
    var size: (width: Int, height: Int)?
    var position: (x: Int, y: Int)?

    /// The command line of `app`, run as `name`.
    static func command(_ name: String, app: ExampleApp) -> Command {
        Command(
            name,
            abstract: "an example app",
            discussion: "Shows the identifier \(app.id) shares with the other example apps.",
            options: [
                .value("display", "NAME", help: "X display (default: $DISPLAY)"),
                .value("namespace", "NAME", help: "a separate set of slots and files, for experiments"),
                .value(
                    "mirror", "MIRROR", help: "where the vendor mirror lives", default: "automatic",
                    check: .oneOf(["automatic", "secret-service", "file", "none"], alsoAccepting: ["auto"])),
                .value(
                    "geometry", "[WxH][+X+Y]",
                    help: "the window's size and place (default: 620x430, placed by the window manager)",
                    check: .custom { text in
                        Geometry(text) == nil ? "--geometry must look like 620x430+0+0, 620x430 or +0+0, not \(quoted(text))" : nil
                    })
            ],
            epilogue: """
                keys: o or a click toggles this app's opt-out; q or Escape quits.
                SIGUSR1 toggles the opt-out too, for scripts.
                """)
    }

    /// The options of a parsed command line (every value already checked).
    init(_ arguments: ParsedCommand) {
        display = arguments["display"]
        namespace = arguments["namespace"]
        mirror = arguments["mirror"].flatMap(MirrorChoice.init(name:)) ?? .automatic
        let geometry = arguments["geometry"].flatMap(Geometry.init)
        size = geometry?.size
        position = geometry?.position
    }

    /// The library configuration these options describe.
    var configuration: OpenUDID.Configuration {
        var configuration = OpenUDID.Configuration()
        configuration.display = display
        configuration.namespace = namespace
        configuration.mirror = mirror
        return configuration
    }
}

/// A window's `WxH+X+Y`, `WxH` or `+X+Y`.
private struct Geometry {
    var size: (width: Int, height: Int)?
    var position: (x: Int, y: Int)?

    init?(_ text: String) {
        var sizePart = Substring(text)
        if let plus = text.firstIndex(of: "+") {
            sizePart = text[..<plus]
            let numbers = text[text.index(after: plus)...].split(separator: "+", omittingEmptySubsequences: false)
            guard numbers.count == 2, let x = Int(numbers[0]), let y = Int(numbers[1]), x >= 0, y >= 0 else { return nil }
            position = (x, y)
        }
        if !sizePart.isEmpty {
            let numbers = sizePart.split(separator: "x", omittingEmptySubsequences: false)
            guard numbers.count == 2, let width = Int(numbers[0]), let height = Int(numbers[1]),
                (100...4000).contains(width), (100...4000).contains(height)
            else { return nil }
            size = (width, height)
        }
    }
}
