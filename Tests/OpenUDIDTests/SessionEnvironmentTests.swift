import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// A report says what about the session limits sharing: a Flatpak sandbox, a
/// Wayland session without DISPLAY, no X display, an X server that cannot be
/// reached (`environment` in `openudid get --json`).
@Suite struct SessionEnvironmentTests {
    private func notes(_ report: [String: Any]) -> [String: String] {
        var notes: [String: String] = [:]
        for note in report["environment"] as? [[String: Any]] ?? [] {
            if let code = note["code"] as? String { notes[code] = note["detail"] as? String ?? "" }
        }
        return notes
    }

    @Test func anOrdinaryX11SessionHasNoNotes() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let report = try session.report("com.acme.notes", ["--mirror", "none"])
        #expect(report["environment"] as? [Any] != nil, "the key is always there")
        #expect(notes(report).isEmpty)
    }

    @Test func aFlatpakSandboxIsNamedWithWhatItNeeds() throws {
        let session = try TestSession(
            display: SharedDisplay.display, extraEnvironment: ["FLATPAK_ID": "com.acme.notes"])
        let detail = try #require(notes(try session.report("com.acme.notes", ["--mirror", "none"]))["sandboxed"])
        #expect(detail.contains("com.acme.notes"))
        #expect(detail.contains("--socket=x11"))
        #expect(detail.contains("xdg-data/openudid"))
    }

    /// A Flatpak user cannot start an app with DISPLAY: the note names the permission its manifest adds.
    @Test func inASandboxWithoutDisplayTheNoteNamesTheX11Socket() throws {
        for wayland in [[:], ["WAYLAND_DISPLAY": "wayland-0"]] {
            let session = try TestSession(display: nil, extraEnvironment: ["FLATPAK_ID": "com.acme.Notes"].merging(wayland) { $1 })
            let found = notes(try session.report("com.acme.notes", ["--mirror", "none"]))
            let display = try #require(found[wayland.isEmpty ? "no-display" : "wayland-without-x"])
            #expect(display.contains("--socket=x11") && display.contains("fallback-x11"), "\(display)")
            #expect(!display.contains("started with"), "\(display)")
        }
    }

    @Test func aWaylandSessionWithoutDisplaySaysSelectionsAreOutOfReach() throws {
        let session = try TestSession(display: nil, extraEnvironment: ["WAYLAND_DISPLAY": "wayland-0"])
        let found = notes(try session.report("com.acme.notes", ["--mirror", "none"]))
        #expect(found.keys.sorted() == ["wayland-without-x"])
        #expect(found["wayland-without-x"]?.contains("file slots") == true)
    }

    @Test func noDisplayAtAllIsSaid() throws {
        let session = try TestSession(display: nil)
        #expect(notes(try session.report("com.acme.notes", ["--mirror", "none"])).keys.sorted() == ["no-display"])
    }

    @Test func anUnreachableXServerIsSaid() throws {
        // A display number nobody serves: the tool works from its files and says why.
        let session = try TestSession(display: nil, extraEnvironment: ["DISPLAY": ":4321"])
        #expect(notes(try session.report("com.acme.notes", ["--mirror", "none"])).keys.sorted() == ["x-unreachable"])
    }

    @Test func flatpakDetectionReadsTheInfoFileToo() throws {
        let directory = try TemporaryDirectory()
        let info = directory.path + "/.flatpak-info"
        #expect(SessionEnvironment.flatpakApp([:], info: info) == nil)
        #expect(FileManager.default.createFile(atPath: info, contents: Data("[Application]\n".utf8)))
        #expect(SessionEnvironment.flatpakApp([:], info: info) != nil)
        #expect(SessionEnvironment.flatpakApp(["FLATPAK_ID": "org.example.App"], info: "/nonexistent") == "org.example.App")
    }
}
