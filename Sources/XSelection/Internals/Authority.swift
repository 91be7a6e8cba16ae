import CX11
import FoundationEssentials
import Glibc
import InputGate

/// The authorization the X server expects, from `$XAUTHORITY` or
/// `~/.Xauthority`, found as libXau finds it.
///
/// The file passes the gate (`FileGate`) first: libXau would open it with
/// `fopen`, which waits for ever on a FIFO planted at the path. A link there
/// is followed, as every X client follows it (display managers link it), but
/// only to a regular file. Its entries are then read by libXau's own reader
/// from the bytes in memory.
enum Authority {
    /// How the authority file names a server.
    struct Address {
        var family: UInt16
        var bytes: [UInt8]

        static func local(_ hostName: String) -> Address { Address(family: 256, bytes: Array(hostName.utf8)) }

        /// The address of a TCP server; a loopback one is named like a local one.
        init(socketAddress: UnsafeMutablePointer<sockaddr>, hostName: String) {
            if socketAddress.pointee.sa_family == sa_family_t(AF_INET) {
                let address = UnsafeRawPointer(socketAddress).load(as: sockaddr_in.self).sin_addr.s_addr
                let bytes = withUnsafeBytes(of: address) { Array($0) }
                self = bytes[0] == 127 ? .local(hostName) : Address(family: 0, bytes: bytes)
            } else {
                let address = UnsafeRawPointer(socketAddress).load(as: sockaddr_in6.self).sin6_addr
                let bytes = withUnsafeBytes(of: address) { Array($0) }
                self = bytes == [UInt8](repeating: 0, count: 15) + [1] ? .local(hostName) : Address(family: 6, bytes: bytes)
            }
        }

        init(family: UInt16, bytes: [UInt8]) {
            self.family = family
            self.bytes = bytes
        }
    }

    /// An authorization protocol's name and its data.
    struct Cookie: Equatable {
        var name: String
        var data: [UInt8]
    }

    /// The protocol both libxcb and this library speak.
    private static let protocolName = "MIT-MAGIC-COOKIE-1"
    /// The largest authority file read. A user's holds a few entries of some
    /// dozens of bytes; display managers that never prune stay far below this.
    static let fileLimit = 1 << 20

    /// The cookie for display `number` of the server at `address`, if the
    /// authority file holds one; with why the file could not be used, if so.
    static func cookie(
        for address: Address, number: String, deadline: ContinuousClock.Instant,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (cookie: Cookie?, problem: String?) {
        let named = environment["XAUTHORITY"].flatMap { $0.isEmpty ? nil : $0 }
        guard let path = named ?? environment["HOME"].map({ "\($0)/.Xauthority" }) else { return (nil, nil) }
        switch FileGate.read(path, limit: fileLimit, links: .followed, deadline: deadline) {
        case .success(let bytes?): return (cookie(in: bytes, for: address, number: number), nil)
        case .success(nil): return (nil, named == nil ? nil : "\(path) does not exist")
        case .failure(let refusal): return (nil, "the authority file was not read: \(refusal)")
        }
    }

    /// The first entry of `file` that names `address` (or any address) and
    /// `number` (or any display) with the MIT-MAGIC-COOKIE-1 protocol.
    static func cookie(in file: [UInt8], for address: Address, number: String) -> Cookie? {
        guard !file.isEmpty else { return nil }
        var bytes = file
        return bytes.withUnsafeMutableBytes { raw -> Cookie? in
            guard let stream = fmemopen(raw.baseAddress, raw.count, "r") else { return nil }
            defer { fclose(stream) }
            while let entry = XauReadAuth(stream) {
                defer { XauDisposeAuth(entry) }
                let auth = entry.pointee
                func field(_ pointer: UnsafeMutablePointer<CChar>?, _ length: UInt16) -> [UInt8] {
                    guard let pointer, length > 0 else { return [] }
                    return Array(UnsafeRawBufferPointer(start: pointer, count: Int(length)))
                }
                let addressMatches =
                    auth.family == 65535 || (auth.family == address.family && field(auth.address, auth.address_length) == address.bytes)
                let entryNumber = field(auth.number, auth.number_length)
                let numberMatches = entryNumber.isEmpty || entryNumber == Array(number.utf8)
                if addressMatches && numberMatches && field(auth.name, auth.name_length) == Array(protocolName.utf8) {
                    return Cookie(name: protocolName, data: field(auth.data, auth.data_length))
                }
            }
            return nil
        }
    }
}
