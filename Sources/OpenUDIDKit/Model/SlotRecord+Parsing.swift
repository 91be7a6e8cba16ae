import FoundationEssentials
import Glibc

extension SlotRecord {
    /// The deepest nesting of arrays and objects a record may contain; the
    /// record's own object is level 1.
    ///
    /// Unknown fields may hold any JSON value, but a reader must not be made
    /// to recurse without bound by bytes any process can write.
    package static let maximumDepth = 16

    /// Parses and validates a record read from a slot or a store.
    ///
    /// Every byte may come from a hostile process, so nothing is taken on
    /// trust. The input must be exactly RFC 8259 JSON text in UTF-8 whose top
    /// level is an object, with none of what lenient parsers tolerate and
    /// other languages read differently: no duplicate keys, no trailing
    /// commas, no byte order mark, no raw control characters. Then every field
    /// is checked, in the order docs/PROTOCOL.md §3 gives, so every
    /// implementation reports the same reason (`RecordError.token`) for the
    /// same bytes. Unknown fields are ignored.
    ///
    /// - Parameters:
    ///   - data: The record's bytes.
    ///   - now: The reader's clock, which bounds how far in the future `born` and `written` may be.
    /// - Returns: The validated record.
    /// - Throws: `RecordError` saying what is wrong.
    package static func parse(_ data: Data, now: Date = Date()) throws(RecordError) -> SlotRecord {
        guard data.count <= maximumSize else { throw RecordError(.tooLarge(bytes: data.count)) }
        // Every writer of this format produces one exact shape (`encoded()`), and
        // a reader parses a hundred or more records per resolution. That shape is
        // read directly; anything else, valid or not, takes the general way
        // below, which alone decides what else is accepted and why not.
        if let record = canonical(data, now: now) { return record }
        return try parseGenerally(data, now: now)
    }

    /// The general parser behind `parse(_:now:)`, for any JSON spelling of a record.
    static func parseGenerally(_ data: Data, now: Date) throws(RecordError) -> SlotRecord {
        guard data.count <= maximumSize else { throw RecordError(.tooLarge(bytes: data.count)) }
        let bytes = [UInt8](data)
        guard String(validating: bytes, as: UTF8.self) != nil else { throw RecordError(.invalidUTF8) }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { throw RecordError(.byteOrderMark) }
        var parser = RecordJSONParser(bytes: bytes)
        guard case .object(let fields) = try parser.document() else { throw RecordError(.notAnObject) }

        // The version first: a later major version may define every other field differently.
        let version = try integer(fields, "v")
        guard version == Int64(currentVersion) else { throw RecordError(.unsupportedVersion(version)) }

        let idText = try string(fields, "id")
        let id: Identifier
        do {
            id = try Identifier(parsing: idText)
        } catch {
            throw RecordError(.invalidIdentifier(error))
        }
        let app = try string(fields, "app")
        do {
            try AppIdentity.validate(app, as: .app)
        } catch {
            throw RecordError(.invalidApp(error))
        }
        let vendor = try string(fields, "vendor")
        do {
            try AppIdentity.validate(vendor, as: .vendor)
        } catch {
            throw RecordError(.invalidVendor(error))
        }

        let nowMilliseconds = Milliseconds.since1970(now)
        let latest = nowMilliseconds.addingReportingOverflow(futureTolerance)
        let latestTime = latest.overflow ? Int64.max : latest.partialValue
        func time(_ field: String) throws(RecordError) -> Int64 {
            let value = try integer(fields, field)
            if value < earliestTime { throw RecordError(.tooOld(field: field, milliseconds: value)) }
            if value > latestTime {
                throw RecordError(.inFuture(field: field, milliseconds: value, now: nowMilliseconds))
            }
            return value
        }
        let born = try time("born")
        let written = try time("written")

        let optOut = try boolean(fields, "optOut")

        // Optional: a record written before any reset, or by a writer that
        // predates resets, belongs to generation 0.
        var generation: Int64 = 0
        if fields[Array("generation".utf8)] != nil {
            generation = try integer(fields, "generation")
            guard (0...maximumGeneration).contains(generation) else { throw RecordError(.outOfRange(field: "generation")) }
        }

        guard optOut == id.isOptedOut else { throw RecordError(.optOutMismatch(optOut: optOut)) }

        return SlotRecord(
            version: currentVersion, id: id, app: app, vendor: vendor,
            born: born, written: written, optOut: optOut, generation: generation)
    }

    private static func value(_ fields: [[UInt8]: JSONValue], _ field: String) throws(RecordError) -> JSONValue {
        guard let value = fields[Array(field.utf8)] else { throw RecordError(.missingField(field)) }
        return value
    }

    private static func string(_ fields: [[UInt8]: JSONValue], _ field: String) throws(RecordError) -> String {
        guard case .string(let text) = try value(fields, field) else {
            throw RecordError(.wrongType(field: field, expected: "a string"))
        }
        return text
    }

    private static func boolean(_ fields: [[UInt8]: JSONValue], _ field: String) throws(RecordError) -> Bool {
        guard case .boolean(let flag) = try value(fields, field) else {
            throw RecordError(.wrongType(field: field, expected: "true or false"))
        }
        return flag
    }

    /// An integer field: a JSON number with neither fraction nor exponent, within `Int64`.
    private static func integer(_ fields: [[UInt8]: JSONValue], _ field: String) throws(RecordError) -> Int64 {
        switch try value(fields, field) {
        case .number(.integer(let value)): return value
        case .number(.notWhole): throw RecordError(.notWholeNumber(field: field))
        case .number(.outOfRange): throw RecordError(.outOfRange(field: field))
        default: throw RecordError(.wrongType(field: field, expected: "a whole number written as a JSON integer"))
        }
    }
}

/// A JSON value as the record parser keeps it: what the record's fields need, no more.
enum JSONValue: Equatable {
    /// How a number is written, which is all an integer field needs to know.
    enum Number: Equatable {
        /// No fraction and no exponent, and the value fits in `Int64` (`-0` is 0).
        case integer(Int64)
        /// A fraction or an exponent is present (`1.0`, `1e3`), whatever the value.
        case notWhole
        /// No fraction and no exponent, but outside `Int64`.
        case outOfRange
    }

    case string(String)
    case number(Number)
    case boolean(Bool)
    case null
    case array
    /// The members of the top-level object by the UTF-8 bytes of their
    /// unescaped names; nested objects are checked and dropped.
    ///
    /// Bytes, not `String`, because Swift compares strings by canonical
    /// equivalence, and JSON names that differ in any scalar are different names.
    case object([[UInt8]: JSONValue])
}

/// A strict RFC 8259 parser for one record, which reports the first problem
/// met reading left to right.
///
/// The input has already been checked to be valid UTF-8 without a leading
/// byte order mark. Anything JSON allows is accepted (any value in unknown
/// fields, any escape, any character but the raw controls in strings), and
/// nothing else: whitespace is space, tab, line feed and carriage return only.
struct RecordJSONParser {
    let bytes: [UInt8]
    private var position = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The one JSON value of the text, with nothing but whitespace around it.
    mutating func document() throws(RecordError) -> JSONValue {
        skipWhitespace()
        guard position < bytes.count else { throw RecordError(.malformedJSON("there is no JSON value")) }
        let value = try self.value(depth: 0)
        skipWhitespace()
        guard position == bytes.count else { throw unexpected("after the JSON value") }
        return value
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, Self.isWhitespace(bytes[position]) { position += 1 }
    }

    /// The error for the byte at `position`, outside a string, which does not
    /// fit where it is: a raw control byte is `control-character` whatever was
    /// expected there (an unfinished number or literal too), except whitespace,
    /// which only ends what came before it.
    private func unexpected(_ context: String) -> RecordError {
        guard position < bytes.count else { return RecordError(.malformedJSON("the text ends \(context)")) }
        let byte = bytes[position]
        if byte < 0x20, !Self.isWhitespace(byte) { return RecordError(.controlCharacter(offset: position)) }
        let shown = (0x21...0x7E).contains(byte) ? "\"\(Character(Unicode.Scalar(byte)))\"" : "byte 0x" + Self.hex(byte)
        return RecordError(.malformedJSON("unexpected \(shown) at offset \(position) \(context)"))
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }

    /// One value; `depth` counts the arrays and objects around it.
    private mutating func value(depth: Int) throws(RecordError) -> JSONValue {
        guard position < bytes.count else { throw unexpected("where a value belongs") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        case UInt8(ascii: "t"):
            try literal("true")
            return .boolean(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .boolean(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default: throw unexpected("where a value belongs")
        }
    }

    private mutating func literal(_ word: StaticString) throws(RecordError) {
        let count = word.utf8CodeUnitCount
        for offset in 0..<count {
            guard position + offset < bytes.count, bytes[position + offset] == word.utf8Start[offset] else {
                position += offset
                throw unexpected("in a literal (true, false or null)")
            }
        }
        position += count
    }

    private mutating func enter(_ depth: Int) throws(RecordError) {
        if depth > SlotRecord.maximumDepth { throw RecordError(.tooDeep(offset: position)) }
        position += 1
    }

    private mutating func object(depth: Int) throws(RecordError) -> JSONValue {
        try enter(depth)
        var members: [[UInt8]: JSONValue] = [:]
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                throw unexpected("where a member's name belongs")
            }
            let key = try stringBytes()
            // Keys are compared as the scalars they stand for, after unescaping.
            guard members[key] == nil else { throw RecordError(.duplicateKey(String(decoding: key, as: UTF8.self))) }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw unexpected("where \":\" belongs")
            }
            position += 1
            skipWhitespace()
            let member = try value(depth: depth)
            // Only the record's own fields are needed; nested members are kept
            // as placeholders, for the duplicate check alone.
            members[key] = depth == 1 ? member : .null
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("inside an object") }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return depth == 1 ? .object(members) : .object([:])
            }
            guard bytes[position] == UInt8(ascii: ",") else { throw unexpected("where \",\" or \"}\" belongs") }
            let comma = position
            position += 1
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                throw RecordError(.trailingComma(offset: comma))
            }
        }
    }

    private mutating func array(depth: Int) throws(RecordError) -> JSONValue {
        try enter(depth)
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array
        }
        while true {
            _ = try value(depth: depth)
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("inside an array") }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array
            }
            guard bytes[position] == UInt8(ascii: ",") else { throw unexpected("where \",\" or \"]\" belongs") }
            let comma = position
            position += 1
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                throw RecordError(.trailingComma(offset: comma))
            }
        }
    }

    /// A string, unescaped; `position` is at its opening quote.
    private mutating func string() throws(RecordError) -> String {
        // The input is valid UTF-8 and escapes add only whole scalars.
        String(decoding: try stringBytes(), as: UTF8.self)
    }

    /// The UTF-8 bytes of a string, unescaped; `position` is at its opening quote.
    private mutating func stringBytes() throws(RecordError) -> [UInt8] {
        position += 1
        var text: [UInt8] = []
        while true {
            guard position < bytes.count else { throw unexpected("inside a string") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return text
            case 0x00..<0x20:
                throw RecordError(.controlCharacter(offset: position))
            case UInt8(ascii: "\\"):
                try escape(into: &text)
            default:
                text.append(byte)
                position += 1
            }
        }
    }

    private mutating func escape(into text: inout [UInt8]) throws(RecordError) {
        let start = position
        position += 1
        guard position < bytes.count else { throw brokenEscape(at: position, escapeAt: start) }
        let simple: UInt8? =
            switch bytes[position] {
            case UInt8(ascii: "\""): UInt8(ascii: "\"")
            case UInt8(ascii: "\\"): UInt8(ascii: "\\")
            case UInt8(ascii: "/"): UInt8(ascii: "/")
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            text.append(simple)
            position += 1
            return
        }
        guard bytes[position] == UInt8(ascii: "u") else { throw brokenEscape(at: position, escapeAt: start) }
        position += 1
        let unit = try hexUnit(escapeAt: start)
        let scalar: Unicode.Scalar?
        switch unit {
        case 0xD800...0xDBFF:
            // A high surrogate stands for a character only with the low one right after it.
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\\") else {
                throw brokenEscape(at: position, escapeAt: start)
            }
            guard position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                throw brokenEscape(at: position + 1, escapeAt: start)
            }
            position += 2
            let low = try hexUnit(escapeAt: start)
            guard (0xDC00...0xDFFF).contains(low) else { throw RecordError(.invalidEscape(offset: start)) }
            scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        case 0xDC00...0xDFFF:
            throw RecordError(.invalidEscape(offset: start))
        default:
            scalar = Unicode.Scalar(unit)
        }
        guard let scalar else { throw RecordError(.invalidEscape(offset: start)) }
        text.append(contentsOf: String(scalar).utf8)
    }

    /// Four hex digits, either case.
    private mutating func hexUnit(escapeAt start: Int) throws(RecordError) -> UInt32 {
        var unit: UInt32 = 0
        for index in position..<position + 4 {
            let digit: UInt8? =
                switch index < bytes.count ? bytes[index] : 0 {
                case let byte where Self.isDigit(byte): byte - UInt8(ascii: "0")
                case let byte where (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte): byte - UInt8(ascii: "a") + 10
                case let byte where (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte): byte - UInt8(ascii: "A") + 10
                default: nil
                }
            guard let digit else { throw brokenEscape(at: index, escapeAt: start) }
            unit = unit << 4 | UInt32(digit)
        }
        position += 4
        return unit
    }

    /// The error for the byte at `index`, which breaks the escape that starts
    /// at `start`: the end of the text is `malformed-json` and a raw control
    /// byte `control-character`, as anywhere in a string (docs/PROTOCOL.md §3).
    private func brokenEscape(at index: Int, escapeAt start: Int) -> RecordError {
        guard index < bytes.count else { return RecordError(.malformedJSON("the text ends inside an escape")) }
        if bytes[index] < 0x20 { return RecordError(.controlCharacter(offset: index)) }
        return RecordError(.invalidEscape(offset: start))
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private func digit(at index: Int) -> Bool {
        index < bytes.count && Self.isDigit(bytes[index])
    }

    /// A number in RFC 8259's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(RecordError) -> JSONValue.Number {
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard digit(at: position) else { throw unexpected("where a digit belongs") }
        let integerStart = position
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if digit(at: position) {
                throw RecordError(.malformedJSON("number with a leading zero at offset \(integerStart)"))
            }
        } else {
            while digit(at: position) { position += 1 }
        }
        let integerEnd = position
        var whole = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digit(at: position) else { throw unexpected("where a digit of the fraction belongs") }
            while digit(at: position) { position += 1 }
            whole = false
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digit(at: position) else { throw unexpected("where a digit of the exponent belongs") }
            while digit(at: position) { position += 1 }
            whole = false
        }
        guard whole else { return .notWhole }
        var value: Int64 = 0
        for byte in bytes[integerStart..<integerEnd] {
            let digit = Int64(byte - UInt8(ascii: "0"))
            let shifted = value.multipliedReportingOverflow(by: 10)
            let added =
                negative
                ? shifted.partialValue.subtractingReportingOverflow(digit)
                : shifted.partialValue.addingReportingOverflow(digit)
            guard !shifted.overflow, !added.overflow else { return .outOfRange }
            value = added.partialValue
        }
        return .integer(value)
    }
}
