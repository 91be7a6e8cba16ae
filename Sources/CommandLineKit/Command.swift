import COpenUDID

/// The version of the OpenUDID package: every program prints it for `--version`.
/// It is written once, in the C header (`OPENUDID_VERSION`), which C hosts compile against.
package let packageVersion = OPENUDID_VERSION

/// A program or one of its subcommands, described as data: what it takes and what help says about it.
///
/// ```swift
/// let get = Command("get", abstract: "resolve once and print the identifier",
///                   options: [.value("app", "ID", help: "the app's reverse-DNS id", required: true)])
/// let tool = Command("openudid", abstract: "share one identifier", subcommands: [get])
/// let invocation = tool.parseOrExit()   // "openudid get --app com.acme.notes"
/// print(invocation["app"]!)             // "com.acme.notes"
/// ```
///
/// Every command also takes `-h`/`--help` (help generated from the
/// definitions) and `-V`/`--version`; `--` ends the options, so every word after it
/// is an argument.
package struct Command: Sendable {
    /// The word that names it: the program's name, or the subcommand's.
    package let name: String
    /// One line, shown in the parent's list of commands.
    package let abstract: String
    /// Paragraphs after the usage lines.
    package let discussion: String?
    /// Usage lines after the command's name, when the generated one does not say enough
    /// (one of two options, say); empty for the generated one.
    package let synopses: [String]
    /// Its options and flags.
    package let options: [Option]
    /// What its words that are not options are called (`ID`); more words are refused.
    package let arguments: [String]
    /// Its subcommands; the first word names one.
    package let subcommands: [Command]
    /// Whether it cannot run without a subcommand.
    package let needsSubcommand: Bool
    /// Whether the parent's help leaves it out (a mode for the program's own use).
    package let isHidden: Bool
    /// Paragraphs after the options: exit status, requirements.
    package let epilogue: String?
    /// What `--version` prints after the program's name.
    package let version: String

    /// Describes a command.
    ///
    /// - Parameters:
    ///   - name: The word that names it.
    ///   - abstract: One line for the parent's list of commands.
    ///   - discussion: Paragraphs after the usage lines.
    ///   - synopses: Usage lines after the name, replacing the generated one.
    ///   - options: Its options and flags.
    ///   - arguments: The names of the words it takes besides options, all optional.
    ///   - subcommands: Its subcommands.
    ///   - needsSubcommand: Whether a subcommand must be given (default: when there are any and no options).
    ///   - isHidden: Whether the parent's help leaves it out.
    ///   - epilogue: Paragraphs after the options.
    ///   - version: What `--version` prints after the name.
    package init(
        _ name: String, abstract: String, discussion: String? = nil, synopses: [String] = [],
        options: [Option] = [], arguments: [String] = [], subcommands: [Command] = [],
        needsSubcommand: Bool? = nil, isHidden: Bool = false, epilogue: String? = nil,
        version: String = packageVersion
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.synopses = synopses
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.needsSubcommand = needsSubcommand ?? (!subcommands.isEmpty && options.isEmpty)
        self.isHidden = isHidden
        self.epilogue = epilogue
        self.version = version
        var seen: Set<String> = ["help", "version"]
        for option in options {
            precondition(seen.insert(option.name).inserted, "\(name) defines --\(option.name) twice (or a built-in one)")
        }
    }

    /// The option named `name`, if this command has one.
    package func option(named name: String) -> Option? {
        options.first { $0.name == name }
    }
}
