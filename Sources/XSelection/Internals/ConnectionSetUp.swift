import CX11
import FoundationEssentials
import Glibc
import InputGate

/// Opens a connection to an X server under a deadline, and without a word on
/// the host's stderr.
///
/// `xcb_connect` cannot do either: it waits for the server's set-up reply
/// without bound (a server grabbed by another client sends none until the
/// grab ends), and it writes the reason of a refusal ("Maximum number of
/// clients reached") to file descriptor 2. So the socket, the authorization
/// and the set-up exchange are done here, with `poll` and a deadline, and
/// libxcb is given the finished exchange: `xcb_connect_to_fd` runs on one end
/// of a socket pair whose other end hands it the server's reply, and the
/// server's socket then takes the pair's place under the same descriptor
/// number (`dup3`). libxcb parses the reply itself and never waits on the
/// server.
enum ConnectionSetUp {
    /// An open connection and what its checked set-up reply says.
    struct Opened {
        var xcb: OpaquePointer
        /// The root window of the screen the display name asked for.
        var root: UInt32
        var setUp: SetUpReply
    }

    /// Connects to `display` (a name such as `:0`, `unix:1.0` or `host:0`).
    ///
    /// - Throws: `cannotOpen` when nothing listens or the server refuses,
    ///   `timedOut` when the server does not answer by `deadline`.
    static func open(_ display: String, deadline: ContinuousClock.Instant, limit: Duration) throws(XSelectionError) -> Opened {
        var hostPointer: UnsafeMutablePointer<CChar>?
        var number: Int32 = 0
        var screen: Int32 = 0
        guard xcb_parse_display(display, &hostPointer, &number, &screen) != 0 else { throw .notADisplayName(display) }
        let host = hostPointer.map { String(cString: $0) } ?? ""
        free(hostPointer)

        let socket = try connectSocket(host: host, number: number, display: display, deadline: deadline, limit: limit)
        var adopted = false
        defer { if !adopted { close(socket.fd) } }
        // Read within the same deadline: the file is outside input like the server's reply.
        let authority = Authority.cookie(for: socket.authAddress, number: String(number), deadline: deadline)
        let reply = try exchangeSetUp(
            socket.fd, cookie: authority.cookie, authorityProblem: authority.problem, display: display, deadline: deadline, limit: limit)
        let setUp: SetUpReply
        switch SetUpReply.parse(reply) {
        case .success(let parsed): setUp = parsed
        case .failure(let problem): throw .malformedSetUp(display, problem.description)
        }
        guard Int(screen) < setUp.roots.count else {
            throw XSelectionError(.cannotOpen, display: display, "X display \"\(display)\" has no screen \(screen)")
        }
        let xcb = try adopt(socket.fd, reply: reply, display: display)
        adopted = true
        return Opened(xcb: xcb, root: setUp.roots[Int(screen)], setUp: setUp)
    }

    // MARK: The socket

    private struct Socket {
        var fd: Int32
        /// The address the authority file names this server by.
        var authAddress: Authority.Address
    }

    private static func connectSocket(
        host: String, number: Int32, display: String, deadline: ContinuousClock.Instant, limit: Duration
    ) throws(XSelectionError) -> Socket {
        if host.isEmpty || host == "unix" || host.hasPrefix("/") {
            let local = Authority.Address.local(hostName())
            if host.hasPrefix("/") {
                if let fd = connectUnix(path: host, abstract: false, deadline: deadline) { return Socket(fd: fd, authAddress: local) }
            } else {
                // The abstract name first, as libxcb does, then the file.
                let path = "/tmp/.X11-unix/X\(number)"
                if let fd = connectUnix(path: path, abstract: true, deadline: deadline)
                    ?? connectUnix(path: path, abstract: false, deadline: deadline)
                {
                    return Socket(fd: fd, authAddress: local)
                }
            }
            throw .cannotOpen(display)
        }
        return try connectTCP(host: host, port: 6000 + Int(number), display: display, deadline: deadline, limit: limit)
    }

    private static func connectUnix(path: String, abstract: Bool, deadline: ContinuousClock.Instant) -> Int32? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let offset = abstract ? 1 : 0
        guard bytes.count + offset < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index + offset] = byte }
        }
        // An abstract name is as long as its bytes; a path ends at its NUL.
        let length = MemoryLayout<sa_family_t>.size + offset + bytes.count + (abstract ? 0 : 1)
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { return nil }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(length)) }
            }
            if connected == 0 { return fd }
            let code = errno
            close(fd)
            // Non-blocking, a local connect completes or fails at once: a full
            // listen backlog (many clients connecting at once) fails with EAGAIN
            // rather than waiting, and there is nothing to poll for. Try again
            // now and then until the deadline.
            guard code == EAGAIN, ContinuousClock.now < deadline else { return nil }
            _ = poll(nil, 0, 5)
        }
    }

    private static func connectTCP(
        host: String, port: Int, display: String, deadline: ContinuousClock.Instant, limit: Duration
    ) throws(XSelectionError) -> Socket {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { throw .cannotOpen(display) }
        defer { freeaddrinfo(list) }
        var next = list
        while let info = next {
            next = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var ok = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
            if !ok && errno == EINPROGRESS {
                if try waitFor(fd, events: POLLOUT, deadline: deadline, display: display, limit: limit) {
                    var failure: Int32 = 0
                    var size = socklen_t(MemoryLayout<Int32>.size)
                    ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size) == 0 && failure == 0
                }
            }
            guard ok else {
                close(fd)
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return Socket(fd: fd, authAddress: Authority.Address(socketAddress: info.pointee.ai_addr, hostName: hostName()))
        }
        throw .cannotOpen(display)
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Waits for `events` on `fd` until `deadline`; false when the wait ended otherwise.
    private static func waitFor(
        _ fd: Int32, events: Int32, deadline: ContinuousClock.Instant, display: String, limit: Duration
    ) throws(XSelectionError) -> Bool {
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw .setUpTimedOut(display, after: limit) }
            let (seconds, attoseconds) = remaining.components
            var descriptor = pollfd(fd: fd, events: Int16(events), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
            if ready > 0 { return descriptor.revents & Int16(events) != 0 }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    // MARK: The set-up exchange

    /// Sends the connection set-up and returns the server's whole reply, once
    /// it says the connection is accepted.
    ///
    /// - Parameter authorityProblem: Why the authority file could not be used,
    ///   said with a refusal, which it may explain.
    private static func exchangeSetUp(
        _ fd: Int32, cookie: Authority.Cookie?, authorityProblem: String?, display: String, deadline: ContinuousClock.Instant,
        limit: Duration
    ) throws(XSelectionError) -> [UInt8] {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4) }
        // The host's byte order: the server then speaks it too, and libxcb reads the reply in it.
        func card16(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt16(truncatingIfNeeded: value)) { Array($0) } }
        let name = cookie.map { Array($0.name.utf8) } ?? []
        let data = cookie?.data ?? []
        // Byte order ('B' or 'l'), protocol 11.0, the authorization's name and
        // data lengths, then both, each padded to 4.
        let order = ByteReader.hostIsBigEndian ? UInt8(ascii: "B") : UInt8(ascii: "l")
        var request: [UInt8] = [order, 0] + card16(11) + card16(0) + card16(name.count) + card16(data.count) + [0, 0]
        request += padded(name) + padded(data)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                guard try waitFor(fd, events: POLLOUT, deadline: deadline, display: display, limit: limit) else {
                    throw .cannotOpen(display)
                }
            } else {
                throw .cannotOpen(display)
            }
        }

        var reply: [UInt8] = []
        var wanted = 8
        var buffer = [UInt8](repeating: 0, count: 65536)
        while reply.count < wanted {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, wanted - reply.count), 0) }
            if count > 0 {
                reply += buffer[..<count]
                // Status, reason length, protocol version, then the length of
                // what follows in 4-byte units.
                if reply.count >= 8 && wanted == 8 {
                    var header = ByteReader(Array(reply[6..<8]))
                    wanted = 8 + 4 * Int(header.uint16() ?? 0)
                }
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                guard try waitFor(fd, events: POLLIN, deadline: deadline, display: display, limit: limit) else {
                    throw .cannotOpen(display)
                }
            } else {
                // The server closed the connection (it went away while we spoke).
                throw .cannotOpen(display)
            }
        }
        // Failed (0): the reason's length is in byte 1, the reason from byte 8;
        // Authenticate (2): the reason fills what follows the header.
        let reason: String
        switch reply[0] {
        case 1: return reply
        case 0: reason = text(reply[8..<min(reply.count, 8 + Int(reply[1]))]) ?? "no reason given"
        default: reason = text(reply[8...].prefix { $0 != 0 }) ?? "authorization required"
        }
        throw .refused(display, reason: [reason, authorityProblem].compactMap { $0 }.joined(separator: "; "))
    }

    /// A server's reason as one line of text (servers end it with a line
    /// feed), or nil when it says nothing.
    private static func text(_ bytes: ArraySlice<UInt8>) -> String? {
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return words.isEmpty ? nil : words
    }

    /// Gives libxcb the connection whose set-up `reply` finished on `fd`.
    private static func adopt(_ fd: Int32, reply: [UInt8], display: String) throws(XSelectionError) -> OpaquePointer {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw .cannotOpen(display)
        }
        // libxcb writes its set-up request, then reads the reply; while it
        // writes it also reads whatever is there, so the reply must come
        // after the request. A thread of the pair's own answers it; it waits
        // on the pair alone and closes its end when done, so libxcb's read
        // ends either way.
        let (answering, expected) = (pair[1], 12)
        let started = startThread {
            var descriptor = pollfd(fd: answering, events: Int16(POLLIN), revents: 0)
            var request = [UInt8](repeating: 0, count: 4096)
            var taken = 0
            while taken < expected, poll(&descriptor, 1, 2000) > 0 {
                let count = request.withUnsafeMutableBytes { recv(answering, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard count > 0 || (count < 0 && errno == EAGAIN) else { break }
                taken += max(count, 0)
            }
            var sent = 0
            while taken >= expected && sent < reply.count {
                let count = reply[sent...].withUnsafeBytes { send(answering, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { break }
                sent += count
            }
            close(answering)
        }
        guard started else {
            close(pair[0])
            close(pair[1])
            throw .cannotOpen(display)
        }
        guard let xcb = xcb_connect_to_fd(pair[0], nil), xcb_connection_has_error(xcb) == 0 else {
            throw .cannotOpen(display)
        }
        // The server's socket takes the pair's descriptor number: libxcb
        // goes on with the same number, now the server's. dup3 closes the
        // pair's end atomically and keeps close-on-exec; libxcb expects a
        // non-blocking socket, which the exchange already made it.
        guard openudid_dup3(fd, pair[0], O_CLOEXEC) >= 0 else {
            xcb_disconnect(xcb)
            throw .cannotOpen(display)
        }
        close(fd)
        return xcb
    }
}
