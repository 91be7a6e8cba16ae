import InputGate

/// What this library takes from an X server's accepted connection set-up,
/// checked before anything uses it.
///
/// The reply is the first thing a server sends, and a process listening on the
/// display's socket can send anything: 255 screens and a vendor string of
/// 65,535 bytes in a reply of a few bytes. Every count and length in it is
/// therefore checked against the bytes that arrived (`ByteReader`), the whole
/// structure is walked once here, and only a reply that holds together is
/// handed to libxcb, whose own iterators trust it. The layout is the core
/// protocol's connection set-up (X11 protocol, section 8).
struct SetUpReply: Equatable {
    /// The bits of a resource id that a client chooses.
    var resourceMask: UInt32
    /// The largest request the server takes, in 4-byte units.
    var maximumRequestLength: UInt16
    /// The root window of each screen, in order.
    var roots: [UInt32]

    /// The fixed part that follows the 8-byte header, before the vendor string.
    private static let fixedLength = 32
    private static let formatLength = 8
    private static let screenLength = 40
    private static let depthLength = 8
    private static let visualLength = 24

    /// Checks the whole reply `bytes` (header included) of a server that accepted the connection.
    ///
    /// - Returns: What the library needs of it, or a sentence saying what does not hold together.
    static func parse(_ bytes: [UInt8]) -> Result<SetUpReply, SetUpProblem> {
        var reader = ByteReader(bytes)
        // The header: status, unused, protocol version (2 + 2), the length of the rest in 4-byte units.
        guard reader.skip(6), let units = reader.uint16() else { return .failure(SetUpProblem("it is shorter than its header")) }
        guard bytes.count == 8 + 4 * Int(units) else {
            return .failure(SetUpProblem("it announces \(8 + 4 * Int(units)) bytes and holds \(bytes.count)"))
        }
        // release, resource-id base, mask, motion buffer size
        guard reader.skip(8), let mask = reader.uint32(), reader.skip(4), let vendorLength = reader.uint16(),
            let maximum = reader.uint16(), let screenCount = reader.uint8(), let formatCount = reader.uint8(),
            reader.skip(Self.fixedLength - 22)
        else { return .failure(SetUpProblem("it is shorter than its fixed part")) }
        guard mask != 0 else { return .failure(SetUpProblem("its resource-id mask is 0")) }
        guard maximum > 0 else { return .failure(SetUpProblem("its maximum request length is 0")) }
        guard reader.skip(Int(vendorLength) + padding(Int(vendorLength))) else {
            return .failure(SetUpProblem("its vendor string of \(vendorLength) bytes runs past the reply"))
        }
        guard reader.skip(Int(formatCount) * Self.formatLength) else {
            return .failure(SetUpProblem("its \(formatCount) pixmap formats run past the reply"))
        }
        var roots: [UInt32] = []
        for screen in 0..<Int(screenCount) {
            guard let root = reader.uint32(), reader.skip(Self.screenLength - 5), let depthCount = reader.uint8() else {
                return .failure(SetUpProblem("screen \(screen) of \(screenCount) runs past the reply"))
            }
            for depth in 0..<Int(depthCount) {
                guard reader.skip(2), let visualCount = reader.uint16(), reader.skip(Self.depthLength - 4),
                    reader.skip(Int(visualCount) * Self.visualLength)
                else { return .failure(SetUpProblem("depth \(depth) of screen \(screen) runs past the reply")) }
            }
            roots.append(root)
        }
        return .success(SetUpReply(resourceMask: mask, maximumRequestLength: maximum, roots: roots))
    }

    private static func padding(_ length: Int) -> Int { (4 - length % 4) % 4 }
}

/// Why a set-up reply cannot be used, in a clause: "screen 3 of 255 runs past the reply".
struct SetUpProblem: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
