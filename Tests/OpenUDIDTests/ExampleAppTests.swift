import Foundation
import TestSupport
import Testing

/// The three example apps as separate processes, each with a real window, on
/// a private Xvfb per test (window titles are the same in every test, so
/// tests must not share a screen).
@Suite(.requiresXvfb) struct ExampleAppTests {
    static let zeros = String(repeating: "0", count: 40)
    static let apps = [
        (product: "acme-notes", title: "Acme Notes - com.acme.notes", className: "AcmeNotes"),
        (product: "acme-photos", title: "Acme Photos - com.acme.photos", className: "AcmePhotos"),
        (product: "indie-chess", title: "Indie Chess - org.indie.chess", className: "IndieChess")
    ]

    /// One running example app and every identifier line it printed.
    final class App: @unchecked Sendable {
        // `lines` is guarded by `lock`.
        private let lock = NSLock()
        private var lines: [String] = []
        let product: String
        let title: String
        let child: ChildProcess

        init(product: String, title: String, session: TestSession, extra: [String] = []) throws {
            self.product = product
            self.title = title
            child = try ChildProcess(
                Tools.product(product), ["--namespace", session.namespace, "--mirror", "file"] + extra,
                environment: session.environment)
        }

        /// Every line so far, reading what arrived.
        var printed: [String] {
            while let line = child.nextLine(timeout: 0) { lock.withLock { lines.append(line) } }
            return lock.withLock { lines }
        }

        /// The identifier most recently printed.
        var current: String? { printed.last }
    }

    private struct Running {
        let server: PrivateXServer
        let session: TestSession
        let apps: [App]
        let shared: String
    }

    /// Starts Xvfb and the three apps, one after the other as a user opens them, side
    /// by side so that a click lands where it is aimed, and waits until they print one
    /// common identifier.
    ///
    /// One after the other on purpose: started at the same instant with mirrors, apps
    /// of two vendors can each generate an identifier and then never converge, since
    /// each vendor's mirror is a ballot that only that vendor's apps see, so the two
    /// vendors count different ballots. That is a question for the voting rule, not
    /// for these tests of the example apps.
    private func startAll() throws -> Running {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        var apps: [App] = []
        for (index, app) in Self.apps.enumerated() {
            let started = try App(
                product: app.product, title: app.title, session: session,
                extra: ["--geometry", "250x200+\(index * 260)+0"])
            guard eventually(timeout: 15, { started.current != nil }) else {
                throw HarnessError("\(app.product) printed no identifier: \(started.child.standardError)")
            }
            apps.append(started)
        }
        let agreed = eventually(timeout: 20) {
            let values = apps.map(\.current)
            return values[0] != nil && values[0] != Self.zeros && Set(values).count == 1
        }
        guard agreed, let shared = apps[0].current else {
            throw HarnessError(
                "the example apps did not agree: "
                    + apps.map { "\($0.product): \($0.printed) \($0.child.standardError)" }.joined(separator: "; "))
        }
        return Running(server: server, session: session, apps: apps, shared: shared)
    }

    private func tool(_ name: String, _ arguments: [String], display: String) throws -> String {
        try runCommand(
            Tools.find(name), arguments,
            environment: [
                "DISPLAY": display, "LANG": "C",
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            ]
        ).standardOutput
    }

    /// The id of the top-level window titled `title`, from `xwininfo -root -tree`.
    private func window(titled title: String, display: String) throws -> String? {
        let tree = try tool("xwininfo", ["-root", "-tree"], display: display)
        let line = tree.split(separator: "\n").first { $0.contains("\"\(title)\":") }
        return line?.split(separator: " ").first.map(String.init)
    }

    @Test func theThreeAppsShowOneIdentifierInRealMappedWindows() throws {
        let running = try startAll()
        #expect(running.shared.count == 40)
        for (app, expected) in zip(running.apps, Self.apps) {
            let id = try #require(
                try window(titled: expected.title, display: running.server.display),
                "no window titled \(expected.title)")
            let info = try tool("xwininfo", ["-id", id], display: running.server.display)
            #expect(info.contains("Map State: IsViewable"), "\(expected.title) is not mapped")
            let props = try tool("xprop", ["-id", id, "_NET_WM_NAME", "WM_CLASS", "_NET_WM_PID"], display: running.server.display)
            #expect(props.contains("_NET_WM_NAME(UTF8_STRING) = \"\(expected.title)\""))
            #expect(props.contains("WM_CLASS(STRING) = \"\(expected.className.lowercased())\", \"\(expected.className)\""))
            // The window belongs to this app's process, not to some other client.
            #expect(props.contains("_NET_WM_PID(CARDINAL) = \(app.child.pid)"))
        }

        // The library agrees with what the apps print: an outsider resolves the same value.
        #expect(try running.session.get("net.example.viewer", ["--mirror", "file"]) == running.shared)
    }

    @Test func optingOutInChessLeavesTheOthersSharingAndOptingBackInRestoresIt() throws {
        let running = try startAll()
        let (notes, photos, chess) = (running.apps[0], running.apps[1], running.apps[2])
        let before = (notes.printed.count, photos.printed.count)

        chess.child.signal(SIGUSR1)
        #expect(eventually(timeout: 10) { chess.current == Self.zeros }, "chess printed \(chess.printed)")
        // Chess publishes its opt-out in its slot; the others see it and still share.
        let slots = try running.session.run(["slots", "--json"]).standardOutput
        let object = try #require(try JSONSerialization.jsonObject(with: Data(slots.utf8)) as? [String: Any])
        let entries = object["slots"] as? [[String: Any]] ?? []
        let chessSelection = entries.first { $0["kind"] as? String == "selection" && $0["app"] as? String == "org.indie.chess" }
        #expect(chessSelection?["optOut"] as? Bool == true)
        // Watched for a while: a change that must not come.
        let changed = eventually(timeout: 1) { notes.current != running.shared || photos.current != running.shared }
        #expect(!changed)
        #expect(notes.current == running.shared)
        #expect(photos.current == running.shared)
        // They printed nothing new: for them nothing changed.
        #expect(notes.printed.count == before.0)
        #expect(photos.printed.count == before.1)

        chess.child.signal(SIGUSR1)
        #expect(eventually(timeout: 10) { chess.current == running.shared }, "chess printed \(chess.printed)")
        #expect(chess.printed.suffix(2) == [Self.zeros, running.shared])
        #expect(notes.current == running.shared)
        #expect(photos.current == running.shared)
    }

    @Test func theKeysToggleTheOptOutAndQuit() throws {
        let running = try startAll()
        let display = running.server.display
        let chess = running.apps[2]
        let chessWindow = try #require(try window(titled: chess.title, display: display))

        _ = try tool("xdotool", ["key", "--window", chessWindow, "o"], display: display)
        #expect(eventually(timeout: 10) { chess.current == Self.zeros }, "chess printed \(chess.printed)")
        _ = try tool("xdotool", ["mousemove", "--window", chessWindow, "100", "100", "click", "1"], display: display)
        #expect(eventually(timeout: 10) { chess.current == running.shared }, "chess printed \(chess.printed)")

        let notes = running.apps[0]
        let notesWindow = try #require(try window(titled: notes.title, display: display))
        _ = try tool("xdotool", ["key", "--window", notesWindow, "q"], display: display)
        #expect(notes.child.wait(timeout: 10) == 0)
        #expect(try window(titled: notes.title, display: display) == nil)
        // Its slot went with it; the other two still agree.
        #expect(running.apps[1].current == running.shared)
        #expect(chess.current == running.shared)
    }

    @Test func sigtermQuitsCleanlyAndTakesTheWindowAway() throws {
        let running = try startAll()
        let photos = running.apps[1]
        photos.child.signal(SIGTERM)
        #expect(photos.child.wait(timeout: 10) == 0)
        #expect(try window(titled: photos.title, display: running.server.display) == nil)
    }

    @Test func withoutADisplayTheAppSaysSoAndExitsWithStatusOne() throws {
        let session = try TestSession(display: nil)
        let result = try runCommand(Tools.product("acme-notes"), ["--namespace", session.namespace], environment: session.environment)
        #expect(result.status == 1)
        #expect(result.standardError.contains("DISPLAY"))
        let usage = try runCommand(Tools.product("acme-notes"), ["--bogus"], environment: session.environment)
        #expect(usage.status == 2)
        #expect(usage.standardError.hasPrefix("acme-notes: unknown option '--bogus'"))
    }
}
