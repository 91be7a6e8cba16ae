import Foundation
import TestSupport
import Testing

/// Example Mail drawn on Wayland (GDK_BACKEND=wayland) in a real weston,
/// mutter (GNOME) and kwin (KDE) session, with DISPLAY naming the
/// compositor's Xwayland: its window is a Wayland surface, and libopenudid
/// inside it takes part through DISPLAY, agreeing with the Swift apps of the
/// same session.
@Suite struct GtkMailOnWaylandTests {
    static let title = "Example Mail - net.example.mail"

    @Test(arguments: PrivateCompositor.Kind.allCases)
    func exampleMailDrawnOnWaylandAgreesThroughXwayland(_ kind: PrivateCompositor.Kind) throws {
        let program = try GtkMailTests.built.get()
        let compositor = try PrivateCompositor.forTest(kind)
        defer { compositor.stop() }
        let none = ["--mirror", "none"]
        // Every app has a home of its own, so nothing but Xwayland's selections connects them.
        let namespace = "t" + String(UUID().uuidString.prefix(8))
        func session() throws -> TestSession {
            try TestSession(display: compositor.display, namespace: namespace, extraEnvironment: compositor.environment())
        }
        let notes = try session().serve("com.acme.notes", none)
        let chess = try session().serve("org.indie.chess", none)
        defer { [notes, chess].forEach { $0.stop() } }
        #expect(eventually { notes.current == chess.current })
        let shared = try #require(notes.current)

        // WAYLAND_DEBUG makes libwayland log the requests the window makes, as proof it is drawn on Wayland.
        var environment = try Installation.shared.get().environment(try session().environment)
        environment.merge([
            "GDK_BACKEND": "wayland", "GSK_RENDERER": "cairo", "GTK_A11Y": "none", "NO_AT_BRIDGE": "1", "WAYLAND_DEBUG": "client"
        ]) {
            $1
        }
        let started = ContinuousClock.now
        let mail = try ChildProcess(program, ["--namespace", namespace] + none, environment: environment)
        defer { mail.stop() }
        #expect(eventually(timeout: 30) { mail.nextLine(timeout: 0.2) == shared }, "gtk-mail: \(mail.standardError.suffix(2000))")
        print("\(kind): Example Mail, drawn on Wayland, joined in \(started.duration(to: .now))")
        #expect(
            eventually { mail.standardError.contains("set_title(\"\(Self.title)\")") },
            "no Wayland toplevel titled \(Self.title): \(mail.standardError.prefix(2000))")

        // No X window of Example Mail on Xwayland: its only X connection is libopenudid's.
        let tree = try runCommand(
            Tools.find("xwininfo"), ["-root", "-tree"],
            environment: compositor.environment().merging(["LANG": "C", "PATH": "/usr/bin:/bin"]) { $1 })
        #expect(tree.status == 0, "\(tree.standardError)")
        #expect(!tree.standardOutput.contains(Self.title))
        let everyone = ["com.acme.notes": shared, "net.example.mail": shared, "org.indie.chess": shared]
        let observer = try session()
        #expect(eventually { occupiedSlots(observer, none) == everyone }, "\(occupiedSlots(observer, none))")

        mail.signal(SIGTERM)
        #expect(mail.wait(timeout: 10) == 0, "\(mail.standardError.suffix(2000))")
    }

    /// The apps serving a selection slot of `session`'s namespace, with their identifiers.
    private func occupiedSlots(_ session: TestSession, _ extra: [String]) -> [String: String] {
        guard let result = try? session.run(["slots", "--json"] + extra),
            let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
            let slots = object["slots"] as? [[String: Any]]
        else { return [:] }
        var found: [String: String] = [:]
        for slot in slots where slot["kind"] as? String == "selection" {
            found[slot["app"] as? String ?? ""] = slot["id"] as? String ?? ""
        }
        return found
    }
}
