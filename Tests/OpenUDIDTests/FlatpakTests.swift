import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// Apps in real Flatpak sandboxes (`flatpak run`, on a runtime made from this
/// machine's libraries): what each permission an app's manifest may add
/// (`finish-args`) lets it share, and what the report tells an app that has
/// none of them. Every sandbox keeps its files in `~/.var/app/<id>/`, which no
/// other app reads.
@Suite struct FlatpakTests {
    static let x11 = ["--socket=x11"]
    static let hostFiles = ["--filesystem=xdg-data/openudid:create"]
    static let secrets = ["--talk-name=org.freedesktop.secrets"]

    /// The apps of one home, each a Flatpak app of its own.
    struct Apps {
        let home: PrivateHome
        let flatpak: FlatpakApps
        let namespace = "t" + String(UUID().uuidString.prefix(8))
        let display: String?
        let environment: [String: String]

        init(_ ids: [String], home: PrivateHome? = nil, display: String? = nil, environment: [String: String] = [:]) throws {
            self.home = try home ?? PrivateHome()
            flatpak = try FlatpakApps(home: self.home)
            for id in ids { try flatpak.install(id) }
            (self.display, self.environment) = (display, environment)
        }

        /// The app `id` run in its sandbox with `permissions`.
        func sandboxed(_ id: String, _ permissions: [String] = []) throws -> TestSession {
            try TestSession(
                display: display, namespace: namespace, home: home, extraEnvironment: environment,
                program: flatpak.program(id, permissions))
        }

        /// An app of the same home outside any sandbox.
        func host() throws -> TestSession {
            try TestSession(display: display, namespace: namespace, home: home, extraEnvironment: environment)
        }
    }

    @Test func sandboxedAppsWithTheX11SocketThatHoldIdentifiersConverge() throws {
        let server = try PrivateXServer()
        defer { server.stop() }
        let apps = try Apps(["com.acme.Notes", "com.acme.Photos"], display: server.display)
        // Each ran once alone: each holds an identifier of its own, in files only it reads.
        let notesAlone = try apps.sandboxed("com.acme.Notes").get("com.acme.notes")
        let photosAlone = try apps.sandboxed("com.acme.Photos").get("com.acme.photos")
        #expect(notesAlone != photosAlone)

        // Side by side on one display, with the X11 socket, they end on one of them.
        let started = ContinuousClock.now
        let notes = try apps.sandboxed("com.acme.Notes", Self.x11).serve("com.acme.notes")
        let photos = try apps.sandboxed("com.acme.Photos", Self.x11).serve("com.acme.photos")
        defer { [notes, photos].forEach { $0.stop() } }
        let host = try apps.host()
        let agreed = eventually(timeout: 30) { notes.current == photos.current }
        #expect(agreed, "notes \(notes.current ?? "-"), photos \(photos.current ?? "-"); the slots: \(occupiedSelectionSlots(host, []))")
        if agreed { print("Flatpak: two sandboxed apps that held identifiers agreed in \(started.duration(to: .now))") }
        #expect([notesAlone, photosAlone].contains(notes.current ?? ""))
        #expect(Set(occupiedSelectionSlots(host, []).map(\.app)) == ["com.acme.notes", "com.acme.photos"])
    }

    @Test func withXdgDataOpenudidSandboxedAppsShareTheHostsFileSlots() throws {
        let apps = try Apps(["com.acme.Notes", "org.indie.Chess"])
        // Each ran once alone, without the permission: two identifiers.
        let notesAlone = try apps.sandboxed("com.acme.Notes").get("com.acme.notes")
        let chessAlone = try apps.sandboxed("org.indie.Chess").get("org.indie.chess")
        #expect(notesAlone != chessAlone)
        let hostSlots = apps.home.dataHome.path + "/openudid/ns/\(apps.namespace)/slots"
        #expect(!FileManager.default.fileExists(atPath: hostSlots), "a sandbox wrote outside ~/.var/app")

        // An update adds the permission: both see the host's file slots, and
        // agree, with each other and with an app outside any sandbox.
        let notes = try apps.sandboxed("com.acme.Notes", Self.hostFiles)
        let chess = try apps.sandboxed("org.indie.Chess", Self.hostFiles)
        _ = try notes.get("com.acme.notes")
        let shared = try chess.get("org.indie.chess")
        #expect([notesAlone, chessAlone].contains(shared))
        #expect(try notes.get("com.acme.notes") == shared)
        #expect(try apps.host().get("net.other.viewer") == shared)
        let files = try FileManager.default.contentsOfDirectory(atPath: hostSlots)
        #expect(Set(files) == ["com.acme.notes.json", "org.indie.chess.json", "net.other.viewer.json"])
    }

    @Test func withoutX11AVendorsSandboxedAppsShareThroughTheKeyring() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let apps = try Apps(
            ["com.acme.Notes", "com.acme.Photos", "com.acme.Mail", "org.indie.Chess"], home: bus.home,
            environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let notes = try apps.sandboxed("com.acme.Notes", Self.secrets).report("com.acme.notes")
        #expect((notes["mirror"] as? [String: Any])?["store"] as? String == "secret-service", "\(notes)")
        let acme = try #require(notes["id"] as? String)
        // Another app of the vendor, installed afresh, takes the vendor's identifier from the keyring.
        #expect(try apps.sandboxed("com.acme.Photos", Self.secrets).get("com.acme.photos") == acme)
        // Another vendor's app does not, and neither does the vendor's app without the permission,
        // whose report says why it had only a file of its own for a mirror.
        #expect(try apps.sandboxed("org.indie.Chess", Self.secrets).get("org.indie.chess") != acme)
        let mail = try apps.sandboxed("com.acme.Mail").report("com.acme.mail")
        #expect(mail["id"] as? String != acme)
        let mirror = mail["mirror"] as? [String: Any]
        #expect(mirror?["store"] as? String == "file")
        let detail = mirror?["detail"] as? String ?? ""
        #expect(detail.contains("no Secret Service on the session bus"), "\(detail)")
        let sandboxed = (mail["environment"] as? [[String: Any]])?.first?["detail"] as? String ?? ""
        #expect(sandboxed.contains("--talk-name=org.freedesktop.secrets"), "\(sandboxed)")
    }

    @Test func withNeitherTheReportSaysWhatTheSandboxedAppCanKnow() throws {
        let server = try PrivateXServer()
        defer { server.stop() }
        let apps = try Apps(["com.acme.Notes", "com.acme.Photos"], display: server.display)
        let report = try apps.sandboxed("com.acme.Notes").report("com.acme.notes")
        let notes = report["environment"] as? [[String: Any]] ?? []
        #expect(notes.compactMap { $0["code"] as? String } == ["sandboxed", "no-display"], "\(notes)")
        let sandboxed = notes.first?["detail"] as? String ?? ""
        for permission in ["--socket=x11", "--filesystem=xdg-data/openudid:create", "--talk-name=org.freedesktop.secrets"] {
            #expect(sandboxed.contains(permission), "\(sandboxed)")
        }
        let display = notes.last?["detail"] as? String ?? ""
        #expect(display.contains("--socket=x11") && !display.contains("started with"), "\(display)")
        let selections = (report["sources"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "selections" }
        #expect(selections?["state"] as? String == "unavailable")
        // And it is alone: the vendor's other app, with no permission either, has an identifier of its own.
        #expect(try apps.sandboxed("com.acme.Photos").get("com.acme.photos") != report["id"] as? String)
    }

    /// Flathub's usual permissions for a Wayland app, `--socket=wayland
    /// --socket=fallback-x11`, give no X11 in a Wayland session: the note names
    /// the permission that does.
    @Test func inAWaylandSessionFallbackX11GivesNoDisplayAndTheNoteNamesX11() throws {
        let weston = try PrivateCompositor.forTest(.weston)
        defer { weston.stop() }
        let apps = try Apps(["com.acme.Notes"], display: weston.display, environment: weston.environment())
        let wayland = try apps.sandboxed("com.acme.Notes", ["--socket=wayland", "--socket=fallback-x11"]).report("com.acme.notes")
        let notes = wayland["environment"] as? [[String: Any]] ?? []
        #expect(notes.compactMap { $0["code"] as? String } == ["sandboxed", "wayland-without-x"], "\(notes)")
        let detail = notes.last?["detail"] as? String ?? ""
        #expect(detail.contains("--socket=x11") && detail.contains("fallback-x11"), "\(detail)")

        // With the X11 socket as well, the same app takes part in the selections of the session.
        let host = try apps.host().serve("org.indie.chess")
        defer { host.stop() }
        let x11 = try apps.sandboxed("com.acme.Notes", ["--socket=wayland", "--socket=x11"]).report("com.acme.notes")
        let selections = (x11["sources"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "selections" }
        #expect(selections?["state"] as? String == "read", "\(x11)")
    }

    /// What reaches a sandboxed app of the user's opt-out for every app
    /// (`~/.config/openudid/opt-out`), permission by permission: only
    /// `xdg-config/openudid`, which Flatpak binds into the sandbox's own
    /// config directory, where the app looks; not even the whole home does.
    /// Flatpak binds the directory only if it exists when the app starts.
    @Test func theUserWideOptOutReachesASandboxOnlyThroughXdgConfigOpenudid() throws {
        let apps = try Apps(["com.acme.Notes"])
        #expect(try apps.host().run(["opt-out", "--all"]).status == 0)
        let zeros = Identifier.optedOut.hex
        let reached = try ["", "--filesystem=home", "--filesystem=host", "--filesystem=xdg-config", "--filesystem=xdg-config/openudid:ro"]
            .filter { try apps.sandboxed("com.acme.Notes", $0.isEmpty ? [] : [$0]).get("com.acme.notes") == zeros }
        #expect(reached == ["--filesystem=xdg-config/openudid:ro"])

        // Once the user's directory exists, an opt-out reaches a running app too, and so does opting back in.
        #expect(try apps.host().run(["opt-out", "--all", "--undo"]).status == 0)
        let notes = try apps.sandboxed("com.acme.Notes", ["--filesystem=xdg-config/openudid:ro"]).serve("com.acme.notes")
        defer { notes.stop() }
        let identifier = try #require(notes.current)
        #expect(identifier != zeros)
        #expect(try apps.host().run(["opt-out", "--all"]).status == 0)
        #expect(notes.nextIdentifier(timeout: 10) == zeros)
        #expect(try apps.host().run(["opt-out", "--all", "--undo"]).status == 0)
        #expect(notes.nextIdentifier(timeout: 10) == identifier)
    }
}
