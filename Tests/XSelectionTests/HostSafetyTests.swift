import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import XSelection

/// What a host's threads and the server's other clients must never suffer
/// from the library: a frozen display, an open that waits on a grabbed server
/// without bound, words on the host's stderr. Each test starts its own server.
@Suite(.requiresXvfb) struct HostSafetyTests {
    private func text(_ string: String) -> SelectionPayload {
        SelectionPayload(target: "UTF8_STRING", bytes: Array(string.utf8))
    }

    /// Runs `body` on a new thread and waits for it up to `timeout`: a body
    /// that hangs fails the test instead of stopping the whole run.
    private func finishes(within timeout: DispatchTime, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        return done.wait(timeout: timeout) == .success
    }

    /// Four threads open an owner and a reader, claim and release slots
    /// (each claim under a server grab), read every slot and close, over and over, while a fifth client
    /// asks the server for a round trip without pause. With process-wide X
    /// state (libX11's global lock, an error-handler registry) one thread's
    /// grab waited on a lock that another thread held while it waited on the
    /// grabbed server: the display froze for every client.
    @Test func fourThreadsClaimingReadingAndClosingNeverFreezeTheDisplay() throws {
        let server = try PrivateXServer()
        let slots = (0..<8).map { SelectionName("_T_FREEZE_\($0)") }
        let probe = try SelectionReader(display: server.display)
        let slowest = Mutex(Duration.zero)
        let failures = Mutex<[String]>([])
        let stop = Atomic(false)
        let probing = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { probing.signal() }
            while !stop.load(ordering: .relaxed) {
                let started = ContinuousClock.now
                do {
                    try probe.roundTrip(deadline: .seconds(10))
                } catch {
                    failures.withLock { $0.append("probe: \(error)") }
                    return
                }
                let took = ContinuousClock.now - started
                slowest.withLock { $0 = max($0, took) }
            }
        }
        let display = server.display
        let workers = DispatchGroup()
        for worker in 0..<4 {
            workers.enter()
            Thread.detachNewThread {
                defer { workers.leave() }
                for round in 0..<60 {
                    do {
                        let owner = try SelectionOwner(display: display)
                        let reader = try SelectionReader(display: display)
                        // Claims (each under a grab) while the other threads open connections.
                        for claim in 0..<4 {
                            let payloads = [text("w\(worker) r\(round) c\(claim)")]
                            if let held = try owner.claimFirstFree(of: slots, payloads: payloads) {
                                try owner.release(held.selection)
                            }
                        }
                        _ = try reader.read(slots, target: "UTF8_STRING", options: .init(deadline: .seconds(2)))
                        reader.close()
                        owner.close()
                    } catch {
                        failures.withLock { $0.append("worker \(worker), round \(round): \(error)") }
                    }
                }
            }
        }
        let finished = workers.wait(timeout: .now() + 180) == .success
        stop.store(true, ordering: .relaxed)
        #expect(finished, "the four threads did not finish within 180 s")
        #expect(probing.wait(timeout: .now() + 20) == .success, "the probe's round trip did not come back")
        // A frozen display shows as the probe's round trip running into its own 10 s
        // deadline (a failure above), or the threads not finishing; how slow the
        // slowest round trip was on a loaded machine proves nothing either way.
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        print("slowest round trip of another client: \(slowest.withLock { $0 })")
    }

    /// A server grabbed by another client answers no new client's connection
    /// set-up until the grab ends. Opening fails within the set-up limit,
    /// with an error that says what is going on.
    @Test func openingADisplayAnotherClientHoldsGrabbedFailsWithinTheLimit() throws {
        let server = try PrivateXServer()
        let grabber = try startSelectionHelper(display: server.display, ["grab"], input: .pipe)
        defer {
            grabber.closeInput()
            _ = grabber.wait(timeout: 20)
        }
        let display = server.display
        let outcome = Mutex<(Result<Void, XSelectionError>, Duration)?>(nil)
        let returned = finishes(within: .now() + 15) {
            let started = ContinuousClock.now
            let result = Result { () throws(XSelectionError) in _ = try SelectionReader(display: display) }
            outcome.withLock { $0 = (result, ContinuousClock.now - started) }
        }
        #expect(returned, "opening a grabbed display did not return within 15 s")
        guard let (result, took) = outcome.withLock({ $0 }) else { return }
        guard case .failure(let error) = result else {
            Issue.record("opening a grabbed display succeeded")
            return
        }
        // It gave up at the set-up limit, which the error names, having waited for it.
        #expect(error.kind == .timedOut)
        #expect(error.message.contains(display) && error.message.contains("grab"), "\(error.message)")
        #expect(error.message.contains("within \(Connection.setUpLimit)"), "\(error.message)")
        #expect(took >= Connection.setUpLimit, "took \(took)")
    }

    /// A server at its client limit refuses the connection with a reason; the
    /// error carries it (libX11 and libxcb write it to the host's stderr).
    @Test func aServerAtItsClientLimitRefusesWithAnErrorThatGivesItsReason() throws {
        let server = try PrivateXServer(maxClients: 64)
        var readers: [SelectionReader] = []
        var refusal: XSelectionError?
        for _ in 0..<80 {
            do {
                readers.append(try SelectionReader(display: server.display))
            } catch {
                refusal = error
                break
            }
        }
        let error = try #require(refusal, "64 clients at most, and \(readers.count) readers opened")
        #expect(error.kind == .cannotOpen)
        #expect(error.message.contains("Maximum number of clients reached"), "\(error.message)")
        // One client fewer, and the next open works.
        readers.removeLast().close()
        #expect(
            eventually {
                (try? SelectionReader(display: server.display)) != nil
            })
    }

    /// The authority file's entry for the display is found as libXau finds
    /// it: by address and display number, or a wildcard.
    @Test func theAuthorityCookieIsTheEntryForTheDisplay() {
        func entry(family: UInt16, address: String, number: String, name: String, data: [UInt8]) -> [UInt8] {
            func field(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes }
            return [UInt8(family >> 8), UInt8(family & 0xff)] + field(Array(address.utf8)) + field(Array(number.utf8))
                + field(Array(name.utf8)) + field(data)
        }
        let file =
            entry(family: 256, address: "other", number: "0", name: "MIT-MAGIC-COOKIE-1", data: [1])
            + entry(family: 256, address: "here", number: "1", name: "MIT-MAGIC-COOKIE-1", data: [2])
            + entry(family: 256, address: "here", number: "0", name: "XDM-AUTHORIZATION-1", data: [3])
            + entry(family: 256, address: "here", number: "0", name: "MIT-MAGIC-COOKIE-1", data: [4])
            + entry(family: 65535, address: "", number: "7", name: "MIT-MAGIC-COOKIE-1", data: [5])
        #expect(Authority.cookie(in: file, for: .local("here"), number: "0")?.data == [4])
        #expect(Authority.cookie(in: file, for: .local("here"), number: "1")?.data == [2])
        #expect(Authority.cookie(in: file, for: .local("there"), number: "7")?.data == [5])
        #expect(Authority.cookie(in: file, for: .local("there"), number: "0") == nil)
        #expect(Authority.cookie(in: Array(file.dropLast(3)), for: .local("there"), number: "7") == nil)
    }
}

/// The authority file passes the file gate: only a regular file is read, a
/// link is followed to one, and a refusal says what stood there.
@Suite struct AuthorityFileTests {
    @Test func aFIFOADirectoryAndAnOversizedFileAreRefusedByNameAndALinkIsFollowed() throws {
        let directory = NSTemporaryDirectory() + "authority-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let deadline = ContinuousClock.now + .seconds(2)
        func lookUp(_ path: String) -> (cookie: Authority.Cookie?, problem: String?) {
            Authority.cookie(for: .local("here"), number: "0", deadline: deadline, environment: ["XAUTHORITY": path])
        }
        #expect(mkfifo(directory + "/fifo", 0o600) == 0)
        #expect(lookUp(directory + "/fifo").problem?.contains("(a FIFO stands there)") == true)
        #expect(lookUp(directory).problem?.contains("(a directory stands there)") == true)
        #expect(FileManager.default.createFile(atPath: directory + "/big", contents: Data(count: Authority.fileLimit + 1)))
        #expect(lookUp(directory + "/big").problem?.contains("over the \(Authority.fileLimit)-byte cap") == true)

        let entry: [UInt8] = [1, 0] + [0, 4] + Array("here".utf8) + [0, 1, 0x30] + [0, 18] + Array("MIT-MAGIC-COOKIE-1".utf8) + [0, 2, 7, 9]
        #expect(FileManager.default.createFile(atPath: directory + "/real", contents: Data(entry)))
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory + "/real")
        #expect(lookUp(directory + "/link").cookie?.data == [7, 9])
        #expect(lookUp(directory + "/absent").problem == "\(directory)/absent does not exist")
    }
}
