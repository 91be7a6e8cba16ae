import Foundation
import TestSupport
import Testing

/// Example Mail, the GTK 4 app in C, built with its Makefile against the
/// installed library, runs under Xvfb (GDK_BACKEND=x11, GSK_RENDERER=cairo)
/// beside the Swift example apps and agrees with them.
@Suite(.requiresXvfb) struct GtkMailTests {
    static let zeros = String(repeating: "0", count: 40)
    static let title = "Example Mail - net.example.mail"

    /// `make -C Examples/gtk-mail`, once per test process, into the test's binaries.
    static let built = Result { () throws -> URL in
        let installation = try Installation.shared.get()
        let program = installation.binaries.appendingPathComponent("gtk-mail")
        let result = try runCommand(
            Tools.find("make"),
            ["-s", "-C", Installation.packageRoot.appendingPathComponent("Examples/gtk-mail").path, "OUT=\(program.path)"],
            environment: installation.environment(), timeout: 180)
        guard result.status == 0 else {
            throw HarnessError("make -C Examples/gtk-mail failed: \(result.standardError)\(result.standardOutput)")
        }
        return program
    }

    /// The identifier lines a running app printed.
    final class Printed: @unchecked Sendable {
        // `lines` is guarded by `lock`.
        private let lock = NSLock()
        private var lines: [String] = []
        let child: ChildProcess
        init(_ child: ChildProcess) { self.child = child }
        var all: [String] {
            while let line = child.nextLine(timeout: 0) { lock.withLock { lines.append(line) } }
            return lock.withLock { lines }
        }
        var current: String? { all.last }
    }

    private func tool(_ name: String, _ arguments: [String], display: String) throws -> String {
        try runCommand(Tools.find(name), arguments, environment: ["DISPLAY": display, "LANG": "C", "PATH": "/usr/bin:/bin"]).standardOutput
    }

    @Test func exampleMailAgreesWithTheSwiftAppsAndOptsOutAndBackIn() throws {
        let program = try Self.built.get()
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let notes = Printed(
            try ChildProcess(
                Tools.product("acme-notes"),
                [
                    "--namespace", session.namespace, "--mirror", "file",
                    "--geometry", "250x200+0+0"
                ], environment: session.environment))
        #expect(eventually(timeout: 15) { notes.current != nil }, "acme-notes: \(notes.child.standardError)")
        let shared = try #require(notes.current)

        var environment = try Installation.shared.get().environment(session.environment)
        environment.merge(["GDK_BACKEND": "x11", "GSK_RENDERER": "cairo", "GTK_A11Y": "none", "NO_AT_BRIDGE": "1"]) { $1 }
        let mail = Printed(try ChildProcess(program, ["--namespace", session.namespace, "--mirror", "file"], environment: environment))
        #expect(eventually(timeout: 20) { mail.current != nil }, "gtk-mail printed nothing: \(mail.child.standardError)")
        #expect(mail.current == shared)
        let chess = Printed(
            try ChildProcess(
                Tools.product("indie-chess"),
                [
                    "--namespace", session.namespace, "--mirror", "file",
                    "--geometry", "250x200+260+0"
                ], environment: session.environment))
        #expect(eventually(timeout: 15) { chess.current == shared }, "indie-chess: \(chess.all) \(chess.child.standardError)")

        // A real, mapped GTK window of this process.
        let tree = try tool("xwininfo", ["-root", "-tree"], display: server.display)
        let line = try #require(tree.split(separator: "\n").first { $0.contains("\"\(Self.title)\":") }, "no window titled \(Self.title)")
        let window = String(try #require(line.split(separator: " ").first))
        #expect(try tool("xwininfo", ["-id", window], display: server.display).contains("Map State: IsViewable"))
        #expect(try tool("xprop", ["-id", window, "_NET_WM_PID"], display: server.display).contains("= \(mail.child.pid)"))

        // SIGUSR1 flips the opt-out switch: zeros for Example Mail alone, then the shared value again.
        mail.child.signal(SIGUSR1)
        #expect(eventually(timeout: 10) { mail.current == Self.zeros }, "gtk-mail printed \(mail.all) \(mail.child.standardError)")
        #expect(notes.current == shared && chess.current == shared)
        mail.child.signal(SIGUSR1)
        #expect(eventually(timeout: 10) { mail.current == shared }, "gtk-mail printed \(mail.all)")
        #expect(mail.all == [shared, Self.zeros, shared])

        mail.child.signal(SIGTERM)
        #expect(mail.child.wait(timeout: 10) == 0, "\(mail.child.standardError)")
        #expect(!(try tool("xwininfo", ["-root", "-tree"], display: server.display).contains(Self.title)))
        for app in [notes, chess] {
            app.child.signal(SIGTERM)
            app.child.wait(timeout: 10)
        }
    }

    @Test func aWrongCommandLineIsStatusTwo() throws {
        let program = try Self.built.get()
        let result = try runCommand(program, ["--bogus"], environment: try Installation.shared.get().environment())
        #expect(result.status == 2)
        #expect(result.standardError.contains("unknown option --bogus"))
    }
}
