import FoundationEssentials

extension SlotRecord {
    /// The record, if `data` is exactly what `encoded()` writes for a record
    /// that passes every check of the general parser; nil for anything else.
    ///
    /// Strings must be printable ASCII without escapes (valid ids, apps and
    /// vendors are), numbers plain JSON integers that fit in 64 bits, and the
    /// fields in `encoded()`'s order with no space. Such input is RFC 8259
    /// text without duplicates, trailing commas or control characters, and
    /// the same checks follow, so both ways agree.
    static func canonical(_ data: Data, now: Date) -> SlotRecord? {
        data.withUnsafeBytes { raw -> SlotRecord? in
            var scanner = CanonicalScanner(bytes: raw)
            guard scanner.take("{\"app\":"), let app = scanner.string(),
                scanner.take(",\"born\":"), let born = scanner.integer()
            else { return nil }
            // `encoded()` writes the generation only when it is not 0.
            var generation: Int64 = 0
            if scanner.take(",\"generation\":") {
                guard let value = scanner.integer(), value > 0, value <= maximumGeneration else { return nil }
                generation = value
            }
            guard scanner.take(",\"id\":"), let idText = scanner.string(),
                scanner.take(",\"optOut\":"), let optOut = scanner.boolean(),
                scanner.take(",\"v\":"), let version = scanner.integer(),
                scanner.take(",\"vendor\":"), let vendor = scanner.string(),
                scanner.take(",\"written\":"), let written = scanner.integer(),
                scanner.take("}"), scanner.isAtEnd
            else { return nil }
            guard version == Int64(currentVersion), let id = try? Identifier(parsing: idText),
                AppIdentity.isValid(app), AppIdentity.isValid(vendor)
            else { return nil }
            let latest = Milliseconds.since1970(now).addingReportingOverflow(futureTolerance)
            let latestTime = latest.overflow ? Int64.max : latest.partialValue
            guard born >= earliestTime, written >= earliestTime, born <= latestTime, written <= latestTime,
                optOut == id.isOptedOut
            else { return nil }
            return SlotRecord(
                version: currentVersion, id: id, app: app, vendor: vendor,
                born: born, written: written, optOut: optOut, generation: generation)
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
            let added =
                negative ? shifted.partialValue.subtractingReportingOverflow(digit) : shifted.partialValue.addingReportingOverflow(digit)
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
