/// Why a record was refused: the first rule of docs/PROTOCOL.md §3 it breaks,
/// with its stable token and a message that names the field and the value.
package struct RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong with the record.
    package enum Reason: Sendable, Hashable {
        /// Over `SlotRecord.maximumSize`; the payload is the size in bytes.
        case tooLarge(bytes: Int)
        /// The bytes are not valid UTF-8.
        case invalidUTF8
        /// The text starts with a byte order mark (EF BB BF).
        case byteOrderMark
        /// A raw character U+0000–U+001F inside a string, or one other than
        /// tab, line feed and carriage return between tokens; the payload is its byte offset.
        case controlCharacter(offset: Int)
        /// A backslash escape JSON does not define, bad `\u` digits, or an
        /// unpaired surrogate; the payload is the offset of its backslash.
        case invalidEscape(offset: Int)
        /// A comma right before `}` or `]`; the payload is the comma's offset.
        case trailingComma(offset: Int)
        /// An object names one key twice (compared after unescaping); the payload is the key.
        case duplicateKey(String)
        /// Arrays and objects nested deeper than `SlotRecord.maximumDepth`; the
        /// payload is the offset of the bracket that goes too deep.
        case tooDeep(offset: Int)
        /// The text is not JSON for another reason; the payload says where or why.
        case malformedJSON(String)
        /// Valid JSON, but not an object.
        case notAnObject
        /// A required field is missing.
        case missingField(String)
        /// A field holds the wrong JSON type.
        case wrongType(field: String, expected: String)
        /// An integer field is written with a fraction or an exponent (`1.0`, `1e3`).
        case notWholeNumber(field: String)
        /// An integer field is outside the 64-bit signed range, or `generation` is negative.
        case outOfRange(field: String)
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

        /// The stable token of this reason, such as `duplicate-key`.
        package var token: String {
            switch self {
            case .tooLarge: "too-large"
            case .invalidUTF8: "invalid-utf8"
            case .byteOrderMark: "byte-order-mark"
            case .controlCharacter: "control-character"
            case .invalidEscape: "invalid-escape"
            case .trailingComma: "trailing-comma"
            case .duplicateKey: "duplicate-key"
            case .tooDeep: "too-deep"
            case .malformedJSON: "malformed-json"
            case .notAnObject: "not-an-object"
            case .missingField: "missing-field"
            case .wrongType: "wrong-type"
            case .notWholeNumber: "not-whole-number"
            case .outOfRange: "out-of-range"
            case .unsupportedVersion: "unsupported-version"
            case .invalidIdentifier: "invalid-id"
            case .invalidApp: "invalid-app"
            case .invalidVendor: "invalid-vendor"
            case .tooOld: "too-old"
            case .inFuture: "in-future"
            case .optOutMismatch: "opt-out-mismatch"
            }
        }
    }

    /// What is wrong with the record.
    package let reason: Reason

    /// Creates an error for `reason`.
    package init(_ reason: Reason) {
        self.reason = reason
    }

    /// The reason as a stable token, such as `duplicate-key`, for reports and
    /// test vectors; docs/PROTOCOL.md §3 lists every token.
    package var token: String { reason.token }

    /// The token as the report's `rejected[].code` (docs/PROTOCOL.md §12).
    package var code: Rejection.Code { Rejection.Code(rawValue: token) }

    /// Every token `token` can give, in the order docs/PROTOCOL.md §3 checks them.
    package static let tokens = [
        "too-large", "invalid-utf8", "byte-order-mark", "control-character", "invalid-escape", "trailing-comma",
        "duplicate-key", "too-deep", "malformed-json", "not-an-object", "missing-field", "wrong-type",
        "not-whole-number", "out-of-range", "unsupported-version", "invalid-id", "invalid-app", "invalid-vendor",
        "too-old", "in-future", "opt-out-mismatch"
    ]

    /// "record rejected: " and what is wrong, naming the field and the value.
    package var description: String {
        "record rejected: " + explanation
    }

    private var explanation: String {
        switch reason {
        case .tooLarge(let bytes):
            return "it is \(bytes) bytes, over the \(SlotRecord.maximumSize)-byte cap"
        case .invalidUTF8:
            return "it is not valid UTF-8"
        case .byteOrderMark:
            return "it starts with a byte order mark, which no writer of this format emits"
        case .controlCharacter(let offset):
            return
                "raw control character at offset \(offset) (JSON allows only space, tab, LF and CR between tokens, and none inside strings)"
        case .invalidEscape(let offset):
            return "invalid escape at offset \(offset) (an unknown escape, bad \\u digits or an unpaired surrogate)"
        case .trailingComma(let offset):
            return "trailing comma at offset \(offset), which JSON does not allow"
        case .duplicateKey(let key):
            return "key \(quoted(key)) appears twice in one object"
        case .tooDeep(let offset):
            return "arrays and objects nest deeper than \(SlotRecord.maximumDepth) levels at offset \(offset)"
        case .malformedJSON(let detail):
            return "it is not valid JSON (\(detail))"
        case .notAnObject:
            return "it is JSON but not an object"
        case .missingField(let field):
            return "field \"\(field)\" is missing"
        case .wrongType(let field, let expected):
            return "field \"\(field)\" is not \(expected)"
        case .notWholeNumber(let field):
            return "field \"\(field)\" has a fraction or an exponent; integers are written as plain digits"
        case .outOfRange(let field) where field == "generation":
            return "field \"generation\" is negative or above \(SlotRecord.maximumGeneration), the highest reset generation"
        case .outOfRange(let field):
            return "field \"\(field)\" does not fit in a signed 64-bit integer"
        case .unsupportedVersion(let version):
            return "format version \(version) is not supported (this library reads version \(SlotRecord.currentVersion))"
        case .invalidIdentifier(let error):
            return error.description
        case .invalidApp(let error), .invalidVendor(let error):
            return error.description
        case .tooOld(let field, let milliseconds):
            return "\(field) \(Milliseconds.iso8601(milliseconds)) is before 2010-01-01"
        case .inFuture(let field, let milliseconds, let now):
            return
                "\(field) \(Milliseconds.iso8601(milliseconds)) is more than 24 h after the reader's clock (\(Milliseconds.iso8601(now)))"
        case .optOutMismatch(let optOut):
            return optOut
                ? "optOut is true but id is not all zeros"
                : "id is all zeros (the opt-out value) but optOut is false"
        }
    }
}
