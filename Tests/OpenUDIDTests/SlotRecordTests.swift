import Foundation
import Testing

@testable import OpenUDIDKit

/// A fixed reader clock: 2024-01-01T00:00:00Z.
let testNow = Date(timeIntervalSince1970: 1_704_067_200)
let testNowMilliseconds: Int64 = 1_704_067_200_000

func sampleRecord(
    id: Identifier = Identifier.random(), app: String = "com.acme.notes",
    born: Int64 = 1_700_000_000_000, written: Int64 = 1_700_000_500_000
) -> SlotRecord {
    SlotRecord(id: id, app: app, vendor: "com.acme", born: born, written: written, optOut: id.isOptedOut)
}

/// Parses `json` with the fixed clock and returns why it was rejected, or `nil` if it was accepted.
func rejection(_ json: String) -> RecordError.Reason? {
    do {
        _ = try SlotRecord.parse(Data(json.utf8), now: testNow)
        return nil
    } catch {
        return error.reason
    }
}

/// A valid record's JSON with `field` replaced by the raw JSON `value` (or removed when `nil`).
func json(replacing field: String, with value: String?) -> String {
    var fields: [String: String] = [
        "v": "1", "id": "\"\(String(repeating: "ab", count: 20))\"", "app": "\"com.acme.notes\"",
        "vendor": "\"com.acme\"", "born": "1700000000000", "written": "1700000000000", "optOut": "false"
    ]
    fields[field] = value
    return "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
}

@Suite struct SlotRecordTests {
    @Test func encodesCompactJSONWithSortedKeys() throws {
        let id = try Identifier(parsing: "00112233445566778899aabbccddeeff00112233")
        let record = sampleRecord(id: id, born: 1_700_000_000_000, written: 1_700_000_000_123)
        let text = String(decoding: record.encoded(), as: UTF8.self)
        #expect(
            text
                == #"{"app":"com.acme.notes","born":1700000000000,"id":"00112233445566778899aabbccddeeff00112233","optOut":false,"v":1,"vendor":"com.acme","written":1700000000123}"#
        )
    }

    @Test func encodingMatchesFoundationsSortedKeys() throws {
        // Another implementation serializing with sorted keys must produce the same bytes.
        let record = sampleRecord()
        let object: [String: Any] = [
            "app": record.app, "born": record.born, "id": record.id.hex, "optOut": record.optOut,
            "v": record.version, "vendor": record.vendor, "written": record.written
        ]
        let foundation = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        #expect(record.encoded() == foundation)
    }

    @Test func escapesHostileStringsIntoValidJSON() throws {
        let hostile = "a\"b\\c\n\u{1}\u{1f}/é\u{2028}"
        let record = SlotRecord(id: .random(), app: hostile, vendor: hostile, born: 0, written: 0, optOut: false)
        let object = try #require(try JSONSerialization.jsonObject(with: record.encoded()) as? [String: Any])
        #expect(object["app"] as? String == hostile)
        #expect(object["vendor"] as? String == hostile)
    }

    @Test func roundTrips() throws {
        for record in [
            sampleRecord(), sampleRecord(id: .optedOut),
            sampleRecord(born: SlotRecord.earliestTime, written: testNowMilliseconds + SlotRecord.futureTolerance)
        ] {
            #expect(try SlotRecord.parse(record.encoded(), now: testNow) == record)
        }
    }

    @Test func convenienceInitTakesAppAndVendorFromTheIdentity() throws {
        let app = try AppIdentity("com.acme.notes", vendor: "com.acme.suite")
        let record = SlotRecord(id: .optedOut, app: app, born: 1, written: 2)
        #expect(record.app == "com.acme.notes")
        #expect(record.vendor == "com.acme.suite")
        #expect(record.optOut)
        #expect(record.version == 1)
    }

    @Test func ignoresUnknownFields() throws {
        let text = json(replacing: "extra", with: #"{"nested":[1,2,{"x":null}]}"#)
        #expect(rejection(text) == nil)
        let record = try SlotRecord.parse(Data(text.utf8), now: testNow)
        #expect(record.app == "com.acme.notes")
    }

    @Test func acceptsJSONWhitespaceAndEscapes() throws {
        #expect(rejection(" \n\t" + json(replacing: "v", with: "1").replacingOccurrences(of: ",", with: " ,\r\n") + "\r\n") == nil)
        let escaped = json(replacing: "app", with: #""com.acme.n\u006Ftes""#)
        let record = try SlotRecord.parse(Data(escaped.utf8), now: testNow)
        #expect(record.app == "com.acme.notes")
    }

    @Test(arguments: ["1700000000000.0", "1.7e12", "17e11", "1700000000000E0", "1.7E+12"])
    func rejectsIntegersWrittenWithAFractionOrExponent(text: String) {
        // Whole in value, but not an integer in form: the format has one spelling per number.
        #expect(rejection(json(replacing: "born", with: text)) == .notWholeNumber(field: "born"))
    }

    @Test func rejectsDuplicateKeysAnywhereComparedAfterUnescaping() {
        let base = json(replacing: "v", with: "1")
        #expect(rejection(String(base.dropLast()) + #","id":"\#(String(repeating: "cd", count: 20))"}"#) == .duplicateKey("id"))
        #expect(rejection(String(base.dropLast()) + #","\u0076":1}"#) == .duplicateKey("v"))
        #expect(rejection(json(replacing: "extra", with: #"[{"a":1,"b":2,"a":3}]"#)) == .duplicateKey("a"))
        // Keys are compared as scalars, unnormalised: two spellings of "é" are two keys.
        #expect(rejection(json(replacing: "extra", with: #"{"\u00e9":1,"e\u0301":2}"#)) == nil)
    }

    @Test func rejectsTrailingCommas() {
        let base = json(replacing: "v", with: "1")
        #expect(rejection(String(base.dropLast()) + ",}") == .trailingComma(offset: base.utf8.count - 1))
        #expect(rejection(String(base.dropLast()) + ", \n}")?.token == "trailing-comma")
        #expect(rejection(json(replacing: "extra", with: "[1,2,]"))?.token == "trailing-comma")
        #expect(rejection(json(replacing: "extra", with: "[1,,2]"))?.token == "malformed-json")
    }

    @Test func tokensAreStableAndListed() {
        #expect(RecordError(.duplicateKey("v")).token == "duplicate-key")
        #expect(RecordError(.notWholeNumber(field: "born")).token == "not-whole-number")
        #expect(Set(RecordError.tokens).count == RecordError.tokens.count)
        for token in RecordError.tokens {
            #expect(token.allSatisfy { $0.isLowercase || $0 == "-" || $0.isNumber }, "\(token)")
        }
    }

    static let wrongTypes: [(String, String, String)] = [
        ("born", "true", "a whole number written as a JSON integer"),
        ("born", "false", "a whole number written as a JSON integer"),
        ("written", "\"1700000000000\"", "a whole number written as a JSON integer"),
        ("born", "null", "a whole number written as a JSON integer"),
        ("born", "[1700000000000]", "a whole number written as a JSON integer"),
        ("v", "true", "a whole number written as a JSON integer"),
        ("v", "\"1\"", "a whole number written as a JSON integer"),
        ("optOut", "0", "true or false"),
        ("optOut", "1", "true or false"),
        ("optOut", "\"false\"", "true or false"),
        ("optOut", "null", "true or false"),
        ("id", "null", "a string"),
        ("id", "12", "a string"),
        ("app", "[\"com.acme.notes\"]", "a string"),
        ("vendor", "{}", "a string")
    ]

    @Test(arguments: wrongTypes)
    func rejectsWrongTypes(field: String, value: String, expected: String) {
        #expect(rejection(json(replacing: field, with: value)) == .wrongType(field: field, expected: expected))
    }

    @Test(arguments: ["9223372036854775808", "18446744073709551615", "-9223372036854775809", "1" + String(repeating: "0", count: 400)])
    func rejectsIntegersOutside64Bits(text: String) {
        #expect(rejection(json(replacing: "born", with: text)) == .outOfRange(field: "born"))
    }

    @Test(arguments: ["v", "id", "app", "vendor", "born", "written", "optOut"])
    func rejectsAMissingField(field: String) {
        #expect(rejection(json(replacing: field, with: nil)) == .missingField(field))
    }

    @Test(arguments: [(Int64(2), "2"), (0, "0"), (0, "-0"), (-1, "-1")])
    func rejectsUnknownMajorVersions(version: Int64, text: String) {
        #expect(rejection(json(replacing: "v", with: text)) == .unsupportedVersion(version))
    }

    @Test func checksTheVersionBeforeAnythingElse() {
        // A future major version may rename or retype every other field.
        #expect(rejection(#"{"v":2,"id":7}"#) == .unsupportedVersion(2))
        #expect(rejection(#"{"id":"x","v":3}"#) == .unsupportedVersion(3))
    }

    @Test func rejectsBadIdentifiersAppsAndVendors() {
        let upper = String(repeating: "AB", count: 20)
        #expect(
            rejection(json(replacing: "id", with: "\"\(upper)\""))
                == .invalidIdentifier(IdentifierError(text: upper, reason: .invalidCharacter(offset: 0))))
        #expect(
            rejection(json(replacing: "app", with: #""1acme.notes""#))
                == .invalidApp(IdentityError(name: "1acme.notes", role: .app, rule: .elementStartsWithDigit("1acme"))))
        #expect(
            rejection(json(replacing: "vendor", with: #""acme""#))
                == .invalidVendor(IdentityError(name: "acme", role: .vendor, rule: .tooFewElements)))
        #expect(rejection(json(replacing: "app", with: #""../../x.y""#)) != nil)
    }

    @Test func boundsTimesBetween2010AndADayAfterTheReadersClock() {
        let earliest = SlotRecord.earliestTime
        let latest = testNowMilliseconds + SlotRecord.futureTolerance
        for field in ["born", "written"] {
            #expect(rejection(json(replacing: field, with: String(earliest))) == nil)
            #expect(rejection(json(replacing: field, with: String(earliest - 1))) == .tooOld(field: field, milliseconds: earliest - 1))
            #expect(rejection(json(replacing: field, with: String(latest))) == nil)
            #expect(
                rejection(json(replacing: field, with: String(latest + 1)))
                    == .inFuture(field: field, milliseconds: latest + 1, now: testNowMilliseconds))
            #expect(rejection(json(replacing: field, with: "-9223372036854775808")) == .tooOld(field: field, milliseconds: .min))
            #expect(
                rejection(json(replacing: field, with: "9223372036854775807"))
                    == .inFuture(field: field, milliseconds: .max, now: testNowMilliseconds))
        }
    }

    @Test func optOutAndTheAllZeroIdentifierGoTogether() {
        let zeros = "\"\(String(repeating: "0", count: 40))\""
        #expect(rejection(json(replacing: "optOut", with: "true")) == .optOutMismatch(optOut: true))
        #expect(rejection(json(replacing: "id", with: zeros)) == .optOutMismatch(optOut: false))
        let optedOut = json(replacing: "id", with: zeros).replacingOccurrences(of: "\"optOut\":false", with: "\"optOut\":true")
        #expect(rejection(optedOut) == nil)
    }

    @Test func rejectsOversizedInputUnparsed() {
        let padded = { (size: Int) -> String in
            let base = json(replacing: "pad", with: "\"\"")
            let filler = String(repeating: "x", count: size - base.utf8.count)
            return json(replacing: "pad", with: "\"\(filler)\"")
        }
        #expect(padded(4096).utf8.count == 4096)
        #expect(rejection(padded(4096)) == nil)
        #expect(rejection(padded(4097)) == .tooLarge(bytes: 4097))
        // Too large is decided on size alone, before any parsing.
        #expect(rejection(String(repeating: "[", count: 1_000_000)) == .tooLarge(bytes: 1_000_000))
    }

    @Test func rejectsBytesThatAreNotUTF8JSON() throws {
        let valid = Array(json(replacing: "v", with: "1").utf8)
        #expect(rejection(bytes: [0xff, 0xfe] + valid) == .invalidUTF8)
        #expect(rejection(bytes: valid + [0xc3]) == .invalidUTF8)
        #expect(rejection(bytes: [0xEF, 0xBB, 0xBF] + valid) == .byteOrderMark)
        // UTF-16LE of a valid record is valid UTF-8 full of NULs; the format is UTF-8 only.
        let utf16 = json(replacing: "v", with: "1").utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }
        #expect(rejection(bytes: utf16) == .controlCharacter(offset: 1))
        #expect(rejection(bytes: valid + [0]) == .controlCharacter(offset: valid.count))
        #expect(rejection(bytes: valid + [0x0C]) == .controlCharacter(offset: valid.count))
    }

    @Test(arguments: [
        "", "{", "{}x", "{\"v\" 1}", "nul", "{\"v\":01}", "{\"v\":1.}", "{\"v\":.5}", "{\"v\":+1}", "{\"v\":1}\u{A0}", "{'v':1}"
    ])
    func rejectsMalformedJSON(text: String) {
        guard case .malformedJSON = rejection(text) else {
            Issue.record("\(text) gave \(String(describing: rejection(text)))")
            return
        }
    }

    @Test(arguments: ["[]", "[{}]", "1", "\"v\"", "null", "true"])
    func rejectsJSONThatIsNotAnObject(text: String) {
        #expect(rejection(text) == .notAnObject)
    }

    @Test func neverCrashesOnDeepNesting() {
        for opener in ["[", "{\"a\":"] {
            let text = String(repeating: opener, count: 4096 / opener.utf8.count)
            #expect(rejection(text) != nil)
        }
        let levels = SlotRecord.maximumDepth - 1
        let deepest = json(replacing: "deep", with: String(repeating: "[", count: levels) + String(repeating: "]", count: levels))
        #expect(rejection(deepest) == nil)
        let tooDeep = json(replacing: "deep", with: String(repeating: "[", count: levels + 1) + String(repeating: "]", count: levels + 1))
        #expect(rejection(tooDeep)?.token == "too-deep")
    }

    @Test func survivesRandomAndMutatedInput() throws {
        var generator = SeededRandom.announced("survivesRandomAndMutatedInput")
        let valid = Array(sampleRecord().encoded())
        var accepted = 0
        for round in 0..<6000 {
            var bytes: [UInt8]
            if round < 2000 {
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else if round < 3000 {
                // Random text over the JSON alphabet reaches deeper into the parser than random bytes.
                let alphabet = Array(#"{}[]":,0123456789.eE+-truefalsnl \"#.utf8)
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? 0 }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let position = Int.random(in: 0..<max(bytes.count, 1), using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                    case 1 where !bytes.isEmpty: bytes.remove(at: position)
                    case 2: bytes.insert(UInt8.random(in: 0x20...0x7e, using: &generator), at: min(position, bytes.count))
                    default: bytes = Array(bytes.prefix(position))
                    }
                }
            }
            do {
                let record = try SlotRecord.parse(Data(bytes), now: testNow)
                accepted += 1
                // Whatever is accepted is a fully valid record that survives re-encoding.
                #expect(try SlotRecord.parse(record.encoded(), now: testNow) == record)
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
        #expect(accepted < 6000)
    }

    @Test func theShortcutForEncodedRecordsAgreesWithTheGeneralParser() throws {
        var generator = SeededRandom.announced("theShortcutForEncodedRecordsAgreesWithTheGeneralParser")
        func outcome(_ result: () throws(RecordError) -> SlotRecord) -> Result<SlotRecord, RecordError> {
            do { return .success(try result()) } catch { return .failure(error) }
        }
        let apps = ["com.acme.notes", "org.x.y-z_9", "a.b", String(repeating: "q", count: 60) + ".app"]
        var inputs: [Data] = []
        for _ in 0..<300 {
            let id: Identifier = Int.random(in: 0..<10, using: &generator) == 0 ? .optedOut : .random()
            let born = Int64.random(
                in: SlotRecord.earliestTime - 5...testNowMilliseconds + SlotRecord.futureTolerance + 5, using: &generator)
            let record = SlotRecord(
                id: id, app: apps.randomElement(using: &generator)!, vendor: "com.acme", born: born,
                written: testNowMilliseconds, optOut: id.isOptedOut)
            let encoded = record.encoded()
            inputs.append(encoded)
            // One byte changed, dropped or doubled, anywhere.
            var bytes = [UInt8](encoded)
            let at = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes.remove(at: at)
            default: bytes.insert(bytes[at], at: at)
            }
            inputs.append(Data(bytes))
        }
        // Valid records the shortcut must leave to the general parser, and near misses.
        let canonical = String(decoding: sampleRecord(id: .random()).encoded(), as: UTF8.self)
        for variant in [
            canonical.replacingOccurrences(of: ",", with: ", "),
            canonical.replacingOccurrences(of: "\"born\":", with: "\"born\":0"),
            canonical.replacingOccurrences(of: "\"v\":1", with: "\"v\":1.0"),
            canonical.replacingOccurrences(of: "\"v\":1", with: "\"v\":1e0"),
            canonical.replacingOccurrences(of: "\"v\":1", with: "\"v\":-0"),
            canonical.replacingOccurrences(of: "com.acme.notes", with: "com.acme.n\\u006ftes"),
            canonical.replacingOccurrences(of: "}", with: ",\"extra\":[1,{}]}"),
            canonical.replacingOccurrences(of: "1700000000000", with: "99999999999999999999"),
            canonical + " ", " " + canonical
        ] {
            inputs.append(Data(variant.utf8))
        }
        var shortcutTaken = 0
        for input in inputs {
            let fast = outcome { () throws(RecordError) in try SlotRecord.parse(input, now: testNow) }
            let general = outcome { () throws(RecordError) in try SlotRecord.parseGenerally(input, now: testNow) }
            #expect(fast == general, "\(String(decoding: input, as: UTF8.self))")
            if SlotRecord.canonical(input, now: testNow) != nil { shortcutTaken += 1 }
        }
        // The shortcut did serve the valid encoded records (most of the unmutated ones).
        #expect(shortcutTaken > 150)
        // A reader clock before 2010 accepts nothing, and does not trap.
        #expect(SlotRecord.canonical(sampleRecord().encoded(), now: Date(timeIntervalSince1970: 0)) == nil)
    }

    @Test func messagesNameTheFieldAndTheValue() throws {
        let old = json(replacing: "born", with: "946598400000")
        do {
            _ = try SlotRecord.parse(Data(old.utf8), now: testNow)
            Issue.record("accepted a 1999 birth")
        } catch {
            #expect(error.description == "record rejected: born 1999-12-31T00:00:00.000Z is before 2010-01-01")
        }
        #expect(RecordError(.tooLarge(bytes: 9000)).description == "record rejected: it is 9000 bytes, over the 4096-byte cap")
        #expect(
            RecordError(.wrongType(field: "optOut", expected: "true or false")).description
                == "record rejected: field \"optOut\" is not true or false")
        #expect(RecordError(.unsupportedVersion(2)).description.contains("version 2"))
    }
}

/// Parses raw bytes with the fixed clock and returns why they were rejected.
func rejection(bytes: [UInt8]) -> RecordError.Reason? {
    do {
        _ = try SlotRecord.parse(Data(bytes), now: testNow)
        return nil
    } catch {
        return error.reason
    }
}

@Suite struct MillisecondsTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (1_262_304_000_000, "2010-01-01T00:00:00.000Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_709_210_096_789, "2024-02-29T12:34:56.789Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z")
    ])
    func formatsISO8601(milliseconds: Int64, text: String) {
        #expect(Milliseconds.iso8601(milliseconds) == text)
    }

    @Test func formatsEveryInt64WithoutTrapping() {
        for value in [Int64.min, .min + 1, .max, .max - 1, -62_135_596_800_001] {
            #expect(Milliseconds.iso8601(value).hasSuffix("Z"))
        }
    }

    @Test func agreesWithFoundationOverTheUsefulRange() {
        // Whole seconds only: Foundation's fractional output suffers binary rounding.
        var generator = SeededRandom.announced("agreesWithFoundationOverTheUsefulRange")
        for _ in 0..<500 {
            let seconds = Int64.random(in: 0...4_102_444_800, using: &generator)
            let expected = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle())
            #expect(Milliseconds.iso8601(seconds * 1000) == expected.dropLast() + ".000Z")
        }
    }

    @Test func convertsDatesAndClampsTheExtremes() {
        #expect(Milliseconds.since1970(testNow) == testNowMilliseconds)
        #expect(Milliseconds.since1970(Date(timeIntervalSince1970: 1e300)) == .max)
        #expect(Milliseconds.since1970(Date(timeIntervalSince1970: -1e300)) == .min)
        #expect(Milliseconds.since1970(Date(timeIntervalSince1970: .nan)) == 0)
    }
}
