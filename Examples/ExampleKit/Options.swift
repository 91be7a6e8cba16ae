import OpenUDIDKit

/// The command line every example app accepts: the CLI's options that matter
/// for a desktop app, parsed as simply as the three of them need.
struct Options {
    var display: String?
    var namespace: String?
    var mirror: MirrorChoice = .automatic
    /// Where to put the window, `[WxH][+X+Y]` as X programs spell it.
    var size: (width: Int, height: Int)?
    var position: (x: Int, y: Int)?
    var help = false

    static let usage = """
        options:
          --display NAME     X display (default: $DISPLAY)
          --namespace NAME   a separate set of slots and files, for experiments
          --mirror automatic|secret-service|file|none
                             where the vendor mirror lives (default: automatic)
          --geometry [WxH][+X+Y]
                             the window's size and place (default: 620x430, placed
                             by the window manager)
          --help             this text

        keys: o or a click toggles this app's opt-out; q or Escape quits.
        SIGUSR1 toggles the opt-out too, for scripts.
        """

    /// Parses `words` (`--name value` or `--name=value`).
    init(_ words: [String]) throws(UsageError) {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else { throw UsageError("unexpected argument \"\(word)\"") }
            var name = String(word.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "help" {
                help = true
                continue
            }
            guard ["display", "namespace", "mirror", "geometry"].contains(name) else { throw UsageError("unknown option --\(name)") }
            if value == nil {
                guard index < words.count else { throw UsageError("--\(name) needs a value") }
                value = words[index]
                index += 1
            }
            let given = value ?? ""
            switch name {
            case "display": display = given
            case "namespace": namespace = given
            case "geometry": try parseGeometry(given)
            default:
                guard let choice = MirrorChoice(name: given) else {
                    throw UsageError("--mirror must be automatic, secret-service, file or none, not \"\(given)\"")
                }
                mirror = choice
            }
        }
    }

    /// Parses `WxH+X+Y`, `WxH` or `+X+Y`.
    private mutating func parseGeometry(_ text: String) throws(UsageError) {
        let invalid = UsageError("--geometry must look like 620x430+0+0, 620x430 or +0+0, not \"\(text)\"")
        var sizePart = Substring(text)
        if let plus = text.firstIndex(of: "+") {
            sizePart = text[..<plus]
            let numbers = text[text.index(after: plus)...].split(separator: "+", omittingEmptySubsequences: false)
            guard numbers.count == 2, let x = Int(numbers[0]), let y = Int(numbers[1]), x >= 0, y >= 0 else { throw invalid }
            position = (x, y)
        }
        if !sizePart.isEmpty {
            let numbers = sizePart.split(separator: "x", omittingEmptySubsequences: false)
            guard numbers.count == 2, let width = Int(numbers[0]), let height = Int(numbers[1]),
                  (100...4000).contains(width), (100...4000).contains(height) else { throw invalid }
            size = (width, height)
        }
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

/// A mistake on the command line; the app exits with status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
