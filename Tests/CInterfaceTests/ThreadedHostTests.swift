import Foundation
import Synchronization
import TestSupport
import Testing

/// A C host that uses libopenudid from several threads, outlives its X
/// server, is refused by it, or forks (Programs/threaded-host.c). The
/// library never freezes the display, never hangs past its deadlines, and
/// never writes a word to the host's stderr.
@Suite(.requiresXvfb) struct ThreadedHostTests {
    private func program() throws -> URL { try Installation.threadedHost.get() }

    private func environment(_ session: TestSession) throws -> [String: String] {
        try Installation.shared.get().environment(session.environment)
    }

    /// Asks the server for a round trip with `xprop -root` until `stop`; the
    /// slowest answer, or nil when one did not come within 10 s.
    private final class Probe: Sendable {
        private let slowest = Mutex<TimeInterval?>(0)
        private let stopped = Atomic(false)
        private let finished = DispatchSemaphore(value: 0)

        init(display: String) {
            let xprop = try? Tools.find("xprop")
            Thread.detachNewThread { [self] in
                defer { finished.signal() }
                guard let xprop else {
                    slowest.withLock { $0 = nil }
                    return
                }
                while !stopped.load(ordering: .relaxed) {
                    let started = Date()
                    let result = try? runCommand(
                        xprop, ["-root", "-notype", "RESOURCE_MANAGER"], environment: ["DISPLAY": display], timeout: 10)
                    let took = Date().timeIntervalSince(started)
                    guard let result, result.status == 0 || result.status == 1 else {
                        slowest.withLock { $0 = nil }
                        return
                    }
                    slowest.withLock { $0 = $0.map { max($0, took) } }
                }
            }
        }

        /// Stops probing and returns the slowest round trip (nil: one never came back).
        func stop() -> TimeInterval? {
            stopped.store(true, ordering: .relaxed)
            guard finished.wait(timeout: .now() + 30) == .success else { return nil }
            return slowest.withLock { $0 }
        }
    }

    /// Four threads each open, participate (synchronously or not) and close,
    /// again and again, in three runs of the program; another client's round
    /// trips keep coming back meanwhile. A claim's server grab once waited on
    /// a lock that another thread's connection set-up held while it waited
    /// for the grabbed server: the program and the whole display froze.
    @Test func fourThreadsOpeningParticipatingAndClosingNeverFreezeTheDisplay() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let probe = Probe(display: server.display)
        var outcomes: [String] = []
        for run in 0..<3 {
            let host = try ChildProcess(
                program().path, ["threads", session.namespace, "4", "25"], environment: environment(session))
            let status = host.wait(timeout: 240)
            if status == nil { host.kill9() }
            outcomes.append("run \(run): status \(status.map(String.init) ?? "hung"), stderr \(host.standardError.debugDescription)")
            #expect(status == 0 && host.standardError.isEmpty, "\(outcomes.last!)")
            #expect(host.takeRemainingOutput() == ["done"])
        }
        // A frozen display shows as a round trip that never comes back (xprop runs into
        // its 10 s time-out); how slow the slowest was on a loaded machine proves nothing.
        let slowest = probe.stop()
        #expect(slowest != nil, "another client's round trip did not come back within 10 s: \(outcomes)")
        print("slowest round trip of another client: \(slowest ?? -1) s")
    }

    /// A server at its client limit refuses the host's connections; the host
    /// gets its value from the files and nothing appears on its stderr
    /// (libX11 and libxcb write the server's reason there).
    @Test func aServerAtItsClientLimitPrintsNothingInTheHost() throws {
        let server = try PrivateXServer(maxClients: 64)
        let session = try TestSession(display: server.display)
        let clients = try RawClients(display: server.displayNumber, upTo: 80)
        #expect(clients.refused, "the server admitted \(clients.count) clients")
        let host = try ChildProcess(program().path, ["once", session.namespace], environment: environment(session))
        #expect(host.wait(timeout: 60) == 0, "\(host.standardError)")
        #expect(host.takeRemainingOutput() == ["result 0"])
        #expect(host.standardError.isEmpty, "\(host.standardError.debugDescription)")
        withExtendedLifetime(clients) {}
    }

    /// The server goes away under a participating host and comes back; the
    /// host's later calls work from the files, close returns, and nothing is
    /// printed.
    @Test func aServerThatGoesAwayAndComesBackPrintsNothingInTheHost() throws {
        let server = try PrivateXServer(numbering: .randomHigh)
        let session = try TestSession(display: server.display)
        let host = try ChildProcess(program().path, ["outlive", session.namespace], environment: environment(session), input: .pipe)
        #expect(host.nextLine(timeout: 30) == "participating", "\(host.standardError)")
        try server.restart()
        host.writeInput(Data("go on\n".utf8))
        #expect(host.nextLine(timeout: 30) == "closed", "\(host.standardError)")
        #expect(host.wait(timeout: 30) == 0)
        #expect(host.standardError.isEmpty, "\(host.standardError.debugDescription)")
    }

    /// A participating host forks; each child's calls return at once with
    /// OPENUDID_EINVAL, on the inherited handle and when it opens one, and
    /// the parent's participation goes on. Children once waited for the
    /// parent's threads, which a child does not have, and for locks those
    /// threads held at the fork.
    @Test func theChildrenOfAParticipatingHostDoNotHang() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let children = 12
        let host = try ChildProcess(program().path, ["fork", session.namespace, String(children)], environment: environment(session))
        let status = host.wait(timeout: 120)
        if status == nil { host.kill9() }
        let lines = host.takeRemainingOutput()
        #expect(status == 0, "\(lines) \(host.standardError)")
        #expect(lines.last == "forked", "\(lines)")
        let childLines = lines.filter { $0.hasPrefix("child ") }
        #expect(childLines.count == children, "\(lines)")
        // Refreshing and reading the inherited handle, and opening one.
        #expect(childLines.allSatisfy { $0 == "child -1 -1 -1" }, "\(childLines)")
        #expect(host.standardError.isEmpty, "\(host.standardError.debugDescription)")
    }
}

/// Plain connections to an X server, each with a finished set-up, held open
/// until released: a server with a client limit fills up.
final class RawClients {
    private var sockets: [Int32] = []
    /// Whether the server refused a connection before `upTo` were open.
    private(set) var refused = false
    var count: Int { sockets.count }

    init(display: Int, upTo limit: Int) throws {
        for _ in 0..<limit {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket failed") }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let path = Array("/tmp/.X11-unix/X\(display)".utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.enumerated() { raw[index] = byte }
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else {
                close(fd)
                throw HarnessError("cannot connect to the X server's socket")
            }
            // Little-endian, protocol 11.0, no authorization.
            let request: [UInt8] = [0x6c, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else {
                close(fd)
                throw HarnessError("cannot write to the X server")
            }
            var status: UInt8 = 0
            guard read(fd, &status, 1) == 1 else {
                close(fd)
                throw HarnessError("the X server closed the connection")
            }
            if status != 1 {
                close(fd)
                refused = true
                return
            }
            // The rest of the set-up reply stays unread: the client is counted all the same.
            sockets.append(fd)
        }
    }

    deinit { sockets.forEach { close($0) } }
}
