/// Who an application is, in the reverse-DNS form desktop files and D-Bus use.
///
/// The id follows the freedesktop application-id rules (the D-Bus well-known
/// bus name rules): at least two elements separated by `.`, each element made
/// of ASCII letters, digits, `_` and `-`, no element empty or starting with a
/// digit. `-` is allowed because the rules allow it, though they discourage
/// it. The rules allow 255 characters; this library allows
/// `maximumLength` (224), so that the id's file slot and its quarantined
/// copy fit in a file name.
///
/// The vendor is the group of apps that share a vendor mirror, the Linux
/// analogue of an iOS keychain access group: by default the first two
/// elements of the id (`com.acme` for `com.acme.notes`), or the first three
/// under a hosting prefix whose third element names the owner
/// (`io.github.alice` for `io.github.alice.App`; see `hostingPrefixes`).
public struct AppIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The application id, for example `com.acme.notes`.
    public let id: String
    /// The vendor, for example `com.acme`.
    public let vendor: String

    /// The longest id or vendor accepted, in bytes (all of them ASCII).
    ///
    /// A file name holds at most 255 bytes (`NAME_MAX`), and the longest name
    /// made from an id is its quarantined file slot,
    /// `<id>.json.corrupt-<13-digit milliseconds>-<clash counter up to 999>`:
    /// 224 + 5 + 9 + 13 + 4 = 255. A vendor names the file
    /// `<vendor>.json` of the file mirror the same way.
    package static let maximumLength = 224

    /// The hosting prefixes under which the third element of an id names the
    /// owner, so the default vendor is three elements long.
    ///
    /// Code hosting sites (`io.github.alice.App` belongs to GitHub user
    /// alice, not to GitHub) and the desktop projects that host many
    /// independent apps, after Flathub's application-id rules. Matching is by
    /// exact bytes: case is not folded.
    package static let hostingPrefixes: [String] = [
        "com.github", "com.gitlab", "io.frama", "io.github", "io.gitlab", "io.sourceforge", "net.sourceforge",
        "org.codeberg", "org.framagit", "org.freedesktop", "org.gnome", "org.kde", "page.codeberg"
    ]

    /// Validates an application id and works out its vendor.
    ///
    /// - Parameters:
    ///   - id: A reverse-DNS application id such as `com.acme.notes`.
    ///   - vendor: The vendor whose mirror this app shares. `nil` means the
    ///     default vendor (`defaultVendor(of:)`). An explicit vendor must obey
    ///     the same rules as an id.
    /// - Throws: `IdentityError` naming the id (or vendor) and the rule it breaks.
    package init(_ id: String, vendor: String? = nil) throws(IdentityError) {
        try Self.validate(id, as: .app)
        self.id = id
        if let vendor {
            try Self.validate(vendor, as: .vendor)
            self.vendor = vendor
        } else {
            self.vendor = Self.defaultVendor(of: id)
        }
    }

    /// The vendor of a valid id that declares none.
    ///
    /// The first two elements of `id`, or the first three when the first two
    /// are one of `hostingPrefixes` and a third exists: `io.github.alice.App`
    /// and `io.github.alice` both give `io.github.alice`, while
    /// `io.github` (the prefix alone) gives `io.github`.
    ///
    /// - Parameter id: An id that passed `validate(_:as:)`.
    /// - Returns: The default vendor, itself a valid vendor.
    public static func defaultVendor(of id: String) -> String {
        // Validation guarantees at least two non-empty elements.
        let elements = id.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        let prefix = elements.prefix(2).joined(separator: ".")
        guard elements.count >= 3, hostingPrefixes.contains(prefix) else { return prefix }
        return prefix + "." + elements[2]
    }

    /// The application id.
    public var description: String { id }

    /// Checks `name` against the application-id rules.
    ///
    /// - Parameters:
    ///   - name: The text to check.
    ///   - role: What the name is meant to be; it only changes the error message.
    /// - Throws: `IdentityError` naming the rule `name` breaks.
    package static func validate(_ name: String, as role: IdentityError.Role = .app) throws(IdentityError) {
        if let rule = brokenRule(in: name) {
            throw IdentityError(name: name, role: role, rule: rule)
        }
    }

    /// Whether `name` obeys the application-id rules.
    ///
    /// - Parameter name: The text to check.
    /// - Returns: `true` when `init(_:)` would accept `name`.
    package static func isValid(_ name: String) -> Bool {
        brokenRule(in: name) == nil
    }

    /// The first rule `name` breaks, or `nil`.
    ///
    /// Works on UTF-8 bytes so that no Unicode letter, combining mark or
    /// look-alike character can pass as ASCII.
    static func brokenRule(in name: String) -> IdentityError.Rule? {
        // Length first, so a hostile megabyte is refused without being copied.
        let length = name.utf8.count
        if length == 0 { return .empty }
        if length > maximumLength { return .tooLong(length) }
        // A resolution checks some 300 names (every file slot's name, every
        // record's app and vendor): a valid one is confirmed in one pass over
        // its bytes, without copying them; only a broken one is taken apart
        // below to say which rule it breaks.
        if isValidASCII(name.utf8) { return nil }
        let bytes = Array(name.utf8)
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for (index, element) in elements.enumerated() {
            if element.isEmpty {
                return .emptyElement(position: index + 1)
            }
            for scalar in String(decoding: element, as: UTF8.self).unicodeScalars where !isAllowed(scalar) {
                return .invalidCharacter(scalar, element: String(decoding: element, as: UTF8.self))
            }
            if let first = element.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
                return .elementStartsWithDigit(String(decoding: element, as: UTF8.self))
            }
        }
        if elements.count < 2 { return .tooFewElements }
        return nil
    }

    /// Whether `bytes` obey every rule (the length aside): elements of
    /// `[A-Za-z0-9_-]`, none empty or starting with a digit, at least two.
    private static func isValidASCII(_ bytes: String.UTF8View) -> Bool {
        var elements = 1
        var atElementStart = true
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."):
                if atElementStart { return false }
                elements += 1
                atElementStart = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if atElementStart { return false }
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                atElementStart = false
            default:
                return false
            }
        }
        return !atElementStart && elements >= 2
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_", "-": true
        default: false
        }
    }
}

package struct IdentityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the rejected text was meant to be.
    package enum Role: Sendable, Hashable {
        /// An application id such as `com.acme.notes`.
        case app
        /// A vendor such as `com.acme`.
        case vendor
    }

    /// The rule a rejected text breaks.
    package enum Rule: Sendable, Hashable {
        /// The text is empty.
        case empty
        /// The text is longer than `AppIdentity.maximumLength` bytes; the payload is its length.
        case tooLong(Int)
        /// The text has a single element; reverse-DNS needs at least two.
        case tooFewElements
        /// An element is empty (a leading, trailing or doubled `.`); the payload counts from 1.
        case emptyElement(position: Int)
        /// An element starts with a digit.
        case elementStartsWithDigit(String)
        /// A character outside `[A-Za-z0-9_-]`.
        case invalidCharacter(Unicode.Scalar, element: String)
    }

    /// The rejected text.
    package let name: String
    /// What the text was meant to be.
    package let role: Role
    /// The rule it breaks.
    package let rule: Rule

    /// Creates an error for `name` breaking `rule`.
    package init(name: String, role: Role, rule: Rule) {
        self.name = name
        self.role = role
        self.rule = rule
    }

    /// The rejected text, the rule it breaks, and an example of a valid name.
    package var description: String {
        let what = role == .app ? "app id" : "vendor"
        let example = role == .app ? "com.example.App" : "com.example"
        let why: String
        switch rule {
        case .empty:
            why = "it is empty"
        case .tooLong(let length):
            why =
                "it is \(length) bytes long, over the \(AppIdentity.maximumLength)-byte limit "
                + "(the longest file name made from it, <name>.json.corrupt-<ms>-<n>, must fit in 255 bytes)"
        case .tooFewElements:
            why = "it has a single element and needs at least two separated by \".\""
        case .emptyElement(let position):
            why = "element \(position) is empty (a leading, trailing or doubled \".\")"
        case .elementStartsWithDigit(let element):
            why = "element \(quoted(element)) starts with a digit"
        case .invalidCharacter(let scalar, let element):
            why = "element \(quoted(element)) contains \(quoted(String(scalar))), outside A-Z a-z 0-9 _ -"
        }
        return "\(quoted(name)) is not a valid \(what): \(why); use reverse-DNS like \(example)"
    }
}
