import FoundationEssentials
import Glibc

/// What one app publishes about the shared identifier: the wire format of
/// every slot, file slot, local cache and vendor mirror.
///
/// On the wire a record is a compact UTF-8 JSON object:
///
///     {"app":"com.acme.notes","born":1700000000000,"id":"<40 hex>","optOut":false,"v":1,"vendor":"com.acme","written":1700000000000}
///
/// After the user has reset the identifier, a record also carries the reset
/// generation it belongs to (`"generation":1` after `born`); generation 0,
/// the one before any reset, is not written.
///
/// `v` is the format's major version. A change that old readers can safely
/// ignore adds a field and keeps `v`; readers ignore fields they do not know.
/// A change that old readers must not misread raises `v`, and readers reject
/// any major version they do not know.
public struct SlotRecord: Sendable, Hashable {
    /// The major format version this library reads and writes.
    package static let currentVersion = 1
    /// The largest record accepted, in bytes; larger input is rejected unread.
    package static let maximumSize = 4096
    /// The earliest time a record may carry: 2010-01-01T00:00:00Z, in milliseconds since the epoch.
    ///
    /// Anything earlier is a broken clock or a forgery; OpenUDID did not exist.
    package static let earliestTime: Int64 = 1_262_304_000_000
    /// How far past the reader's clock a record's times may be, in milliseconds (24 hours).
    ///
    /// Generous enough for clocks that disagree by a time zone, strict enough
    /// that a record cannot claim to be from next year.
    package static let futureTolerance: Int64 = 86_400_000
    /// The highest reset generation a record may carry (2^31 − 1).
    ///
    /// A user who reset once a second would need 68 years to reach it; a
    /// record above it is a forgery meant to supersede every later reset, and
    /// it is rejected like any other out-of-range field.
    package static let maximumGeneration: Int64 = 2_147_483_647

    /// The format's major version (`v` on the wire).
    public var version: Int
    /// The identifier, or `Identifier.optedOut` when `optOut` is set.
    public var id: Identifier
    /// The application id of the app that wrote the record.
    public var app: String
    /// The vendor of that app.
    public var vendor: String
    /// When this identifier was first generated, in milliseconds since the
    /// epoch; travels with the identifier from record to record.
    public var born: Int64
    /// When this record was written, in milliseconds since the epoch.
    public var written: Int64
    /// Whether the writing app opted out; if so `id` is all zeros.
    public var optOut: Bool
    /// The user reset generation the identifier belongs to: 0 until the user
    /// first resets the shared identifier, then one more with each reset
    /// (docs/PROTOCOL.md §9). A record of an older generation than the
    /// current one is superseded and casts no ballot.
    public var generation: Int64

    /// Creates a record from its fields, unchecked.
    ///
    /// `parse(_:now:)` is where records are validated; a record built here
    /// with fields it would reject encodes fine but will be rejected by every reader.
    package init(
        version: Int = SlotRecord.currentVersion, id: Identifier, app: String, vendor: String,
        born: Int64, written: Int64, optOut: Bool, generation: Int64 = 0
    ) {
        self.version = version
        self.id = id
        self.app = app
        self.vendor = vendor
        self.born = born
        self.written = written
        self.optOut = optOut
        self.generation = generation
    }

    /// Creates a current-version record of `app` holding `id`.
    ///
    /// - Parameters:
    ///   - id: The identifier; `Identifier.optedOut` makes an opt-out record.
    ///   - app: The writing app; its id and vendor go into the record.
    ///   - born: When `id` was first generated, in milliseconds since the epoch.
    ///   - written: When this record is written, in milliseconds since the epoch.
    ///   - generation: The user reset generation `id` belongs to.
    package init(id: Identifier, app: AppIdentity, born: Int64, written: Int64, generation: Int64 = 0) {
        self.init(
            id: id, app: app.id, vendor: app.vendor, born: born, written: written, optOut: id.isOptedOut, generation: generation)
    }

    /// The record in its canonical encoding (docs/PROTOCOL.md §3).
    ///
    /// Keys in the byte order of their UTF-8 (`generation` only when it is not
    /// 0, so records of the generation before any reset keep the form they
    /// always had), no whitespace, integers in
    /// shortest decimal form, `true`/`false`, and strings without escapes,
    /// since every character a valid record's strings can hold is printable
    /// ASCII other than `"` and `\`. The same record always gives the same
    /// bytes, so a writer can tell whether a place already holds what it
    /// would write, and two implementations produce identical records. A
    /// record with fields no reader accepts still encodes as valid JSON: its
    /// other characters are escaped.
    ///
    /// - Returns: UTF-8 JSON without spaces or a trailing newline.
    package func encoded() -> Data {
        var text = "{"
        text += "\"app\":" + Self.jsonString(app)
        text += ",\"born\":" + String(born)
        if generation != 0 { text += ",\"generation\":" + String(generation) }
        text += ",\"id\":\"" + id.hex + "\""
        text += ",\"optOut\":" + (optOut ? "true" : "false")
        text += ",\"v\":" + String(version)
        text += ",\"vendor\":" + Self.jsonString(vendor)
        text += ",\"written\":" + String(written)
        text += "}"
        return Data(text.utf8)
    }

    private static func jsonString(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
