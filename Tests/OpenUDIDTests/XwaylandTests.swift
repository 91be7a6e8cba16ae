import Foundation
import TestSupport
import Testing

/// Wayland sessions with Xwayland, as the desktops people run start them: a
/// real weston, GNOME's mutter and KDE's kwin, headless, each with the
/// Xwayland it starts (at the first X client or at once) and starts again
/// after it crashes. Apps that have DISPLAY share through Xwayland's
/// selections; an app without it is told what it can and cannot know.
///
/// The tests print the figures the README's Supported table quotes.
@Suite struct XwaylandTests {
    static let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
    static let none = ["--mirror", "none"]
    /// The selections alone: no file slot, cache or mirror.
    static let selectionsOnly = ["--no-files", "--mirror", "none"]

    /// Three apps of two vendors, each in a home of its own, on the
    /// compositor's Xwayland display, with the selections alone: only the
    /// selections can bring them together.
    ///
    /// Without files, too: an app whose first look missed its neighbour's
    /// answer (a loaded machine can hold that past the read deadline) would
    /// otherwise keep the identifier it generated in its own files, as
    /// docs/PROTOCOL.md §6.1 says it must, and apps of separate homes would
    /// rightly stay apart. With the selections alone they vote again and agree.
    private func startApps(_ compositor: PrivateCompositor) throws -> (sessions: [TestSession], participants: [Participant]) {
        let namespace = "t" + String(UUID().uuidString.prefix(8))
        let sessions = try Self.apps.map { _ in
            try TestSession(display: compositor.display, namespace: namespace, extraEnvironment: compositor.environment())
        }
        let participants = try zip(sessions, Self.apps).map { session, app in try session.serve(app, Self.selectionsOnly) }
        return (sessions, participants)
    }

    /// Whether the display's selection slots hold exactly `apps`, all serving `identifier`.
    private func slotsAgree(_ session: TestSession, on identifier: String) -> Bool {
        let slots = occupiedSelectionSlots(session, Self.selectionsOnly)
        return slots.count == Self.apps.count && Set(slots.map(\.id)) == [identifier] && Set(slots.map(\.app)) == Set(Self.apps)
    }

    @Test(arguments: PrivateCompositor.Kind.allCases)
    func threeAppsOfTwoVendorsConvergeThroughXwayland(_ kind: PrivateCompositor.Kind) throws {
        let compositor = try PrivateCompositor.forTest(kind)
        defer { compositor.stop() }
        let started = ContinuousClock.now
        let (sessions, participants) = try startApps(compositor)
        defer { participants.forEach { $0.stop() } }

        #expect(eventually { Set(participants.map(\.current)).count == 1 }, "\(participants.map(\.current))")
        let shared = try #require(participants[0].current)
        #expect(eventually { slotsAgree(sessions[0], on: shared) }, "\(occupiedSelectionSlots(sessions[0], Self.selectionsOnly))")
        print("\(kind): three apps of two vendors agreed in \(started.duration(to: .now))")
        // The apps' X server is the Xwayland the compositor started for them, on its display.
        let xwayland = try compositor.waitForXwayland()
        #expect(Array(PrivateCompositor.arguments(of: xwayland).prefix(2)) == ["/usr/bin/Xwayland", compositor.display])
        for participant in participants {
            #expect(participant.child.standardError.isEmpty, "\(participant.app) printed: \(participant.child.standardError)")
        }
    }

    @Test(arguments: PrivateCompositor.Kind.allCases)
    func appsSurviveAnXwaylandRestartAndAgreeAfterwards(_ kind: PrivateCompositor.Kind) throws {
        let compositor = try PrivateCompositor.forTest(kind)
        defer { compositor.stop() }
        if let why = compositor.noXwaylandRestart { try skip("\(kind) cannot restart Xwayland here: \(why)") }
        let (sessions, participants) = try startApps(compositor)
        defer { participants.forEach { $0.stop() } }
        #expect(eventually { Set(participants.map(\.current)).count == 1 })
        let shared = try #require(participants[0].current)
        #expect(eventually { slotsAgree(sessions[0], on: shared) })

        // A crash of Xwayland: the compositor starts a new server on the same
        // display, at once or when the apps reconnect.
        try compositor.waitForXwayland()
        let killed = try compositor.killXwayland()
        let crashed = ContinuousClock.now
        try compositor.waitForXwayland(replacing: killed)
        #expect(
            eventually(timeout: 30) { slotsAgree(sessions[0], on: shared) },
            "after the restart: \(occupiedSelectionSlots(sessions[0], Self.selectionsOnly)); \(kind)'s log:\n\(compositor.log)")
        print("\(kind): every slot was back \(crashed.duration(to: .now)) after Xwayland was killed")
        #expect(compositor.isRunning)
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended with Xwayland: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
        // A fresh app of another vendor, in a home of its own, finds the identifier on the new server.
        let newcomer = try TestSession(
            display: compositor.display, namespace: sessions[0].namespace, extraEnvironment: compositor.environment())
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
        let weston = try PrivateCompositor.forTest(.weston)
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

    /// mutter's Xwayland asks for the cookie in its authority file; an app
    /// without XAUTHORITY is refused, and the server's reason, which ends in a
    /// newline, is quoted on one line.
    @Test func anXwaylandThatWantsAuthorizationIsReportedOnOneLine() throws {
        let mutter = try PrivateCompositor.forTest(.mutter)
        defer { mutter.stop() }
        let session = try TestSession(display: mutter.display)
        let report = try session.report("com.acme.notes", Self.none, status: 5)
        let notes = report["environment"] as? [[String: Any]] ?? []
        #expect(notes.compactMap { $0["code"] as? String } == ["x-unreachable"], "\(notes)")
        let detail = notes.first?["detail"] as? String ?? ""
        #expect(detail.contains("refused the connection (") && detail.contains("authorization"), "\(detail)")
        #expect(!detail.contains("\n"), "\(detail)")
    }
}
