/// One option or flag of a command: how it is spelled, what it takes, and its line of help.
///
/// The definition is the only place an option exists: the parser reads it,
/// the help is generated from it, and a program that asks for an option it
/// did not define stops with a precondition failure instead of reading `nil`.
package struct Option: Sendable {
    /// The long name, without the leading `--`.
    package let name: String
    /// What the value is called in help (`ID`, `NAME`); nil for a flag.
    package let valueName: String?
    /// The line of help; generated help wraps it.
    package let help: String
    /// The value a program reads when the option is not given; help shows it.
    package let defaultValue: String?
    /// Whether the command cannot run without it.
    package let isRequired: Bool
    /// Whether giving it again is allowed (the last one wins) rather than a mistake.
    package let mayRepeat: Bool
    /// What a value must be, checked while parsing.
    package let check: ValueCheck?
    /// Whether help leaves it out: a command accepts it, so that scripts may pass one set of
    /// options to every command, but does nothing with it.
    package let isHidden: Bool

    /// Whether the option takes no value.
    package var isFlag: Bool { valueName == nil }

    /// A flag: `--name`, no value.
    ///
    /// - Parameters:
    ///   - name: The long name without `--`.
    ///   - help: One line of help.
    ///   - mayRepeat: Whether giving it twice is allowed rather than a mistake.
    package static func flag(_ name: String, help: String, mayRepeat: Bool = false) -> Option {
        Option(
            name: name, valueName: nil, help: help, defaultValue: nil, isRequired: false, mayRepeat: mayRepeat, check: nil,
            isHidden: false)
    }

    /// An option with a value: `--name VALUE` or `--name=VALUE`.
    ///
    /// - Parameters:
    ///   - name: The long name without `--`.
    ///   - valueName: What help calls the value (`ID`); choices replace it when the check lists them.
    ///   - help: One line of help.
    ///   - defaultValue: What the program reads when the option is not given.
    ///   - required: Whether the command cannot run without it.
    ///   - mayRepeat: Whether giving it again is allowed, the last one winning.
    ///   - check: What a value must be.
    package static func value(
        _ name: String, _ valueName: String, help: String, default defaultValue: String? = nil,
        required: Bool = false, mayRepeat: Bool = false, check: ValueCheck? = nil
    ) -> Option {
        Option(
            name: name, valueName: valueName, help: help, defaultValue: defaultValue, isRequired: required,
            mayRepeat: mayRepeat, check: check, isHidden: false)
    }

    /// The same option, accepted and checked as before but left out of help: for an
    /// option a command does nothing with, which scripts that pass one set of options
    /// to every command may still give it.
    package var hidden: Option {
        Option(
            name: name, valueName: valueName, help: help, defaultValue: defaultValue, isRequired: false, mayRepeat: mayRepeat,
            check: check, isHidden: true)
    }

    /// `--name VALUE` as help and usage lines show it; the choices stand for the value when there are any.
    package var spelling: String {
        guard let valueName else { return "--\(name)" }
        return "--\(name) " + (check?.choices?.joined(separator: "|") ?? valueName)
    }
}

/// What the value of an option must be; the parser refuses any other with a sentence that names it.
package struct ValueCheck: Sendable {
    /// The values help lists in place of the value name, when they can be listed.
    package let choices: [String]?
    /// The sentence that refuses `value` of the option spelled `option`, or nil when the value will do.
    let problem: @Sendable (_ option: String, _ value: String) -> String?

    /// One of `choices`; `aliases` are accepted too but not shown.
    package static func oneOf(_ choices: [String], alsoAccepting aliases: [String] = []) -> ValueCheck {
        ValueCheck(choices: choices) { option, value in
            choices.contains(value) || aliases.contains(value)
                ? nil : "\(option) must be \(listed(choices, joinedBy: "or")), not \(quoted(value))"
        }
    }

    /// A whole number in `range`.
    package static func integer(in range: ClosedRange<Int>) -> ValueCheck {
        ValueCheck(choices: nil) { option, value in
            if let number = Int(value), range.contains(number) { return nil }
            let allowed =
                range.upperBound == .max
                ? "a whole number of at least \(range.lowerBound)"
                : "\(range.lowerBound) to \(range.upperBound)"
            return "\(option) must be \(allowed), not \(quoted(value))"
        }
    }

    /// A number of at least `minimum`, fractions allowed.
    package static func number(atLeast minimum: Double) -> ValueCheck {
        ValueCheck(choices: nil) { option, value in
            if let number = Double(value), number.isFinite, number >= minimum { return nil }
            return "\(option) must be a number of at least \(minimum.formatted), not \(quoted(value))"
        }
    }

    /// Any rule: `problem` returns the whole sentence that refuses a value (naming it), or nil when it will do.
    package static func custom(_ problem: @escaping @Sendable (String) -> String?) -> ValueCheck {
        ValueCheck(choices: nil) { _, value in problem(value) }
    }
}

/// `word` in single quotes, as every message of the parser shows what was typed.
package func quoted(_ word: String) -> String { "'\(word)'" }

/// "a, b or c".
package func listed(_ items: [String], joinedBy last: String) -> String {
    guard items.count > 1 else { return items.first ?? "" }
    return items.dropLast().joined(separator: ", ") + " \(last) " + items[items.count - 1]
}

extension Double {
    /// `3` for 3.0, `0.5` for 0.5.
    fileprivate var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}
