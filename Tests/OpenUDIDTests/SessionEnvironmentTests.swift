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

    /// A display number nobody serves, and a name that is no display: every command
    /// that wanted the display says so on standard error, with the reason and the
    /// remedy, and `get` and `slots`, whose answers lack the selections, exit with 5.
    @Test(arguments: [(":4321", "no server is listening there"), ("garbage", "that is not a display name")])
    func anUnreachableXServerIsSaidByEveryCommandThatWantedIt(display: String, reason: String) throws {
        let session = try TestSession(display: nil, extraEnvironment: ["DISPLAY": display])
        let said = "no selections: cannot open X display \"\(display)\": \(reason)"
        let get = try session.run(["get", "--app", "com.acme.notes", "--mirror", "none", "--json"])
        #expect(get.status == 5, "\(get.standardError)")
        #expect(get.standardError.hasPrefix("openudid get: \(said)"), "\(get.standardError)")
        #expect(get.standardError.contains("--no-display leaves the display unused"), "\(get.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(get.standardOutput.utf8)) as? [String: Any])
        #expect(notes(report).keys.sorted() == ["x-unreachable"])
        #expect((report["id"] as? String)?.count == 40, "the identifier is printed all the same")

        let slots = try session.run(["slots"])
        #expect(slots.status == 5, "\(slots.standardError)")
        #expect(slots.standardError.hasPrefix("openudid slots: \(said)"), "\(slots.standardError)")
        #expect(slots.standardOutput.contains("com.acme.notes"), "the file slots are listed: \(slots.standardOutput)")

        let serve = try session.serve("com.acme.notes", ["--mirror", "none"])
        #expect(serve.current == report["id"] as? String)
        #expect(eventually(timeout: 10) { serve.child.standardError.contains("openudid serve: \(said)") }, "\(serve.child.standardError)")
        serve.stop()
        #expect(serve.child.exitStatus == 0)

        // Leaving the display unused is no news.
        let quiet = try session.run(["get", "--app", "com.acme.notes", "--mirror", "none", "--no-display"])
        #expect(quiet.status == 0 && quiet.standardError.isEmpty, "\(quiet.standardError)")
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
