/// The shared identifier: 160 random bits, written as 40 lowercase hex digits.
///
/// The width and spelling match the original OpenUDID's value so that logs and
/// tools that expect 40 hex digits keep working. The all-zero value is reserved
/// to mean "opted out" and is never generated.
public struct Identifier: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number of bytes in an identifier.
    package static let byteCount = 20

    // Big-endian words: comparing them in order compares the bytes, and
    // therefore the hex text, in order.
    private let high: UInt64
    private let middle: UInt64
    private let low: UInt32

    private init(high: UInt64, middle: UInt64, low: UInt32) {
        self.high = high
        self.middle = middle
        self.low = low
    }

    /// The value an app reports when the user opted out: 40 zeros.
    public static let optedOut = Identifier(high: 0, middle: 0, low: 0)

    /// Whether this is the opt-out value.
    public var isOptedOut: Bool { self == .optedOut }

    /// A new identifier from the system's secure random source.
    ///
    /// On Linux `SystemRandomNumberGenerator` reads `getrandom(2)`, which
    /// blocks only until the kernel's pool is first seeded at boot.
    ///
    /// - Returns: A random identifier that is never the opt-out value.
    public static func random() -> Identifier {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A new identifier drawn from `generator`.
    ///
    /// Meant for tests that need reproducible values; real identifiers come
    /// from `random()`.
    ///
    /// - Parameter generator: The source of random bits.
    /// - Returns: An identifier that is never the opt-out value.
    package static func random<G: RandomNumberGenerator>(using generator: inout G) -> Identifier {
        while true {
            let candidate = Identifier(
                high: generator.next(), middle: generator.next(), low: UInt32(truncatingIfNeeded: generator.next()))
            // A zero draw has probability 2^-160, but the value must stay reserved.
            if !candidate.isOptedOut { return candidate }
        }
    }

    /// Creates an identifier from exactly 20 bytes.
    ///
    /// - Parameter bytes: The bytes, most significant first.
    /// - Returns: `nil` unless `bytes` holds exactly 20 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 0..<8: words.0 = words.0 << 8 | UInt64(byte)
            case 8..<16: words.1 = words.1 << 8 | UInt64(byte)
            default: words.2 = words.2 << 8 | UInt64(byte)
            }
        }
        self.init(high: words.0, middle: words.1, low: UInt32(truncatingIfNeeded: words.2))
    }

    /// Parses the 40-hex-digit text form, strictly.
    ///
    /// Only the exact form this library writes is accepted: 40 characters
    /// from `0-9a-f`. Uppercase, whitespace, prefixes and separators are
    /// rejected, so one identifier has exactly one spelling and two apps can
    /// never count the same value as two different ones.
    ///
    /// - Parameter text: The text to parse.
    /// - Throws: `IdentifierError` saying what is wrong with `text`.
    public init(parsing text: String) throws(IdentifierError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        var pending: UInt8 = 0
        var position = 0
        for scalar in text.unicodeScalars {
            if position == 2 * Self.byteCount {
                throw IdentifierError(text: text, reason: .wrongLength(text.unicodeScalars.count))
            }
            let nibble: UInt8
            switch scalar.value {
            case 0x30...0x39: nibble = UInt8(scalar.value - 0x30)
            case 0x61...0x66: nibble = UInt8(scalar.value - 0x61 + 10)
            default: throw IdentifierError(text: text, reason: .invalidCharacter(offset: position))
            }
            if position % 2 == 0 {
                pending = nibble << 4
            } else {
                bytes.append(pending | nibble)
            }
            position += 1
        }
        guard let parsed = Identifier(bytes: bytes) else {
            throw IdentifierError(text: text, reason: .wrongLength(position))
        }
        self = parsed
    }

    /// The 20 bytes, most significant first.
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(Self.byteCount)
        for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: middle >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: low >> UInt32(shift))) }
        return result
    }

    /// The 40 lowercase hex digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(2 * Self.byteCount)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The 40 lowercase hex digits.
    public var description: String { hex }

    /// Orders identifiers as their hex text orders.
    public static func < (lhs: Identifier, rhs: Identifier) -> Bool {
        (lhs.high, lhs.middle, lhs.low) < (rhs.high, rhs.middle, rhs.low)
    }
}

extension Identifier: Codable {
    /// Decodes the 40-hex-digit text form.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the text is not exactly 40 lowercase hex digits.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try Identifier(parsing: text)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }

    /// Encodes the 40-hex-digit text form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// Why a text is not an identifier.
public struct IdentifierError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the text.
    package enum Reason: Sendable, Hashable {
        /// The text is not 40 characters long; the payload is its length in Unicode scalars.
        case wrongLength(Int)
        /// The character at this offset (counted in Unicode scalars from 0) is not one of `0-9a-f`.
        case invalidCharacter(offset: Int)
    }

    /// The rejected text.
    public let text: String
    /// What is wrong with it.
    package let reason: Reason

    /// Creates an error for `text`.
    package init(text: String, reason: Reason) {
        self.text = text
        self.reason = reason
    }

    /// The rejected text and what is wrong with it.
    public var description: String {
        switch reason {
        case .wrongLength(let length):
            return "\(quoted(text)) is not an identifier: it has \(length) characters, expected 40 lowercase hex digits"
        case .invalidCharacter(let offset):
            return
                "\(quoted(text)) is not an identifier: character \(offset + 1) is not one of 0-9 a-f (identifiers are 40 lowercase hex digits)"
        }
    }
}
