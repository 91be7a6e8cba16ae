import Foundation
import TestSupport
import Testing
import XSelection

@testable import OpenUDIDKit

/// The library API used from inside a host process, as an app would.
@Suite(.requiresXvfb) struct InProcessAPITests {
    private func configuration(_ session: TestSession, mirror: MirrorChoice = .none) -> OpenUDID.Configuration {
        OpenUDID.Configuration(display: session.display, namespace: session.namespace, mirror: mirror, environment: session.environment)
    }

    @Test func valueIsCachedUntilARefreshIsAskedFor() throws {
        let session = try TestSession(display: nil)
        let udid = try OpenUDID(app: "com.acme.notes", configuration: configuration(session))
        let first = udid.value()
        #expect(first.hex.count == 40)
        // Files removed under a running app are not seen without a refresh...
        try OpenUDID.User(namespace: session.namespace, environment: session.environment).removeApp("com.acme.notes")
        #expect(udid.value() == first)
        // ...and with one, the app keeps the value it holds (absence of ballots
        // is not evidence of absence) and writes it back.
        let refreshed = udid.resolve(refresh: true)
        #expect(refreshed.identifier == first)
        #expect(refreshed.repairs.contains(.written(.fileSlot)))
        // Uninstalling ends the process too: the next process, with nothing left, generates anew.
        try OpenUDID.User(namespace: session.namespace, environment: session.environment).removeApp("com.acme.notes")
        let reinstalled = try OpenUDID(app: "com.acme.notes", configuration: configuration(session))
        #expect(reinstalled.value() != first)
    }

    @Test func aParticipationPublishesItsSlotAndReportsChanges() async throws {
        let session = try TestSession(display: SharedDisplay.display)
        let notes = try OpenUDID(app: "com.acme.notes", configuration: configuration(session))
        let participation = try await notes.participate()
        defer { participation.close() }
        let changes = SequenceReader(participation.changes)
        let first = await changes.next().element
        let slot = try #require(participation.slot)
        #expect(slot == 0)
        let value = await notes.value()
        #expect(first?.identifier == value)

        // Another process sees it in slot 0.
        let chess = try session.report("org.indie.chess", ["--mirror", "none"])
        #expect(chess["id"] as? String == value.hex)

        // Opting out is seen live: the change stream reports the zero identifier.
        try notes.optOut()
        await participation.refresh()
        let optedOut = await changes.next().element
        #expect(optedOut?.identifier == .optedOut)
        #expect(participation.report.optOut == .app)
        try notes.optIn()
        await participation.refresh()
        let back = await changes.next().element
        #expect(back?.identifier.hex == chess["id"] as? String)
    }

    /// notes taking part on an X server of its own, so that a slot's move never
    /// waits behind other tests' floods; the server is returned to keep it running.
    private func notesOnAServerOfItsOwn() async throws -> (PrivateXServer, TestSession, Participation) {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let notes = try OpenUDID(app: "com.acme.notes", configuration: configuration(session))
        return (server, session, try await notes.participate())
    }

    /// Takes slot 0 by force, as a stranger on the display would, serving bytes that are no record.
    private func stealSlotZero(_ session: TestSession) throws -> SelectionOwner {
        let thief = try SelectionOwner(display: session.display)
        try thief.claim(
            SelectionName("_OPENUDID_\(session.namespace)_SLOT_0"),
            payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("not a record".utf8))])
        return thief
    }

    @Test func anAppMovesToAnotherSlotWhileItsHostBlocksTheSharedTaskPool() async throws {
        let (server, session, participation) = try await notesOnAServerOfItsOwn()
        defer { participation.close() }
        #expect(participation.slot == 0)

        // Every thread of the cooperative pool blocked, as a host that waits
        // synchronously inside async code does: this test's own thread (in the
        // wait below) and one blocked task for each of the others.
        let release = DispatchSemaphore(value: 0)
        let width = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<width { Task.detached { release.wait() } }
        defer { for _ in 0..<width { release.signal() } }

        let thief = try stealSlotZero(session)
        #expect(eventually(timeout: 15) { participation.slot == 1 }, "slot: \(String(describing: participation.slot))")
        withExtendedLifetime((server, thief)) {}
    }

    @Test func anAppWhoseSlotIsTakenMovesToTheNextFreeSlot() async throws {
        let (server, session, participation) = try await notesOnAServerOfItsOwn()
        defer { participation.close() }
        let changes = SequenceReader(participation.changes)
        #expect(await changes.next().element != nil)
        #expect(participation.slot == 0)

        let thief = try stealSlotZero(session)
        #expect(eventually(timeout: 15) { participation.slot == 1 }, "slot: \(String(describing: participation.slot))")
        let survey = try Survey.take(configuration: configuration(session))
        let moved = survey.entries.first { $0.kind == "selection" && $0.slot == 1 }
        #expect((try? moved?.record.get())?.app == "com.acme.notes")
        let squatted = try #require(survey.entries.first { $0.kind == "selection" && $0.slot == 0 }, "slot 0 is not listed")
        #expect(throws: (any Error).self, "the stranger's bytes are no record") { try squatted.record.get() }
        withExtendedLifetime((server, thief)) {}
    }

    @Test func invalidAppIdsAndNamespacesAreClearErrors() throws {
        #expect(throws: OpenUDIDError.self) { try OpenUDID(app: "notes") }
        do {
            _ = try OpenUDID(app: "1acme.notes")
            Issue.record("an app id starting with a digit was accepted")
        } catch {
            #expect(error.kind == .invalidApp)
            #expect(error.message.contains("1acme"))
        }
        var bad = OpenUDID.Configuration()
        bad.namespace = "../escape"
        do {
            _ = try OpenUDID(app: "com.acme.notes", configuration: bad)
            Issue.record("a namespace with a slash was accepted")
        } catch {
            #expect(error.kind == .invalidNamespace)
        }
    }

    /// Closing releases the slot and ends `changes` at once: it never waits for
    /// the resolution under way, here one held up by a keyring that never
    /// answers. The first resolution, through the same keyring, is the measure
    /// of what a pass costs on this machine now.
    @Test func closingNeverWaitsForTheResolutionUnderWay() throws {
        let service = try FakeSecretService(.silent)
        let session = try TestSession(
            display: SharedDisplay.display, home: service.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": service.address])
        let notes = try OpenUDID(app: "com.acme.notes", configuration: configuration(session, mirror: .secretService))
        let started = ContinuousClock.now
        let participation = try notes.participate()
        let pass = ContinuousClock.now - started
        let slot = try #require(participation.slot)
        while service.nextCall(timeout: 0.1) != nil {}

        let refresh = Thread { participation.refresh() }
        refresh.start()
        // The refresh has reached the keyring: a pass is under way.
        #expect(service.nextCall() != nil)
        let closing = ContinuousClock.now
        participation.close()
        let closed = ContinuousClock.now - closing
        #expect(closed * 4 < pass, "close took \(closed), a pass \(pass)")
        let reader = try SelectionReader(display: SharedDisplay.display)
        defer { reader.close() }
        #expect(try reader.owners(of: [SelectionName(session.slotName(slot))]).values.allSatisfy { $0 == nil })
    }

    /// A process runs at most one participation per slot; one more fails at
    /// once with an error that says so, and closing one makes room.
    @Test func participatingBeyondTheSlotsFailsAtOnce() throws {
        let session = try TestSession(display: SharedDisplay.display)
        var options = configuration(session)
        options.slotCount = 2
        let apps = try ["com.acme.notes", "com.acme.photos", "org.indie.chess"].map { try OpenUDID(app: $0, configuration: options) }
        let first = try apps[0].participate()
        let second = try apps[1].participate()
        defer { second.close() }
        #expect(throws: OpenUDIDError.self) { try apps[2].participate() }
        do {
            _ = try apps[2].participate()
        } catch {
            #expect(error.kind == .tooManyParticipations)
            #expect(error.message.contains("already runs 2 participations"), "\(error.message)")
        }
        first.close()
        try apps[2].participate().close()
    }
}
