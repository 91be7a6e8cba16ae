import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// libsecret, and with it GIO, GObject and GLib, is loaded only when the Secret
/// Service mirror is used: read from /proc/PID/maps of real `openudid serve`
/// processes while they run.
@Suite(.requiresXvfb) struct LibSecretLoadingTests {
    private static let glibFamily = ["libsecret-1.so", "libgio-2.0.so", "libgobject-2.0.so", "libglib-2.0.so", "libgcrypt.so"]

    /// The mappings of a running process, read to the end (a size-based read of a
    /// /proc file stops after its first page).
    private func mappedLibraries(of participant: Participant) throws -> String {
        let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(participant.child.pid)/maps"))
        defer { try? maps.close() }
        return String(decoding: try maps.readToEnd() ?? Data(), as: UTF8.self)
    }

    @Test func aParticipantWithTheFileMirrorNeverMapsLibsecretAndOneWithTheSecretServiceDoes() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(
            display: SharedDisplay.display, home: bus.home,
            extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])

        // A Secret Service is on the bus, but this participant's mirror is the file.
        let notes = try session.serve("com.acme.notes", ["--mirror", "file"])
        defer { notes.stop() }
        let fileMaps = try mappedLibraries(of: notes)
        #expect(fileMaps.contains("libxcb.so"), "the maps read are those of a running participant")
        for library in Self.glibFamily {
            #expect(!fileMaps.contains(library), "\(library) is mapped by a process that never used the Secret Service")
        }

        // Another app of the vendor keeps the mirror in the Secret Service: loaded, and used.
        let photos = try session.serve("com.acme.photos", ["--mirror", "secret-service"])
        defer { photos.stop() }
        let secretMaps = try mappedLibraries(of: photos)
        #expect(secretMaps.contains("libsecret-1.so.0"))
        let lookup = try runCommand(
            try Tools.find("secret-tool"), ["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"],
            environment: bus.environment())
        #expect(lookup.status == 0, "\(lookup.standardError)")
        let stored = try SlotRecord.parse(Data(lookup.standardOutput.utf8))
        #expect(stored.id.hex == photos.current)
        #expect(photos.current == notes.current)
    }

    @Test func withoutALoadableLibsecretTheSecretServiceIsUnavailableAndTheAutomaticChoiceUsesTheFile() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        // A libsecret-1.so.0 that cannot be loaded, found before the system's.
        let libraries = bus.home.root.appendingPathComponent("broken-libraries")
        try FileManager.default.createDirectory(at: libraries, withIntermediateDirectories: true)
        try Data().write(to: libraries.appendingPathComponent("libsecret-1.so.0"))
        let session = try TestSession(
            display: SharedDisplay.display, home: bus.home,
            extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "LD_LIBRARY_PATH": libraries.path])

        let chosen = try session.report("com.acme.notes")
        let mirror = try #require(chosen["mirror"] as? [String: Any])
        #expect(mirror["store"] as? String == "file", "a Secret Service that cannot be spoken to is not chosen")

        let asked = try session.run(["get", "--app", "com.acme.notes", "--mirror", "secret-service", "--json"])
        #expect(asked.status == 0, "the identifier is still resolved: \(asked.standardError)")
        #expect(asked.standardOutput.contains("cannot load libsecret-1.so.0"), "the report says why the mirror is unavailable")
        #expect(asked.standardOutput.contains(try #require(chosen["id"] as? String)))
    }
}
