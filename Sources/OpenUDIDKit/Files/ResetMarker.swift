import FoundationEssentials
import Glibc
import InputGate

/// The user's reset generation, kept in the file `reset` beside the file slots
/// (`<data>/openudid/reset`, or in the namespace's directory): its decimal
/// number and a line feed (docs/PROTOCOL.md §9).
///
/// Each user reset writes one more than the highest generation known; every
/// record of an older generation is superseded from then on. No file means
/// generation 0, the one before any reset.
package struct ResetMarker: Sendable {
    /// The marker file.
    package let path: String
    /// The file of the latest reset's key, beside the marker (`ResetKey`).
    package let keyPath: String
    /// The directory below which no link is followed.
    package let root: String
    let fileSystem: FileSystem

    /// The largest marker read, in bytes: 19 digits and a line feed.
    static let maximumSize = 20

    package init(paths: StoragePaths, fileSystem: FileSystem = .system) {
        path = paths.resetMarker
        keyPath = paths.resetKey
        root = paths.sharedHome
        self.fileSystem = fileSystem
    }

    /// The generation the marker names: 0 when there is none, or why it cannot be read.
    package func read() -> Result<Int64, StoreUnavailable> {
        switch AtomicFile.read(path, limit: Self.maximumSize, below: root, fileSystem: fileSystem) {
        case .absent: return .success(0)
        case .unavailable(let problem): return .failure(problem)
        case .found(let bytes):
            guard let generation = Self.parse(bytes) else {
                return .failure(StoreUnavailable(.corrupt, "\(quoted(path)) is not a reset generation (a decimal number and a line feed)"))
            }
            return .success(generation)
        }
    }

    /// Whether a marker file exists (readable or not).
    package var exists: Bool { fileSystem.exists(path) }

    /// Writes `generation`, atomically.
    package func write(_ generation: Int64) throws(StoreUnavailable) {
        try AtomicFile.write(Self.encode(generation), to: path, below: root, fileSystem: fileSystem)
    }

    /// Moves a marker that cannot be read aside, so that its bytes are kept.
    package func quarantine(now: Date = Date()) throws(StoreUnavailable) {
        _ = try AtomicFile.quarantine(path, now: now, below: root, fileSystem: fileSystem)
    }

    /// The bytes of a marker naming `generation`.
    package static func encode(_ generation: Int64) -> Data {
        Data((String(generation) + "\n").utf8)
    }

    /// The generation `bytes` name: decimal digits without a leading zero (or
    /// `0` alone), at most `SlotRecord.maximumGeneration`, and an optional final
    /// line feed; nil for anything else. A larger number names no generation: no
    /// record could carry it, and only a planted marker holds one.
    package static func parse(_ bytes: Data) -> Int64? {
        var digits = Array(bytes)
        if digits.last == UInt8(ascii: "\n") { digits.removeLast() }
        guard !digits.isEmpty, digits.count == 1 || digits[0] != UInt8(ascii: "0"),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let generation = Int64(String(decoding: digits, as: UTF8.self)), generation <= SlotRecord.maximumGeneration
        else { return nil }
        return generation
    }
}

/// The key of the user's latest reset: 32 random bytes that `openudid reset`
/// writes to `reset-key` beside the marker, with the generation it belongs to
/// (docs/PROTOCOL.md §9).
///
/// Every identifier of that generation is *bound* to the key: its 20 bytes are
/// the first 20 of HMAC-SHA256(key, "OpenUDID reset <generation> born <born>").
/// Only the user's own processes can read the key, so a client that reaches
/// only the X display cannot serve an identifier of the new generation that
/// binds: it can neither choose the identifier every app moves to after a reset
/// nor carry an old one across it. Any copy of an honest record, wherever it was
/// read, still binds, since the binding covers the identifier and its `born`.
package struct ResetKey: Sendable, Hashable {
    /// The reset generation the key belongs to.
    package let generation: Int64
    /// The 32 key bytes.
    package let bytes: [UInt8]

    /// The number of key bytes.
    package static let byteCount = 32
    /// The largest key file read, in bytes: 10 digits, a space, 64 hex digits and a line feed.
    static let maximumSize = 76

    /// A key made from `bytes`; nil unless there are exactly 32 of them.
    package init?(generation: Int64, bytes: [UInt8]) {
        guard bytes.count == Self.byteCount, generation > 0 else { return nil }
        self.generation = generation
        self.bytes = bytes
    }

    /// A fresh key for `generation` from the system's secure random source.
    package static func random(generation: Int64) -> ResetKey {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        // 32 bytes and a positive generation: the initialiser cannot fail.
        return ResetKey(generation: max(generation, 1), bytes: bytes)!
    }

    /// The identifier of this key's generation born at `born`.
    package func identifier(born: Int64) -> Identifier {
        let message = Array("OpenUDID reset \(generation) born \(born)".utf8)
        var digest = Array(SHA256.hmac(key: bytes, message: message).prefix(Identifier.byteCount))
        // The all-zero identifier means "opted out"; a digest that happens to be
        // zero (one chance in 2^160) is nudged the same way by every app.
        if digest.allSatisfy({ $0 == 0 }) { digest[Identifier.byteCount - 1] = 1 }
        return Identifier(bytes: digest)!
    }

    /// Whether `record` carries an identifier bound to this key: an opted-out
    /// record binds nothing and needs no binding.
    package func binds(_ record: SlotRecord) -> Bool {
        record.optOut || (record.generation == generation && identifier(born: record.born) == record.id)
    }

    /// The key file's bytes: the generation in decimal, a space, the key in
    /// lowercase hex and a line feed.
    package func encoded() -> Data {
        Data((String(generation) + " " + bytes.map { hexDigits(of: $0) }.joined() + "\n").utf8)
    }

    /// The key `bytes` hold, or nil when they are not exactly what `encoded()` writes.
    package static func parse(_ bytes: Data) -> ResetKey? {
        guard let text = String(bytes: bytes, encoding: .utf8), text.hasSuffix("\n") else { return nil }
        let parts = text.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        // The marker's rule takes a final line feed, which the key's generation cannot have.
        guard parts.count == 2, !parts[0].hasSuffix("\n"), let generation = ResetMarker.parse(Data(parts[0].utf8)),
            parts[1].count == byteCount * 2
        else { return nil }
        var key: [UInt8] = []
        var digits = parts[1].utf8.makeIterator()
        while let high = digits.next(), let low = digits.next() {
            guard let h = hexValue(high), let l = hexValue(low) else { return nil }
            key.append(h << 4 | l)
        }
        return ResetKey(generation: generation, bytes: key)
    }

    private func hexDigits(of byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

extension ResetMarker {
    /// What the key file holds: the key with its generation, nothing, or a file
    /// that cannot be used (with why). Every generation's key is read the same
    /// way; which one a vote needs is for `ResetEvidence.binding(of:)` to say.
    package func key() -> (key: ResetEvidence.Key, problem: String?) {
        switch AtomicFile.read(keyPath, limit: ResetKey.maximumSize, below: root, fileSystem: fileSystem) {
        case .absent:
            return (.absent, nil)
        case .unavailable(let problem):
            return (.unusable, problem.message)
        case .found(let bytes):
            guard let key = ResetKey.parse(bytes) else {
                let form = "a generation above 0, a space, 64 lowercase hex digits and a line feed"
                return (.unusable, "\(quoted(keyPath)) is not a reset key (\(form))")
            }
            return (.read(key), nil)
        }
    }

    /// Writes `key`, atomically; a reset does so before it writes the marker.
    package func write(_ key: ResetKey) throws(StoreUnavailable) {
        try AtomicFile.write(key.encoded(), to: keyPath, below: root, fileSystem: fileSystem)
    }

}
