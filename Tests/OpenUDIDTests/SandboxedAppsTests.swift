import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Apps in Flatpak-style sandboxes of one user: each keeps its files in its own
/// `~/.var/app/<id>/`, which no other app reads, unless the host's openudid
/// directory is bound in (docs/PROTOCOL.md §4, §6.1). The sandboxes here are the
/// environment Flatpak gives an app (its own XDG directories and `FLATPAK_ID`);
/// the real `flatpak run` is in `FlatpakTests`.
@Suite(.requiresXvfb) struct SandboxedAppsTests {
    static let options = ["--mirror", "file"]

    /// The environment of `app` sandboxed in `session`'s home.
    static func sandbox(_ session: TestSession, _ app: String) -> [String: String] {
        let own = session.home.root.path + "/.var/app/" + app
        return [
            "FLATPAK_ID": app, "XDG_DATA_HOME": own + "/data", "XDG_CONFIG_HOME": own + "/config", "XDG_CACHE_HOME": own + "/cache"
        ]
    }

    /// The same user's session, as `app` sees it from its sandbox.
    static func sandboxed(_ session: TestSession, _ app: String, display: String?) throws -> TestSession {
        try TestSession(display: display, namespace: session.namespace, home: session.home, extraEnvironment: sandbox(session, app))
    }

    /// Two apps of one vendor that each ran once alone keep identifiers of their
    /// own in files only they read; serving side by side on one display, they
    /// converge on the one born first, and write it to their own files.
    @Test func sandboxedAppsThatEachHoldAnIdentifierConvergeOnTheDisplay() throws {
        let session = try TestSession(display: nil)
        let apps = ["com.acme.notes", "com.acme.photos"]
        let alone = try apps.map { try Self.sandboxed(session, $0, display: nil).report($0, Self.options) }
        let first = try #require(alone[0]["id"] as? String)
        let second = try #require(alone[1]["id"] as? String)
        #expect(first != second, "each generated its own, in its own files")
        let older = (alone[0]["born"] as? Int64 ?? 0) <= (alone[1]["born"] as? Int64 ?? 0) ? first : second

        let participants = try apps.map { try Self.sandboxed(session, $0, display: SharedDisplay.display).serve($0, Self.options) }
        defer { participants.forEach { $0.stop() } }
        #expect(
            eventually(timeout: 20) { participants.allSatisfy { $0.current == older } },
            "\(participants.map { "\($0.app)=\($0.current ?? "-")" }), the older \(older)")
        participants.forEach { $0.stop() }
        for app in apps {
            let report = try Self.sandboxed(session, app, display: nil).report(app, Self.options)
            #expect(report["id"] as? String == older, "\(app) kept \(older) in its own files")
        }
    }

    /// With the host's openudid directory bound in (`--filesystem=xdg-data/openudid:create`),
    /// a sandboxed app reads and writes the host's file slots, which every app
    /// shares. The binding is made as Flatpak makes it, in a mount namespace of
    /// the app's own (`unshare`); where a user cannot have one, the test says so.
    @Test func aSandboxGivenTheHostsDirectorySharesItsFileSlots() throws {
        let session = try TestSession(display: nil)
        let sandbox = try Self.sandboxed(session, "com.acme.notes", display: nil)
        _ = try session.get("org.indie.chess", Self.options)
        let hostDirectory = session.home.dataHome.appendingPathComponent("openudid").path
        // The host's directory exists, but a sandbox not given it does not count it as seen.
        let privately = try sandbox.report("com.acme.notes", Self.options)
        #expect(privately["decidedBy"] as? String != "durable", "\(privately)")

        let unshare = try Tools.find("unshare")
        guard (try? runCommand(unshare, ["-rm", "true"], environment: [:]))?.status == 0 else {
            print("skipped: no user and mount namespace for this user (unshare -rm), so no binding can be made")
            return
        }
        let bound = try runCommand(
            unshare,
            [
                "-rm", "sh", "-c", "mount --bind \"$0\" \"$0\" && exec \"$@\"", hostDirectory, Tools.product("openudid").path, "get",
                "--app", "com.acme.notes", "--json"
            ] + Self.options + sandbox.commonArguments,
            environment: sandbox.environment)
        #expect(bound.status == 0, "\(bound.standardError)")
        let shared = try JSONSerialization.jsonObject(with: Data(bound.standardOutput.utf8)) as? [String: Any] ?? [:]
        #expect(shared["decidedBy"] as? String == "durable", "\(shared)")
        let ballots = (shared["agreeing"] as? [[String: Any]] ?? []) + (shared["disagreeing"] as? [[String: Any]] ?? [])
        #expect(ballots.contains { $0["app"] as? String == "org.indie.chess" }, "the host's file slot votes: \(ballots)")
        #expect(FileManager.default.fileExists(atPath: hostDirectory + "/ns/\(session.namespace)/slots/com.acme.notes.json"))
    }

    /// A reset on the host writes the host's marker, which a sandbox not given the
    /// host's directory cannot see: finding no marker in its own, it cannot know
    /// of the reset, and follows the live majority of any generation (§6, §9):
    /// here two apps of the host serving the identifier of generation 1.
    @Test func aSandboxThatCannotSeeTheHostsResetFollowsTheLiveMajorityOfTheNewGeneration() throws {
        let session = try TestSession(display: nil)
        let own = try Self.sandboxed(session, "com.acme.notes", display: nil).get("com.acme.notes", Self.options)
        #expect(try session.run(["reset"]).status == 0)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let renewed = Identifier.random()
        let owners = try ["com.acme.photos", "org.indie.chess"].enumerated().map { index, app in
            let record = SlotRecord(id: renewed, app: try AppIdentity(app), born: now - 1000, written: now, generation: 1)
            return try startSelectionHelper(
                display: SharedDisplay.display,
                [
                    "own", "--prefix", session.slotName(70 + index), "--target", "_OPENUDID_RECORD", "--text",
                    String(decoding: record.encoded(), as: UTF8.self)
                ])
        }
        defer { owners.forEach { $0.signal(SIGKILL) } }

        let report = try Self.sandboxed(session, "com.acme.notes", display: SharedDisplay.display).report("com.acme.notes", Self.options)
        #expect(report["id"] as? String == renewed.hex, "it kept \(own): \(report["ignored"] ?? "")")
        #expect(report["decidedBy"] as? String == "live")
    }

    /// With private files the mirror is part of the app's own live ballot, so a
    /// pass settles only with the mirror read (§5.1): here an older identifier
    /// there makes the app's own ballot a second value, which one frozen owner
    /// could bring level with the two that answered. The pass is not settled, and
    /// the frozen slot is waited for to the deadline (`no-answer`, not `not-awaited`).
    @Test func aSandboxSettlesOnlyWithItsMirrorRead() throws {
        let session = try TestSession(display: nil)
        let alone = try Self.sandboxed(session, "com.acme.notes", display: nil)
        let own = try alone.get("com.acme.notes", Self.options)
        let paths = try StoragePaths(environment: alone.environment, namespace: session.namespace)
        let older = SlotRecord(
            id: Identifier.random(), app: try AppIdentity("com.acme.photos"), born: 1_600_000_000_000,
            written: Int64(Date().timeIntervalSince1970 * 1000))
        try older.encoded().write(to: URL(fileURLWithPath: paths.vendorsDirectory + "/com.acme.json"))

        let owners = try ["com.peer.one", "com.peer.two", "com.peer.frozen"].enumerated().map { index, app in
            let record = SlotRecord(
                id: try Identifier(parsing: own), app: try AppIdentity(app), born: 1_650_000_000_000, written: older.written)
            return try startSelectionHelper(
                display: SharedDisplay.display,
                [
                    "own", "--prefix", session.slotName(80 + index), "--target", "_OPENUDID_RECORD", "--text",
                    String(decoding: record.encoded(), as: UTF8.self)
                ])
        }
        defer {
            owners[2].signal(SIGCONT)
            owners.forEach { $0.signal(SIGKILL) }
        }
        owners[2].signal(SIGSTOP)

        let report = try Self.sandboxed(session, "com.acme.notes", display: SharedDisplay.display).report("com.acme.notes", Self.options)
        #expect(report["id"] as? String == own)
        let codes = (report["rejected"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(codes.contains("no-answer") && !codes.contains("not-awaited"), "\(report["rejected"] ?? "none")")
    }
}
