import Foundation
import TestSupport
import Testing

/// A Wayland session with Xwayland, as GNOME and KDE Plasma run one: a real
/// weston (headless) that starts Xwayland at the first X client and again
/// after it crashes. Apps that have DISPLAY share through Xwayland's
/// selections; an app without it is told what it can and cannot know.
@Suite(.requiresWeston) struct XwaylandTests {
    static let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
    static let none = ["--mirror", "none"]
    /// The selections alone: no file slot, cache or mirror.
    static let selectionsOnly = ["--no-files", "--mirror", "none"]

    /// Three apps of two vendors on weston's Xwayland display, with the
    /// selections alone: only Xwayland can bring them together.
    ///
    /// Without files, too: an app whose first look missed its neighbour's
    /// answer (a loaded machine can hold that past the read deadline) would
    /// otherwise keep the identifier it generated in its own files, as
    /// docs/PROTOCOL.md §6.1 says it must, and apps of separate homes would
    /// rightly stay apart. With the selections alone they vote again and agree.
    private func startApps(_ weston: PrivateWeston) throws -> (sessions: [TestSession], participants: [Participant]) {
        let namespace = "t" + String(UUID().uuidString.prefix(8))
        let sessions = try Self.apps.map { _ in
            try TestSession(display: weston.display, namespace: namespace, extraEnvironment: weston.environment())
        }
        let participants = try zip(sessions, Self.apps).map { session, app in try session.serve(app, Self.selectionsOnly) }
        return (sessions, participants)
    }

    /// Whether the display's selection slots hold exactly `apps`, all serving `identifier`.
    private func slotsAgree(_ session: TestSession, on identifier: String) -> Bool {
        let slots = occupiedSelectionSlots(session, Self.selectionsOnly)
        return slots.count == Self.apps.count && Set(slots.map(\.id)) == [identifier] && Set(slots.map(\.app)) == Set(Self.apps)
    }

    @Test func threeAppsOfTwoVendorsConvergeThroughXwayland() throws {
        let weston = try PrivateWeston()
        defer { weston.stop() }
        let (sessions, participants) = try startApps(weston)
        defer { participants.forEach { $0.stop() } }

        #expect(eventually { Set(participants.map(\.current)).count == 1 }, "\(participants.map(\.current))")
        let shared = try #require(participants[0].current)
        #expect(eventually { slotsAgree(sessions[0], on: shared) }, "\(occupiedSelectionSlots(sessions[0], Self.selectionsOnly))")
        // The apps' X server is the one Xwayland weston started for them, on weston's display.
        let xwayland = try weston.waitForXwayland()
        #expect(weston.xwaylandStarts == [xwayland], "weston's log:\n\(weston.log)")
        let command = (try? String(contentsOfFile: "/proc/\(xwayland)/cmdline", encoding: .utf8)) ?? ""
        #expect(command.split(separator: "\0").prefix(2) == ["/usr/bin/Xwayland", Substring(weston.display)], "\(command)")
        for participant in participants {
            #expect(participant.child.standardError.isEmpty, "\(participant.app) printed: \(participant.child.standardError)")
        }
    }

    @Test func appsSurviveAnXwaylandRestartAndAgreeAfterwards() throws {
        let weston = try PrivateWeston()
        defer { weston.stop() }
        let (sessions, participants) = try startApps(weston)
        defer { participants.forEach { $0.stop() } }
        #expect(eventually { Set(participants.map(\.current)).count == 1 })
        let shared = try #require(participants[0].current)
        #expect(eventually { slotsAgree(sessions[0], on: shared) })

        // A crash of Xwayland: weston listens again on the same display and
        // starts a new server when the apps reconnect.
        try weston.waitForXwayland()
        let starts = weston.xwaylandStarts.count
        let killed = try weston.killXwayland()
        let restarted = try weston.waitForXwayland(after: starts, timeout: 30)
        #expect(restarted != killed)
        #expect(
            eventually(timeout: 30) { slotsAgree(sessions[0], on: shared) },
            "after the restart: \(occupiedSelectionSlots(sessions[0], Self.selectionsOnly)); weston's log:\n\(weston.log)")
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended with Xwayland: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
        // A fresh app of another vendor, in a home of its own, finds the identifier on the new server.
        let newcomer = try TestSession(display: weston.display, namespace: sessions[0].namespace, extraEnvironment: weston.environment())
        #expect(try newcomer.get("net.other.viewer", Self.selectionsOnly) == shared)

        // The library never prints, not even when its X server dies under it.
        for participant in participants {
            let printed = participant.child.standardError
            // libX11 used to print "Xlib: request 43 length 4 would exceed buffer
            // size." here; XSelection speaks libxcb alone, which prints nothing.
            #expect(printed.isEmpty, "\(participant.app) printed: \(printed)")
        }
    }

    @Test func anAppWithoutDisplayInAWaylandSessionIsToldWhatItCanKnow() throws {
        let weston = try PrivateWeston()
        defer { weston.stop() }
        let session = try TestSession(display: weston.display, extraEnvironment: weston.environment())
        let notes = try session.serve("com.acme.notes", Self.none)
        defer { notes.stop() }
        let shared = try #require(notes.current)
        try weston.waitForXwayland()
        // With DISPLAY as well, as a Wayland desktop starts its apps, nothing limits sharing.
        let full = try session.report("com.acme.photos", Self.none)
        #expect((full["environment"] as? [Any])?.isEmpty == true, "\(full["environment"] ?? "no environment")")
        #expect(full["id"] as? String == shared)

        // The same home and Wayland session, but DISPLAY unset: Xwayland runs,
        // yet nothing in this app's environment can say so.
        let waylandOnly = try TestSession(
            display: nil, namespace: session.namespace, home: session.home, extraEnvironment: weston.environment(withDisplay: false))
        let report = try waylandOnly.report("org.indie.chess", Self.none)
        #expect(report["id"] as? String == shared, "the file slots still carry the identifier")
        let notesFound = (report["environment"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(notesFound == ["wayland-without-x"])
        let detail = (report["environment"] as? [[String: Any]])?.first?["detail"] as? String ?? ""
        #expect(detail.contains(weston.waylandDisplay))
        #expect(detail.contains("DISPLAY unset"))
        #expect(detail.contains("Xwayland display, when it has one, as DISPLAY"))
        #expect(!detail.contains("without Xwayland"), "Xwayland runs on \(weston.display); the app cannot know otherwise")
        #expect(weston.xwayland != nil)
        let selections = (report["sources"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "selections" }
        #expect(selections?["state"] as? String != "read")
    }
}
