/// Bytes a peer sent, read front to back, where every read first asks whether
/// the bytes are there: a count or length inside the bytes is never trusted to
/// walk past what was received (the gate for replies such as an X server's
/// connection set-up).
///
/// Each read answers nil, and moves nothing, when fewer bytes remain than it
/// needs. Integers are read in the byte order given, the host's by default.
package struct ByteReader {
    private let bytes: [UInt8]
    private let bigEndian: Bool
    /// How many bytes have been read.
    package private(set) var offset = 0

    /// Whether this machine stores integers most significant byte first.
    package static let hostIsBigEndian = 1.bigEndian == 1

    /// A reader of `bytes`, whose integers are in the host's order unless `bigEndian` says otherwise.
    package init(_ bytes: [UInt8], bigEndian: Bool = ByteReader.hostIsBigEndian) {
        self.bytes = bytes
        self.bigEndian = bigEndian
    }

    /// The bytes not read yet.
    package var remaining: Int { bytes.count - offset }

    /// Passes over `count` bytes; false (and nothing passed) when fewer remain.
    @discardableResult
    package mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        offset += count
        return true
    }

    /// The next `count` bytes.
    package mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// The next byte.
    package mutating func uint8() -> UInt8? { take(1)?.first }

    /// The next 16-bit integer.
    package mutating func uint16() -> UInt16? { integer(2).map { UInt16($0) } }

    /// The next 32-bit integer.
    package mutating func uint32() -> UInt32? { integer(4) }

    private mutating func integer(_ size: Int) -> UInt32? {
        guard let slice = take(size) else { return nil }
        let ordered = bigEndian ? Array(slice) : slice.reversed()
        return ordered.reduce(0) { $0 << 8 | UInt32($1) }
    }
}
