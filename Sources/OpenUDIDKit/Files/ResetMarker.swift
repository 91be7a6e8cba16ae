import FoundationEssentials
import Glibc

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
    /// The directory below which no link is followed.
    package let root: String
    let fileSystem: FileSystem

    /// The largest marker read, in bytes: 19 digits and a line feed.
    static let maximumSize = 20

    package init(paths: StoragePaths, fileSystem: FileSystem = .system) {
        path = paths.resetMarker
        root = paths.dataHome
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
    /// `0` alone), within 64 bits, and an optional final line feed; nil for anything else.
    package static func parse(_ bytes: Data) -> Int64? {
        var digits = Array(bytes)
        if digits.last == UInt8(ascii: "\n") { digits.removeLast() }
        guard !digits.isEmpty, digits.count == 1 || digits[0] != UInt8(ascii: "0"),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int64(String(decoding: digits, as: UTF8.self))
    }
}
