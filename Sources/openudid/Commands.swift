/// A small command-line parser: `--name value`, `--name=value` and `--flag`.
struct Arguments {
    private(set) var positional: [String] = []
    private var options: [String: String] = [:]
    private var flags: Set<String> = []

    /// Parses `words`; `valued` names the options that take a value, `flags` those that take none.
    ///
    /// An option given twice is a mistake, not "the last one wins". An option
    /// that exists but not for this command is named as such (`elsewhere`).
    init(_ words: [String], valued: Set<String>, flags known: Set<String>, command: String,
         elsewhere: Set<String> = []) throws(UsageError) {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else {
                positional.append(word)
                continue
            }
            var name = String(word.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if valued.contains(name) {
                if value == nil {
                    guard index < words.count else { throw UsageError("--\(name) needs a value") }
                    value = words[index]
                    index += 1
                }
                guard options[name] == nil else { throw UsageError("--\(name) is given twice") }
                options[name] = value
            } else if known.contains(name) {
                guard value == nil else { throw UsageError("--\(name) takes no value") }
                guard !flags.contains(name) else { throw UsageError("--\(name) is given twice") }
                flags.insert(name)
            } else if elsewhere.contains(name) {
                throw UsageError("\(command) does not take --\(name)")
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    subscript(option name: String) -> String? { options[name] }

    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// A mistake in how the tool was called; exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
