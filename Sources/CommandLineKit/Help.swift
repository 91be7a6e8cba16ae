extension Command {
    /// The help of this command, generated from its definitions; `path` names it
    /// from the program down, such as `["openudid", "get"]`.
    package func help(path: [String]) -> String {
        let fullName = path.joined(separator: " ")
        let usages = (synopses.isEmpty ? [generatedSynopsis] : synopses).map { "\(fullName) \($0)" }
        var sections = ["usage: " + usages.joined(separator: "\n       ")]
        if let discussion { sections.append(discussion) }
        let visible = subcommands.filter { !$0.isHidden }
        if !visible.isEmpty {
            sections.append("commands:\n" + table(visible.map { ($0.name, $0.abstract) }))
        }
        let rows =
            options.filter { !$0.isHidden }.map { option in
                (option.spelling, option.help + (option.defaultValue.map { " (default: \($0))" } ?? ""))
            } + [("-h, --help", "show this help"), ("-V, --version", "print the version")]
        sections.append("options:\n" + table(rows))
        if let epilogue { sections.append(epilogue) }
        if !visible.isEmpty { sections.append("See '\(fullName) <command> --help' for the options of a command.") }
        return sections.joined(separator: "\n\n")
    }

    /// The usage line after the name: required options, `[options]`, the arguments.
    private var generatedSynopsis: String {
        if needsSubcommand { return "<command> [options]" }
        let required = options.filter(\.isRequired).map(\.spelling)
        let optional = options.contains { !$0.isRequired && !$0.isHidden } ? ["[options]"] : []
        return (required + optional + arguments.map { "[\($0)]" }).joined(separator: " ")
    }
}

/// Two columns: a label, and its text wrapped to 80 columns; a label too wide for
/// the column puts its text on the next line.
private func table(_ rows: [(label: String, text: String)]) -> String {
    let column = min(rows.map { $0.label.count + 4 }.max() ?? 0, 26)
    let indent = String(repeating: " ", count: column)
    return rows.map { row in
        let lines = wrapped(row.text, width: 80 - column)
        let head = "  " + row.label
        let first =
            head.count + 2 <= column
            ? head + String(repeating: " ", count: column - head.count) + lines[0]
            : head + "\n" + indent + lines[0]
        return ([first] + lines.dropFirst().map { indent + $0 }).joined(separator: "\n")
    }.joined(separator: "\n")
}

/// `text` broken between words into lines of at most `width` characters (a longer word stands alone).
private func wrapped(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty, line.count + 1 + word.count > width {
            lines.append(line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    return lines + [line]
}
