import Foundation
import TestSupport
import Testing
import XSelection

@testable import OpenUDIDKit

/// What enters from outside the user's files and the honest X server: a
/// process listening on the display's socket, and an authority file that is
/// not a file (docs/SECURITY.md, "Where input enters").
@Suite(.requiresXvfb) struct EntranceTests {
    /// A process that answers the connection set-up as no X server would: the
    /// app gets no selections this time, says why, and lives.
    @Test(arguments: ["many-screens", "long-vendor", "short-visuals", "lying-length"])
    func aHostileServerOnTheDisplaySocketIsRefusedAndTheAppLives(_ reply: String) throws {
        let server = try ChildProcess(
            Tools.product("xselection-helper").path, ["hostile-server", "--reply", reply], environment: ["PATH": "/usr/bin:/bin"],
            input: .pipe)
        defer {
            server.closeInput()
            server.stop()
        }
        let ready = try #require(server.nextLine(timeout: 10), "\(server.standardError)")
        let number = try #require(ready.split(separator: " ").last.flatMap { Int($0) }, "\(ready)")

        // Screen 5 of a server that announces 255: walking garbage there crashed the host.
        let display = ":\(number).5"
        let session = try TestSession(display: display)
        let app = try ChildProcess(
            Tools.product("openudid").path, ["get", "--app", "com.acme.notes", "--json", "--mirror", "none"] + session.commonArguments,
            environment: session.environment)
        let ending = app.wait()
        #expect(ending.signal == nil, "openudid died of signal \(ending.signal ?? 0): \(app.standardError)")
        // 5: the identifier printed lacks the selections (README, exit status).
        #expect(ending.exitCode == 5, "\(app.standardError)")
        let report = try JSONSerialization.jsonObject(with: Data(app.takeRemainingText().utf8)) as? [String: Any]
        let selections = try #require(report?.source("selections"))
        #expect(selections.state == "unavailable")
        if reply != "lying-length" {
            #expect(selections.detail.contains("malformed connection set-up"), "\(selections.detail)")
        }

        // In this process too: an error, not a crash, and nothing read out of bounds.
        #expect(throws: XSelectionError.self) { try SelectionReader(display: display).close() }
    }

    /// `XAUTHORITY` naming a FIFO used to hang the lookup in `open()` for good;
    /// the gate refuses it without waiting, and the display is used as without one.
    @Test func anAuthorityFileThatIsAFIFONeitherHangsNorStopsTheLookup() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let fifo = session.home.root.appendingPathComponent("Xauthority-fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        var environment = session.environment
        environment["XAUTHORITY"] = fifo
        // Generous: the hang this guards against never ends.
        let result = try runCommand(
            Tools.product("openudid"), ["get", "--app", "com.acme.notes", "--json", "--mirror", "none"] + session.commonArguments,
            environment: environment, timeout: 60)
        #expect(result.status == 0, "\(result.standardError)")
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        #expect(report?.source("selections")?.state == "read", "\(String(describing: report?.source("selections")))")
    }
}
