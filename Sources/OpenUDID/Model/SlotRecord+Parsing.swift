import Foundation

extension SlotRecord {
    /// Parses and validates a record read from a slot or a store.
    ///
    /// Every byte may come from a hostile process, so nothing is taken on
    /// trust: the size is capped before parsing, JSON types are checked
    /// exactly (`true` is not a number and `1` is not a boolean), every field
    /// is validated, and unknown fields are ignored. The major version is
    /// checked before the other fields because a later version may define
    /// them differently.
    ///
    /// Where Foundation's parser is lenient (it keeps one value of a
    /// duplicated key and tolerates a trailing comma), the record is validated
    /// as parsed; a writer of this format never produces either.
    ///
    /// - Parameters:
    ///   - data: The record's bytes.
    ///   - now: The reader's clock, which bounds how far in the future `born` and `written` may be.
    /// - Returns: The validated record.
    /// - Throws: `RecordError` saying what is wrong.
    public static func parse(_ data: Data, now: Date = Date()) throws(RecordError) -> SlotRecord {
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
        let bytes = [UInt8](data)
        guard String(validating: bytes, as: UTF8.self) != nil else { throw RecordError(.invalidUTF8) }
        try rejectNonJSONBytes(bytes)

        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "not valid JSON"
            throw RecordError(.malformedJSON(detail))
        }
        guard let object = parsed as? [String: Any] else { throw RecordError(.notAnObject) }

        let version = try integer(object, "v")
        guard version == Int64(currentVersion) else { throw RecordError(.unsupportedVersion(version)) }

        let idText = try string(object, "id")
        let id: Identifier
        do {
            id = try Identifier(parsing: idText)
        } catch {
            throw RecordError(.invalidIdentifier(error))
        }
        let app = try string(object, "app")
        do {
            try AppIdentity.validate(app, as: .app)
        } catch {
            throw RecordError(.invalidApp(error))
        }
        let vendor = try string(object, "vendor")
        do {
            try AppIdentity.validate(vendor, as: .vendor)
        } catch {
            throw RecordError(.invalidVendor(error))
        }

        let nowMilliseconds = Milliseconds.since1970(now)
        let latest = nowMilliseconds.addingReportingOverflow(futureTolerance)
        let latestTime = latest.overflow ? Int64.max : latest.partialValue
        let born = try integer(object, "born")
        let written = try integer(object, "written")
        for (field, value) in [("born", born), ("written", written)] {
            if value < earliestTime { throw RecordError(.tooOld(field: field, milliseconds: value)) }
            if value > latestTime {
                throw RecordError(.inFuture(field: field, milliseconds: value, now: nowMilliseconds))
            }
        }

        let optOut = try boolean(object, "optOut")
        guard optOut == id.isOptedOut else { throw RecordError(.optOutMismatch(optOut: optOut)) }

        return SlotRecord(version: currentVersion, id: id, app: app, vendor: vendor,
                          born: born, written: written, optOut: optOut)
    }

    /// The record, if `data` is exactly what `encoded()` writes for a record
    /// that passes every check of the general parser; nil for anything else.
    ///
    /// Strings must be printable ASCII without escapes (valid ids and vendors
    /// are), numbers plain JSON integers that fit in 64 bits, and the fields
    /// in `encoded()`'s order with no space. For such input JSONSerialization
    /// yields the same values, and the same checks follow, so both ways agree.
    static func canonical(_ data: Data, now: Date) -> SlotRecord? {
        data.withUnsafeBytes { raw -> SlotRecord? in
            var scanner = CanonicalScanner(bytes: raw)
            guard scanner.take("{\"app\":"), let app = scanner.string(),
                  scanner.take(",\"born\":"), let born = scanner.integer(),
                  scanner.take(",\"id\":"), let idText = scanner.string(),
                  scanner.take(",\"optOut\":"), let optOut = scanner.boolean(),
                  scanner.take(",\"v\":"), let version = scanner.integer(),
                  scanner.take(",\"vendor\":"), let vendor = scanner.string(),
                  scanner.take(",\"written\":"), let written = scanner.integer(),
                  scanner.take("}"), scanner.isAtEnd else { return nil }
            guard version == Int64(currentVersion), let id = try? Identifier(parsing: idText),
                  AppIdentity.isValid(app), AppIdentity.isValid(vendor) else { return nil }
            let latest = Milliseconds.since1970(now).addingReportingOverflow(futureTolerance)
            let latestTime = latest.overflow ? Int64.max : latest.partialValue
            guard born >= earliestTime, written >= earliestTime, born <= latestTime, written <= latestTime,
                  optOut == id.isOptedOut else { return nil }
            return SlotRecord(version: currentVersion, id: id, app: app, vendor: vendor,
                              born: born, written: written, optOut: optOut)
        }
    }

    /// Rejects bytes that valid UTF-8 JSON never contains.
    ///
    /// Raw control characters are illegal everywhere in JSON text, and
    /// rejecting them also stops Foundation from sniffing NUL-padded input as
    /// UTF-16 or UTF-32 and parsing it anyway. A byte order mark is refused
    /// because no writer of this format emits one.
    private static func rejectNonJSONBytes(_ bytes: [UInt8]) throws(RecordError) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw RecordError(.malformedJSON("starts with a byte order mark"))
        }
        for (offset, byte) in bytes.enumerated() where byte < 0x20 {
            if byte == 0x09 || byte == 0x0A || byte == 0x0D { continue }
            let hex = String(byte, radix: 16)
            throw RecordError(.malformedJSON("control byte 0x\(hex.count == 1 ? "0" + hex : hex) at offset \(offset)"))
        }
    }

    private static func value(_ object: [String: Any], _ field: String) throws(RecordError) -> Any {
        guard let value = object[field] else { throw RecordError(.missingField(field)) }
        return value
    }

    private static func string(_ object: [String: Any], _ field: String) throws(RecordError) -> String {
        guard let text = try value(object, field) as? String else {
            throw RecordError(.wrongType(field: field, expected: "a string"))
        }
        return text
    }

    /// Foundation represents JSON `true`/`false` as a distinct `NSNumber`
    /// subclass (objCType `c`), and that is the only way to tell `true` from
    /// `1`: `as? Bool` and `as? Int` both succeed on either.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        type(of: number) == type(of: NSNumber(value: true)) || String(cString: number.objCType) == "c"
    }

    private static func boolean(_ object: [String: Any], _ field: String) throws(RecordError) -> Bool {
        guard let number = try value(object, field) as? NSNumber, isBoolean(number) else {
            throw RecordError(.wrongType(field: field, expected: "true or false"))
        }
        return number.boolValue
    }

    private static func integer(_ object: [String: Any], _ field: String) throws(RecordError) -> Int64 {
        let wrongType = RecordError(.wrongType(field: field, expected: "a whole number within 64 bits"))
        guard let number = try value(object, field) as? NSNumber, !isBoolean(number) else { throw wrongType }
        switch String(cString: number.objCType) {
        case "q", "l", "i", "s":
            return number.int64Value
        case "Q", "L", "I", "S", "C":
            let unsigned = number.uint64Value
            guard unsigned <= UInt64(Int64.max) else { throw wrongType }
            return Int64(unsigned)
        case "d", "f":
            // JSON does not distinguish 1 from 1.0 or 1e3; any whole value in range is that integer.
            let real = number.doubleValue
            guard real.isFinite, real == real.rounded(.towardZero),
                  real >= -0x1p63, real < 0x1p63 else { throw wrongType }
            return Int64(real)
        default:
            throw wrongType
        }
    }
}

/// Why a record was rejected.
public struct RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the record.
    public enum Reason: Sendable, Hashable {
        /// Over `SlotRecord.maximumSize`; the payload is the size in bytes.
        case tooLarge(bytes: Int)
        /// The bytes are not valid UTF-8.
        case invalidUTF8
        /// The text is not valid JSON; the payload says where or why.
        case malformedJSON(String)
        /// Valid JSON, but not an object.
        case notAnObject
        /// A required field is missing.
        case missingField(String)
        /// A field holds the wrong JSON type, or a number that is not a whole 64-bit integer.
        case wrongType(field: String, expected: String)
        /// The major version `v` is not one this library reads.
        case unsupportedVersion(Int64)
        /// `id` is not 40 lowercase hex digits.
        case invalidIdentifier(IdentifierError)
        /// `app` is not a valid application id.
        case invalidApp(IdentityError)
        /// `vendor` is not a valid vendor.
        case invalidVendor(IdentityError)
        /// A time field is before `SlotRecord.earliestTime`.
        case tooOld(field: String, milliseconds: Int64)
        /// A time field is more than `SlotRecord.futureTolerance` past the reader's clock (`now`).
        case inFuture(field: String, milliseconds: Int64, now: Int64)
        /// `optOut` and the all-zero `id` disagree; the payload is the `optOut` value found.
        case optOutMismatch(optOut: Bool)
    }

    /// What is wrong with the record.
    public let reason: Reason

    /// Creates an error for `reason`.
    public init(_ reason: Reason) {
        self.reason = reason
    }

    /// "record rejected: " and what is wrong, naming the field and the value.
    public var description: String {
        "record rejected: " + explanation
    }

    private var explanation: String {
        switch reason {
        case .tooLarge(let bytes):
            return "it is \(bytes) bytes, over the \(SlotRecord.maximumSize)-byte cap"
        case .invalidUTF8:
            return "it is not valid UTF-8"
        case .malformedJSON(let detail):
            return "it is not valid JSON (\(quoted(detail, limit: 200)))"
        case .notAnObject:
            return "it is JSON but not an object"
        case .missingField(let field):
            return "field \"\(field)\" is missing"
        case .wrongType(let field, let expected):
            return "field \"\(field)\" is not \(expected)"
        case .unsupportedVersion(let version):
            return "format version \(version) is not supported (this library reads version \(SlotRecord.currentVersion))"
        case .invalidIdentifier(let error):
            return error.description
        case .invalidApp(let error), .invalidVendor(let error):
            return error.description
        case .tooOld(let field, let milliseconds):
            return "\(field) \(Milliseconds.iso8601(milliseconds)) is before 2010-01-01"
        case .inFuture(let field, let milliseconds, let now):
            return "\(field) \(Milliseconds.iso8601(milliseconds)) is more than 24 h after the reader's clock (\(Milliseconds.iso8601(now)))"
        case .optOutMismatch(let optOut):
            return optOut
                ? "optOut is true but id is not all zeros"
                : "id is all zeros (the opt-out value) but optOut is false"
        }
    }
}

/// Reads the fixed shape of an encoded record; every method returns nil (or
/// false) at the first byte that does not fit, without consuming further.
private struct CanonicalScanner {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    var isAtEnd: Bool { position == bytes.count }

    mutating func take(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        for offset in 0..<count where bytes[position + offset] != literal.utf8Start[offset] { return false }
        position += count
        return true
    }

    /// A string of printable ASCII other than `"` and `\`.
    mutating func string() -> String? {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        let start = position + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
            guard (0x20...0x7E).contains(bytes[end]), bytes[end] != UInt8(ascii: "\\") else { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        position = end + 1
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// A JSON integer (no fraction, no exponent, no leading zero) within Int64.
    mutating func integer() -> Int64? {
        var index = position
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        var value: Int64 = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let digit = Int64(bytes[index] - UInt8(ascii: "0"))
            let shifted = value.multipliedReportingOverflow(by: 10)
            let added = negative ? shifted.partialValue.subtractingReportingOverflow(digit) : shifted.partialValue.addingReportingOverflow(digit)
            guard !shifted.overflow, !added.overflow else { return nil }
            value = added.partialValue
            index += 1
        }
        guard index > first, !(bytes[first] == UInt8(ascii: "0") && index - first > 1) else { return nil }
        position = index
        return value
    }

    mutating func boolean() -> Bool? {
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }
}
