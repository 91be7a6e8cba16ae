import Foundation
import TestSupport
import Testing

@testable import XSelection

/// Failures that would take a host process down with libX11's defaults: a
/// server that dies, a display that is not there, peers that break off, and a
/// host that has its own error handler. Each test that needs a server starts
/// its own, since some kill it.
@Suite(.requiresXvfb) struct XSelectionFaultTests {
    private func text(_ string: String) -> SelectionPayload {
        SelectionPayload(target: "UTF8_STRING", bytes: Array(string.utf8))
    }

    private var helperEnvironment: [String: String] {
        ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
    }

    @Test func aPassWhileAnotherClientHoldsTheServerEndsTimedOutAndTheReaderGoesOn() throws {
        let server = try PrivateXServer()
        let owner = try SelectionOwner(display: server.display)
        try owner.claim("_T_FAULT_GRAB", payloads: [text("served")])
        let reader = try SelectionReader(display: server.display)
        #expect(try reader.read("_T_FAULT_GRAB", target: "UTF8_STRING").value?.bytes == Array("served".utf8))

        // Held until the pass has ended, however long it takes: a pass that
        // waited past its deadline (2 s for a timestamp, once) would throw.
        let grabber = try startSelectionHelper(display: server.display, ["grab"], input: .pipe)
        let during = try reader.read("_T_FAULT_GRAB", target: "UTF8_STRING", options: .init(deadline: .milliseconds(300)))
        #expect(during == .timedOut(owner: nil))

        grabber.closeInput()
        #expect(grabber.wait(timeout: 20) == 0)
        let after = try reader.read("_T_FAULT_GRAB", target: "UTF8_STRING", options: .init(deadline: .seconds(5)))
        #expect(after.value?.bytes == Array("served".utf8), "\(after)")
    }

    /// A write to a server that went away between the library's last read and
    /// its write raises SIGPIPE on the writing thread, whose default action ends
    /// the host. Where the library writes, its own threads and the reader's
    /// calls on the host's thread, the write fails with EPIPE instead, and the
    /// host's signal mask is as it was. (The race itself cannot be staged with
    /// a real server on demand; the helper writes to a pipe nobody reads.)
    @Test func aWriteToAServerThatWentAwayFailsInsteadOfEndingTheHost() throws {
        let helper = Tools.product("xselection-helper")
        // The helper gets SIGPIPE's default action: written plainly, it dies of it.
        let plain = try ChildProcess(helper.path, ["broken-pipe", "--where", "plain"], environment: helperEnvironment)
        #expect(plain.wait().signal == SIGPIPE)

        let server = try PrivateXServer()
        for place in ["library-thread", "reader-call"] {
            let result = try runCommand(
                helper, ["broken-pipe", "--where", place, "--display", server.display], environment: helperEnvironment)
            #expect(result.status == 0, "\(place): \(result.standardError)")
            #expect(result.standardOutput == "EPIPE\nunblocked\n", "\(place)")
        }
    }

    @Test func aServerCrashIsReportedByEveryObjectAndTheProcessLivesOn() async throws {
        let server = try PrivateXServer()
        let owner = try SelectionOwner(display: server.display)
        try owner.claim("_T_FAULT_CRASH", payloads: [text("before the crash")])
        let reader = try SelectionReader(display: server.display)
        #expect(try reader.read("_T_FAULT_CRASH", target: "UTF8_STRING").value?.bytes == Array("before the crash".utf8))
        let ownerEvents = SequenceReader(owner.events)
        let ownerWatchEvents = SequenceReader(try owner.watchOwners(of: ["_T_FAULT_CRASH_OTHER"]).events)

        server.kill()

        let ownerEvent = await ownerEvents.next(timeout: .seconds(20))
        guard case .element(.connectionLost(let ownerError)) = ownerEvent else {
            Issue.record("the owner reported \(String(describing: ownerEvent)), not the lost connection")
            return
        }
        #expect(ownerError.kind == .connectionLost)
        #expect(ownerError.display == server.display)

        let ownerWatchEvent = await ownerWatchEvents.next(timeout: .seconds(20))
        guard case .element(.connectionLost(let ownerWatchError)) = ownerWatchEvent else {
            Issue.record("the owner's watch reported \(String(describing: ownerWatchEvent)), not the lost connection")
            return
        }
        #expect(ownerWatchError.kind == .connectionLost)
        // Every stream ends after the loss.
        #expect(await ownerEvents.next(timeout: .seconds(20)) == .finished)
        #expect(await ownerWatchEvents.next(timeout: .seconds(20)) == .finished)

        let readError = #expect(throws: XSelectionError.self) {
            try reader.read("_T_FAULT_CRASH", target: "UTF8_STRING")
        }
        #expect(readError?.kind == .connectionLost)
        #expect(readError?.message.contains("\"\(server.display)\"") == true)
        // And keep failing cleanly, whatever is asked.
        #expect(throws: XSelectionError.self) { try reader.owners(of: ["_T_FAULT_CRASH"]) }
        let claimError = #expect(throws: XSelectionError.self) {
            try owner.claim("_T_FAULT_CRASH", payloads: [self.text("after")])
        }
        #expect(claimError?.kind == .connectionLost)

        // Still here: a new server and a new owner work as before.
        let fresh = try PrivateXServer()
        let newOwner = try SelectionOwner(display: fresh.display)
        try newOwner.claim("_T_FAULT_CRASH", payloads: [text("after the crash")])
        let newReader = try SelectionReader(display: fresh.display)
        #expect(try newReader.read("_T_FAULT_CRASH", target: "UTF8_STRING").value?.bytes == Array("after the crash".utf8))
    }

    @Test func openingADisplayWhereNoServerListensNamesTheDisplay() throws {
        let display = ":4999"
        try #require(!FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X4999"), "a server runs on \(display)")
        let readerError = #expect(throws: XSelectionError.self) { try SelectionReader(display: display) }
        let ownerError = #expect(throws: XSelectionError.self) { try SelectionOwner(display: display) }
        for error in [readerError, ownerError] {
            #expect(error?.kind == .cannotOpen)
            #expect(error?.display == display)
            #expect(error?.message.contains("\"\(display)\"") == true)
        }
    }

    @Test func noDisplayAtAllSaysToSetDISPLAY() throws {
        // Changing this process's environment would race the other tests, so a
        // child process without DISPLAY does the opening.
        let result = try runCommand(Tools.product("xselection-helper"), ["open"], environment: helperEnvironment)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        for (line, kind) in zip(lines, ["reader", "owner"]) {
            #expect(line.hasPrefix("\(kind) error noDisplay "))
            #expect(line.contains("set DISPLAY"))
        }
    }

    @Test func aRequestorThatVanishesMidINCRCostsOnlyItsOwnTransfer() throws {
        let server = try PrivateXServer()
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        // A long transfer time-out: a drop within seconds can only come from the error.
        let owner = try SelectionOwner(display: server.display, options: .init(incrThreshold: 4096, transferTimeout: .seconds(60)))
        try owner.claim(
            "_T_FAULT_VANISH",
            payloads: [
                SelectionPayload(target: "application/octet-stream", bytes: bytes),
                text("small")
            ])

        // The requestor takes one chunk, then destroys its window as it asks for the next.
        let lines = try requestWithHelper(
            display: server.display,
            [
                "--selection", "_T_FAULT_VANISH", "--targets", "application/octet-stream",
                "--die-after-first-chunk"
            ])
        #expect(lines == ["incr", "first-chunk 4096", "died"])
        // The owner's next write hit the vanished window: counted against the peer, transfer dropped.
        #expect(eventually { owner.statistics.incrDropped == 1 })
        #expect(owner.statistics.peerErrors >= 1)

        // The owner serves on: small values, and a whole INCR transfer.
        let reader = try SelectionReader(display: server.display)
        #expect(try reader.read("_T_FAULT_VANISH", target: "UTF8_STRING").value?.bytes == Array("small".utf8))
        let big = try reader.read(
            "_T_FAULT_VANISH", target: "application/octet-stream", options: .init(deadline: .seconds(10), maxBytes: 1 << 20))
        let statistics = owner.statistics
        let value = try #require(big.value, "\(big), owner: \(statistics)")
        #expect(value.incremental)
        let intact = value.bytes == bytes
        #expect(intact, "\(value.bytes.count) bytes arrived, not the \(bytes.count) served")
        #expect(statistics.incrStarted == 2)
        #expect(statistics.incrCompleted == 1)
        #expect(statistics.incrDropped == 1)
        #expect(try owner.heldSelections() == ["_T_FAULT_VANISH"])
    }

    @Test func aHostsOwnErrorHandlerStillSeesItsOwnErrorsAndNoneOfOurs() throws {
        let server = try PrivateXServer()
        var environment = helperEnvironment
        environment["DISPLAY"] = server.display
        let result = try runCommand(
            Tools.product("xselection-helper"), ["host-error-handler", "--selection", "_T_FAULT_HOST"],
            environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        // "peer-errors N host-calls-before-own-error M host-calls-after-own-error K"
        let words = result.standardOutput.split(whereSeparator: \.isWhitespace).map(String.init)
        let numbers = Dictionary(uniqueKeysWithValues: stride(from: 0, to: words.count - 1, by: 2).map { (words[$0], Int(words[$0 + 1])) })
        // A peer's fault on the owner's connection stays inside XSelection ...
        #expect((numbers["peer-errors"] ?? nil).map { $0 >= 1 } == true, "\(result.standardOutput)")
        #expect(numbers["host-calls-before-own-error"] == 0, "\(result.standardOutput)")
        // ... while the host's own error reaches the host's handler.
        #expect(numbers["host-calls-after-own-error"] == 1, "\(result.standardOutput)")
    }
}
