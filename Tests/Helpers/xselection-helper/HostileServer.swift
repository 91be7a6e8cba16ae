import Foundation
import Glibc

/// The set-up replies `hostile-server` sends in place of an X server's.
enum HostileSetUp: String, CaseIterable {
    /// Accepted, 255 screens announced and a few bytes of garbage where they should be.
    case manyScreens = "many-screens"
    /// Accepted, a vendor string of 65,535 bytes announced in a reply of 40.
    case longVendor = "long-vendor"
    /// Accepted, one screen whose depths announce more visuals than the reply holds.
    case shortVisuals = "short-visuals"
    /// Accepted, the header announcing 1 MiB, then the connection closed.
    case lyingLength = "lying-length"

    /// The bytes of the reply, in this machine's byte order (the client's, which it asks for).
    var reply: [UInt8] {
        func card16(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt16(truncatingIfNeeded: value)) { Array($0) } }
        func card32(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(truncatingIfNeeded: value)) { Array($0) } }
        func header(units: Int) -> [UInt8] { [1, 0] + card16(11) + card16(0) + card16(units) }
        // release, resource-id base and mask, motion buffer size, vendor length,
        // maximum request length, screens, formats, then eight bytes of orders and keycodes.
        func fixed(vendor: Int, screens: Int) -> [UInt8] {
            card32(1) + card32(0x0200_0000) + card32(0x001f_ffff) + card32(0) + card16(vendor) + card16(65535)
                + [UInt8(screens), 0] + [0, 0, 32, 32, 8, 255] + [0, 0, 0, 0]
        }
        switch self {
        case .manyScreens:
            let body = fixed(vendor: 0, screens: 255) + [UInt8](repeating: 0xa5, count: 16)
            return header(units: body.count / 4) + body
        case .longVendor:
            let body = fixed(vendor: 65535, screens: 1) + [UInt8](repeating: 0x41, count: 8)
            return header(units: body.count / 4) + body
        case .shortVisuals:
            // One screen of 40 bytes with one depth announcing 1000 visuals, and none sent.
            let screen = card32(0x100) + [UInt8](repeating: 0, count: 35) + [1]
            let depth: [UInt8] = [24, 0] + card16(1000) + [0, 0, 0, 0]
            let body = fixed(vendor: 0, screens: 1) + screen + depth
            return header(units: body.count / 4) + body
        case .lyingLength:
            return header(units: 1 << 18) + fixed(vendor: 0, screens: 1)
        }
    }
}

/// Takes a free display number as an X server does (its lock file
/// `/tmp/.X<n>-lock` made exclusively, so no Xvfb takes it meanwhile), listens on
/// its socket `/tmp/.X11-unix/X<n>`, and answers every connection's set-up with
/// `setUp` instead of an X server's, until killed. Prints "ready <n>" once listening.
func runHostileServer(setUp: HostileSetUp) -> Never {
    let directory = "/tmp/.X11-unix"
    mkdir(directory, 0o1777)
    for number in 600..<1000 {
        let lock = "/tmp/.X\(number)-lock"
        let path = "\(directory)/X\(number)"
        guard access(path, F_OK) != 0 else { continue }
        let lockFile = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0o444)
        guard lockFile >= 0 else { continue }
        let pid = Array(String(format: "%10d\n", getpid()).utf8)
        _ = write(lockFile, pid, pid.count)
        close(lockFile)
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard server >= 0, bound == 0, listen(server, 16) == 0 else {
            unlink(lock)
            continue
        }
        // The files go with the process, however it ends: a watcher on its standard input.
        atexit { cleanUp() }
        cleanUpPaths = [lock, path]
        say("ready \(number)")
        serve(server, reply: setUp.reply)
    }
    FileHandle.standardError.write(Data("xselection-helper: no free display number from 600 to 999\n".utf8))
    exit(1)
}

nonisolated(unsafe) private var cleanUpPaths: [String] = []
private func cleanUp() { for path in cleanUpPaths { unlink(path) } }

private func serve(_ server: Int32, reply: [UInt8]) -> Never {
    // Standard input ends when the test lets go of the helper: clean up then.
    Thread.detachNewThread {
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        exit(0)
    }
    while true {
        let client = accept(server, nil, nil)
        guard client >= 0 else { continue }
        // The client's set-up request: 12 bytes, then its authorization, which is not looked at.
        var request = [UInt8](repeating: 0, count: 4096)
        _ = read(client, &request, request.count)
        _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(client)
    }
}
