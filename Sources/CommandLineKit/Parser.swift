import Glibc

/// What a command line asks for: help, the version, or a command to run.
package enum Invocation: Sendable {
    /// `--help`, `-h` or `help [command]`: the generated help to print.
    case help(String)
    /// `--version` or `-V`: the line to print, such as `openudid 0.2.0`.
    case version(String)
    /// A command to run, with every value checked.
    case run(ParsedCommand)
}

/// A command line that parsed: which command runs, its options and its arguments.
package struct ParsedCommand: Sendable {
    /// The command that runs (a subcommand when one was named).
    package let command: Command
    /// The names from the program to the command, such as `["openudid", "get"]`.
    package let path: [String]
    /// The words that are not options, in order.
    package let arguments: [String]
    private let values: [String: String]
    private let flags: Set<String>

    init(command: Command, path: [String], arguments: [String], values: [String: String], flags: Set<String>) {
        self.command = command
        self.path = path
        self.arguments = arguments
        self.values = values
        self.flags = flags
    }

    /// The command's own name, such as `get`.
    package var name: String { command.name }

    /// The command as typed, such as `openudid get`, for messages.
    package var fullName: String { path.joined(separator: " ") }

    /// The value of option `name`: the one given, else its default, else nil.
    package subscript(name: String) -> String? {
        values[name] ?? definition(name).defaultValue
    }

    /// Whether option or flag `name` was given on the command line.
    package func isGiven(_ name: String) -> Bool {
        _ = definition(name)
        return values[name] != nil || flags.contains(name)
    }

    /// Whether flag `name` was given.
    package func has(_ flag: String) -> Bool {
        precondition(definition(flag).isFlag, "--\(flag) of \(fullName) takes a value; read it with a subscript")
        return flags.contains(flag)
    }

    /// The value of option `name` as a whole number (its check made sure it is one).
    package func integer(_ name: String) -> Int? { self[name].flatMap { Int($0) } }

    /// The value of option `name` as a number (its check made sure it is one).
    package func number(_ name: String) -> Double? { self[name].flatMap { Double($0) } }

    /// A usage error of this command: for the checks that involve more than one option.
    package func usageError(_ message: String) -> UsageError {
        UsageError(command: fullName, message: message)
    }

    /// Prints a usage error of this command on standard error and exits with status 2.
    package func fail(_ message: String) -> Never {
        usageError(message).exit()
    }

    private func definition(_ name: String) -> Option {
        guard let option = command.option(named: name) else { preconditionFailure("\(fullName) defines no --\(name)") }
        return option
    }
}

extension UsageError {
    /// Prints the error on standard error and exits with status 2.
    package func exit() -> Never {
        writeAll(description + "\n", to: STDERR_FILENO)
        Glibc.exit(Self.exitStatus)
    }
}

extension Command {
    /// Parses the process's arguments: prints help or the version and exits 0, or prints
    /// a usage error and exits 2, or returns the command to run.
    package func parseOrExit(_ words: [String] = Array(CommandLine.arguments.dropFirst())) -> ParsedCommand {
        do {
            switch try parse(words) {
            case .run(let parsed):
                return parsed
            case .help(let text), .version(let text):
                writeAll(text + "\n", to: STDOUT_FILENO)
                Glibc.exit(0)
            }
        } catch {
            error.exit()
        }
    }

    /// Parses `words` (the arguments after the program's name).
    ///
    /// - Throws: `UsageError` naming the first word that does not fit.
    package func parse(_ words: [String]) throws(UsageError) -> Invocation {
        try parse(words[...], path: [name], root: self)
    }

    private func parse(_ words: ArraySlice<String>, path: [String], root: Command) throws(UsageError) -> Invocation {
        let fullName = path.joined(separator: " ")
        if !subcommands.isEmpty, let first = words.first, !first.hasPrefix("-") {
            if let subcommand = subcommands.first(where: { $0.name == first }) {
                return try subcommand.parse(words.dropFirst(), path: path + [first], root: root)
            }
            if first == "help" {
                let rest = words.dropFirst()
                guard let wanted = rest.first else { return .help(help(path: path)) }
                guard let subcommand = subcommands.first(where: { $0.name == wanted }) else {
                    throw unknownCommand(wanted, fullName: fullName)
                }
                return .help(subcommand.help(path: path + [wanted]))
            }
            if needsSubcommand || (arguments.isEmpty && subcommands.contains { !$0.isHidden }) {
                throw unknownCommand(first, fullName: fullName)
            }
        }
        // Help and the version win wherever they stand before `--`, so that
        // `openudid get --app --help` still helps.
        let options = words.prefix { $0 != "--" }
        if options.contains("--help") || options.contains("-h") { return .help(help(path: path)) }
        if options.contains("--version") || options.contains("-V") { return .version("\(root.name) \(root.version)") }
        if needsSubcommand {
            // `openudid --app X get`: the options were meant for the command that follows them.
            if let at = words.firstIndex(where: { word in subcommands.contains { $0.name == word } }), let first = words.first {
                let command = subcommands.first { $0.name == words[at] }
                let moved = words[..<at].map { command?.longSpelling(of: $0) ?? $0 }
                let corrected = [fullName, words[at]] + moved + words[(at + 1)...]
                throw UsageError(
                    command: fullName, message: "\(quoted(first)) goes after the command",
                    suggestion: corrected.joined(separator: " "))
            }
            let names = subcommands.filter { !$0.isHidden }.map(\.name)
            throw UsageError(command: fullName, message: "needs a command: \(listed(names, joinedBy: "or"))")
        }

        var values: [String: String] = [:]
        var flags: Set<String> = []
        var positional: [String] = []
        var index = words.startIndex
        var ended = false
        while index < words.endIndex {
            let word = words[index]
            index += 1
            if ended || word == "-" || !word.hasPrefix("-") {
                positional.append(word)
                continue
            }
            if word == "--" {
                ended = true
                continue
            }
            var name = String(word.drop { $0 == "-" })
            var inline: String?
            if word.hasPrefix("--"), let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard word.hasPrefix("--"), let option = option(named: name) else {
                throw unknownOption(word.hasPrefix("--") ? "--\(name)" : word, fullName: fullName, root: root)
            }
            if !option.mayRepeat, values[name] != nil || flags.contains(name) {
                throw UsageError(command: fullName, message: "\(option.spelling) is given twice")
            }
            if option.isFlag {
                if let inline { throw UsageError(command: fullName, message: "--\(name) takes no value, not \(quoted(inline))") }
                flags.insert(name)
                continue
            }
            // A word that looks like an option is not taken as a value: `--out --json`
            // is a forgotten value, not a directory named "--json". `--out=-x` says it.
            let value: String
            if let inline {
                value = inline
            } else if index < words.endIndex, !(words[index].hasPrefix("-") && words[index] != "-") {
                value = words[index]
                index += 1
            } else {
                throw UsageError(command: fullName, message: "\(option.spelling) needs a value")
            }
            if let problem = option.check?.problem("--\(name)", value) {
                throw UsageError(command: fullName, message: problem)
            }
            values[name] = value
        }
        if positional.count > arguments.count {
            if let hint = valueWithoutItsOption(positional, values: values, words: words, fullName: fullName) { throw hint }
            let takes = arguments.isEmpty ? "takes no arguments" : "takes only \(listed(arguments, joinedBy: "and"))"
            throw UsageError(command: fullName, message: "unexpected argument \(quoted(positional[arguments.count])): \(name) \(takes)")
        }
        if let missing = self.options.first(where: { $0.isRequired && values[$0.name] == nil }) {
            throw UsageError(command: fullName, message: "needs \(missing.spelling)")
        }
        return .run(ParsedCommand(command: self, path: path, arguments: positional, values: values, flags: flags))
    }

    /// The error for one word too many that is the value of a required option given
    /// without the option (`consent org.example.mail grant`), with the command line
    /// that puts the option in front of it; nil when no word fits that.
    private func valueWithoutItsOption(
        _ positional: [String], values: [String: String], words: ArraySlice<String>, fullName: String
    ) -> UsageError? {
        guard positional.count == arguments.count + 1,
            let missing = options.first(where: { $0.isRequired && !$0.isFlag && values[$0.name] == nil })
        else { return nil }
        // An argument named `a|b|c` takes one of those words: the value is the other word.
        let choices = Set(arguments.flatMap { $0.split(separator: "|").map(String.init) })
        // A word after `--` was meant as an argument.
        guard let value = positional.first(where: { !choices.contains($0) }), missing.check?.problem("--\(missing.name)", value) == nil,
            let at = words.prefix(while: { $0 != "--" }).firstIndex(of: value)
        else { return nil }
        let corrected = [fullName] + words[..<at] + ["--\(missing.name)", value] + words[(at + 1)...]
        return UsageError(
            command: fullName, message: "\(quoted(value)) goes after --\(missing.name)", suggestion: corrected.joined(separator: " "))
    }

    private func unknownCommand(_ word: String, fullName: String) -> UsageError {
        let names = subcommands.filter { !$0.isHidden }.map(\.name)
        return UsageError(
            command: fullName, message: "unknown command \(quoted(word))",
            suggestion: suggestion(for: word, among: names))
    }

    /// The error for an option this command does not define: the near spelling it
    /// probably meant, or the commands that do take it.
    private func unknownOption(_ word: String, fullName: String, root: Command) -> UsageError {
        if let long = longSpelling(of: word) {
            return UsageError(command: fullName, message: "unknown option \(quoted(word))", suggestion: long)
        }
        let spellings = options.map { "--\($0.name)" } + ["--help", "--version"]
        if word.hasPrefix("--"), let near = suggestion(for: word, among: spellings) {
            return UsageError(command: fullName, message: "unknown option \(quoted(word))", suggestion: near)
        }
        let takers = root.commands(taking: String(word.dropFirst(2))).filter { $0 != name }
        if word.hasPrefix("--"), !takers.isEmpty {
            let others = listed(takers, joinedBy: "and") + (takers.count == 1 ? " does" : " do")
            return UsageError(command: fullName, message: "\(name) does not take \(quoted(word)); \(others)")
        }
        return UsageError(command: fullName, message: "unknown option \(quoted(word))")
    }

    /// `--name` for `-name`, an option of this command written with one dash (`-app`);
    /// nil for any other word.
    func longSpelling(of word: String) -> String? {
        guard word.count > 2, word.hasPrefix("-"), !word.hasPrefix("--") else { return nil }
        let name = word.dropFirst().prefix { $0 != "=" }
        guard option(named: String(name)) != nil else { return nil }
        return "-" + word
    }

    /// The names of the commands in this tree that define `option` and show it in their help
    /// (a command that only tolerates an option does nothing with it).
    private func commands(taking option: String) -> [String] {
        (self.option(named: option).map { !$0.isHidden } == true ? [name] : []) + subcommands.flatMap { $0.commands(taking: option) }
    }
}

/// Writes all of `text` to `descriptor` unbuffered, retrying short writes and
/// EINTR; gives up quietly on any other error (a closed pipe must not crash a
/// program that is about to exit).
package func writeAll(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written > 0 {
            bytes = bytes.dropFirst(written)
        } else if written < 0, errno == EINTR {
            continue
        } else {
            return
        }
    }
}
