import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Attacks on the vote by clients that reach only the X display, each a
/// separate process against real `openudid serve` participants: the honest
/// identifier must hold, in memory and in every file and keyring item, and
/// nothing may be lost (docs/SECURITY.md, "The vote").
@Suite(.requiresXvfb) struct VoteAttackTests {
    static let files = ["--mirror", "none"]
    static let selectionOnly = ["--no-files", "--mirror", "none"]
    /// How long the participants are watched for a change that must not come.
    static let watch: TimeInterval = 3

    /// A forged record: any app, the 2010 floor as `born`, `written` 23 hours ahead.
    static func forged(app: String, identifier: String) -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
        return "{\"app\":\"\(app)\",\"born\":\(SlotRecord.earliestTime),\"id\":\"\(identifier)\",\"optOut\":false,"
            + "\"v\":1,\"vendor\":\"\(vendor)\",\"written\":\(now + 23 * 3_600_000)}"
    }

    /// Starts `apps` with `options` and waits until they agree.
    static func honestGroup(_ session: TestSession, _ apps: [String], _ options: [String]) throws -> ([Participant], String) {
        let participants = try apps.map { try session.serve($0, options) }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        return (participants, try #require(participants[0].current))
    }

    /// Expects no participant to print another identifier while `watch` runs out.
    static func expectNoneMoves(_ participants: [Participant], from honest: String) {
        let moved = eventually(timeout: watch) { participants.contains { $0.current != honest } }
        #expect(
            !moved,
            "a participant moved from \(honest): \(participants.map { "\($0.app)=\($0.current ?? "-")" }); their errors: \(participants.map { $0.child.standardError })"
        )
        for participant in participants where !participant.child.isRunning {
            Issue.record(
                "\(participant.app) ended with status \(participant.child.wait(timeout: 1).map(String.init) ?? "?"): \(participant.child.standardError)"
            )
        }
    }

    /// The votes a fresh selection-only observer counts for `identifier`: proof
    /// that the attack is on the display and would count where nothing outranks it.
    static func liveVotes(_ session: TestSession, for identifier: String) throws -> Int {
        let report = try session.report("org.observer.app", selectionOnly)
        let votes = report["votes"] as? [[String: Any]] ?? []
        return votes.first { $0["id"] as? String == identifier }?["votes"] as? Int ?? 0
    }

    static func fileSlot(_ session: TestSession, _ app: String) -> String {
        let path = session.home.dataHome.path + "/openudid/ns/\(session.namespace)/slots/\(app).json"
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    @Test(arguments: [(impersonators: 1, honest: 2), (impersonators: 2, honest: 3)])
    func impersonatorsWithAFutureWrittenAndAFloorBornMoveNoFileBackedApp(_ sizes: (impersonators: Int, honest: Int)) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = Array(["com.acme.notes", "com.acme.photos", "org.indie.chess"].prefix(sizes.honest))
        let (participants, honest) = try Self.honestGroup(session, apps, Self.files)
        defer { participants.forEach { $0.stop() } }

        let forgery = Identifier.random().hex
        let forgers = try (0..<sizes.impersonators).map { index in
            try startSelectionHelper(
                display: SharedDisplay.display,
                [
                    "own", "--prefix", session.slotName(50 + index), "--target", "_OPENUDID_RECORD",
                    "--text", Self.forged(app: apps[index], identifier: forgery)
                ])
        }
        defer { forgers.forEach { $0.signal(SIGKILL) } }
        #expect(try Self.liveVotes(session, for: forgery) == sizes.impersonators)
        Self.expectNoneMoves(participants, from: honest)

        // The impersonated app's own report outranks the forgery and names the conflict;
        // or, where its durable records settled the vote before the forged slot answered
        // (a busy machine, docs/PROTOCOL.md §5.1), names that slot as not waited for.
        let report = try session.report(apps[0], Self.files)
        #expect(report["id"] as? String == honest)
        #expect(report["decidedBy"] as? String == "durable")
        let conflicts = (report["conflicts"] as? [[String: Any]] ?? []).compactMap { $0["app"] as? String }
        let unawaited = report.rejections.filter {
            $0.place.names(selection: session.slotName(50)) && $0.reason.hasPrefix("not waited for")
        }
        #expect(conflicts.contains(apps[0]) || !unawaited.isEmpty, "\(report["conflicts"] ?? "") \(report.rejections)")

        // Nothing of the forgery stays once the forgers are gone.
        forgers.forEach { $0.signal(SIGKILL) }
        for app in apps {
            #expect(Self.fileSlot(session, app).contains(honest))
            #expect(!Self.fileSlot(session, app).contains(forgery))
            #expect(try session.get(app, Self.files) == honest)
        }
    }

    @Test(arguments: [1, 2])
    func inventedAppsWithAFloorBornWinNoTieAgainstFileBackedAppsOrTheirKeyring(_ count: Int) throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(
            display: SharedDisplay.display, home: bus.home,
            extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let apps = Array(["com.acme.notes", "com.acme.photos"].prefix(count))
        let (participants, honest) = try Self.honestGroup(session, apps, ["--mirror", "secret-service"])
        defer { participants.forEach { $0.stop() } }

        let forgery = Identifier.random().hex
        let forgers = try (0..<count).map { index in
            try startSelectionHelper(
                display: SharedDisplay.display,
                [
                    "own", "--prefix", session.slotName(60 + index), "--target", "_OPENUDID_RECORD",
                    "--text", Self.forged(app: "com.forge.a\(index)", identifier: forgery)
                ])
        }
        defer { forgers.forEach { $0.signal(SIGKILL) } }
        #expect(try Self.liveVotes(session, for: forgery) == count)
        Self.expectNoneMoves(participants, from: honest)
        forgers.forEach { $0.signal(SIGKILL) }

        let lookup = try runCommand(
            try Tools.find("secret-tool"),
            ["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme", "namespace", session.namespace],
            environment: bus.environment())
        #expect(lookup.status == 0, "\(lookup.standardError)")
        let item = try SlotRecord.parse(Data(lookup.standardOutput.utf8))
        #expect(item.id.hex == honest)
        for app in apps {
            #expect(Self.fileSlot(session, app).contains(honest))
        }
    }

    @Test(arguments: [(start: 0, count: 3), (start: 0, count: 100)])
    func aClientThatKeepsStealingSlotsMovesNoSelectionOnlyApp(_ range: (start: Int, count: Int)) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let (participants, honest) = try Self.honestGroup(session, apps, Self.selectionOnly)
        defer { participants.forEach { $0.stop() } }

        let forgery = Identifier.random().hex
        let thief = try startSelectionHelper(
            display: SharedDisplay.display,
            [
                "steal", "--prefix", session.slotPrefix, "--start", String(range.start), "--count", String(range.count),
                "--every-ms", "50", "--text", Self.forged(app: "com.forge.thief", identifier: forgery)
            ])
        defer { thief.signal(SIGKILL) }
        #expect(eventually(timeout: 10) { (try? Self.liveVotes(session, for: forgery)) == 1 })
        Self.expectNoneMoves(participants, from: honest)
        #expect(participants.allSatisfy { $0.current != forgery }, "a participant took the thief's \(forgery)")

        // Once the thief is gone the apps serve again, and a newcomer sees all three.
        thief.signal(SIGKILL)
        #expect(eventually(timeout: 15) { (try? Self.liveVotes(session, for: honest)) == 3 })
        #expect(participants.allSatisfy { $0.current == honest })
    }

    /// Three honest selection-only apps in slots 1 to 3, and a hostile client in
    /// slot 0 (so that a pass asks it first) that misbehaves as `behavior` says
    /// towards slots 1 to 99 and serves a forged record of `app` of its own.
    static func hostileInSlotZero(
        _ session: TestSession, behavior: String, app: String
    ) throws -> (participants: [Participant], honest: String, hostile: ChildProcess, forgery: String) {
        // Slot 0 is held while the honest apps form, so that they take 1 to 3.
        let placeholder = try startSelectionHelper(
            display: SharedDisplay.display, ["own", "--prefix", session.slotPrefix + "0", "--text", "not a record"])
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let (participants, honest) = try honestGroup(session, apps, selectionOnly)
        placeholder.signal(SIGKILL)
        #expect(placeholder.wait(timeout: 10) != nil)

        let forgery = Identifier.random().hex
        let others = (1..<100).map { session.slotPrefix + String($0) }
        let hostile = try startSelectionHelper(
            display: SharedDisplay.display,
            [
                "hostile", "--selection", session.slotPrefix + "0", "--behavior", behavior,
                "--others", others.joined(separator: ","), "--text", forged(app: app, identifier: forgery)
            ])
        return (participants, honest, hostile, forgery)
    }

    /// A client that owns one slot learns from every request it gets the
    /// reader's window and where every other slot's answer goes, and answers
    /// for all the other slots before their owners do. Counted in their
    /// names, its forged record would be every live ballot. Its answers
    /// cannot pass for theirs; its writes can spoil theirs, which hides them
    /// as slot theft does, and a held value beats its one ballot.
    @Test func aClientThatAnswersForTheOtherSlotsMovesNoSelectionOnlyApp() throws {
        let session = try TestSession(display: SharedDisplay.display)
        // The forger answers for slots 1 to 99 as soon as it is asked for slot 0.
        let (participants, honest, forger, forgery) = try Self.hostileInSlotZero(
            session, behavior: "answer-for-others", app: "com.forge.answers")
        defer { participants.forEach { $0.stop() } }
        defer { forger.signal(SIGKILL) }
        // Its own slot is one ballot, and only that.
        #expect(eventually(timeout: 10) { (try? Self.liveVotes(session, for: forgery)) == 1 })
        Self.expectNoneMoves(participants, from: honest)
        // Still one ballot afterwards. On a busy machine one observer's pass can
        // miss the forger's own slot (no answer by the deadline), so the count
        // is taken again until one pass hears it; it must never be more than one.
        var counts: [Int] = []
        #expect(
            eventually(timeout: 20) {
                let count = (try? Self.liveVotes(session, for: forgery)) ?? 0
                counts.append(count)
                return count == 1
            }, "the forger's votes in each pass: \(counts)")
        #expect(!counts.contains { $0 > 1 }, "the forger's votes in each pass: \(counts)")
    }

    /// A client that owns one slot and spoils every other answer: it appends
    /// zero bytes to each other slot's answer property when it is asked, and
    /// again after every write it sees there, so each honest answer counts as
    /// written twice, and serves a forgery of its own. Apps that start after the
    /// attack began, one-shot readers and a participant, hold nothing of their
    /// own: the forgery must win none of them.
    @Test func aClientThatSpoilsTheOtherAnswersWinsNoAppThatStartsLater() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let (participants, honest, spoiler, forgery) = try Self.hostileInSlotZero(
            session, behavior: "spoil-others", app: "com.forge.spoiler")
        defer { participants.forEach { $0.stop() } }
        defer { spoiler.signal(SIGKILL) }

        var spoiledSeen = 0
        for index in 0..<20 {
            let report = try session.report("org.late.app\(index)", Self.selectionOnly)
            #expect(report["id"] as? String != forgery, "late app \(index) took the spoiler's identifier: \(report)")
            spoiledSeen += (report["rejected"] as? [[String: Any]] ?? []).filter { $0["code"] as? String == "spoiled" }.count
        }
        // The attack took place: the spoiler was asked by the late readers and
        // wrote into their answers. (Whether an answer stays spoiled after
        // it is asked again depends on who wins each race.)
        var windows = 0
        #expect(
            eventually(timeout: 10) {
                while let line = spoiler.nextLine(timeout: 0) {
                    if line.hasPrefix("spoiling ") { windows += 1 }
                }
                return windows >= 20
            }, "the spoiler wrote into the answers of \(windows) readers: \(spoiler.standardError)")
        print("spoiled answers left after asking again, in 20 late readers: \(spoiledSeen)")
        let late = try session.serve("org.late.participant", Self.selectionOnly)
        defer { late.stop() }
        #expect(late.current != forgery)
        Self.expectNoneMoves(participants, from: honest)
        #expect(late.current != forgery)
    }

    /// File-backed apps that share only the display with the others (each its
    /// own data directory, as a Flatpak app without the openudid directory),
    /// started while a spoiler hides the honest answers: the live vote is
    /// undecided, and what each generates is provisional, kept out of its files.
    /// Once the spoiler is gone they all take the honest majority's identifier:
    /// nothing they wrote meanwhile outranks it.
    @Test func appsStartedWhileASpoilerRunsEndOnTheHonestIdentifier() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let (participants, honest, spoiler, forgery) = try Self.hostileInSlotZero(
            session, behavior: "spoil-others", app: "com.forge.spoiler")
        defer { participants.forEach { $0.stop() } }
        defer { spoiler.signal(SIGKILL) }

        let late = try (0..<5).map { index in
            try TestSession(display: SharedDisplay.display, namespace: session.namespace).serve("org.late.app\(index)", Self.files)
        }
        defer { late.forEach { $0.stop() } }
        for app in late {
            #expect(app.current != forgery, "\(app.app) took the spoiler's identifier")
        }
        // A one-shot reader that finds the vote undecided says its identifier is
        // provisional, saves it nowhere, and exits 3 (printed, not saved).
        let reader = try TestSession(display: SharedDisplay.display, namespace: session.namespace)
        let result = try reader.run(["get", "--app", "org.late.reader", "--json"] + Self.files)
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any] ?? [:]
        if (report["rejected"] as? [[String: Any]] ?? []).contains(where: { $0["code"] as? String == "undecided" }) {
            #expect(report["provisional"] as? Bool == true, "\(report)")
            #expect(report.repair("file slot")?.outcome == "skipped", "\(report)")
            #expect(result.status == 3, "\(result.standardError)")
        } else {
            #expect(result.status == 0, "\(result.standardError)")
        }

        spoiler.signal(SIGKILL)
        #expect(
            eventually(timeout: 20) { late.allSatisfy { $0.current == honest } },
            "after the spoiler: \(late.map { "\($0.app)=\($0.current ?? "-")" }), the majority's \(honest)")
        Self.expectNoneMoves(participants + late, from: honest)
    }

    @Test func ninetySevenStalledINCRClientsMakeNoSelectionOnlyAppForget() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let (participants, honest) = try Self.honestGroup(session, apps, Self.selectionOnly)
        defer { participants.forEach { $0.stop() } }

        let stallers = try startSelectionHelper(
            display: SharedDisplay.display,
            ["stall-many", "--prefix", session.slotPrefix, "--start", "3", "--count", "97"], timeout: 30)
        defer { stallers.signal(SIGKILL) }
        let report = try session.report("org.observer.app", Self.selectionOnly)
        let stalled = (report["rejected"] as? [[String: Any]] ?? []).filter { ($0["reason"] as? String ?? "").contains("no answer within") }
        #expect(stalled.count > 0, "the stalled owners were not met: \(report["rejected"] ?? "")")
        Self.expectNoneMoves(participants, from: honest)
    }

    @Test func selectionOnlyAppsKeepTheirIdentifierThroughTheXServersDeath() throws {
        let server = try PrivateXServer(numbering: .randomHigh)
        defer { server.kill() }
        let session = try TestSession(display: server.display)
        let apps = ["com.acme.notes", "org.indie.chess"]
        let (participants, honest) = try Self.honestGroup(session, apps, Self.selectionOnly)
        defer { participants.forEach { $0.stop() } }

        server.kill()
        Self.expectNoneMoves(participants, from: honest)
        try server.restart(elsewhereIfTaken: false)
        // They take part again with the value they held: a newcomer finds both.
        #expect(eventually(timeout: 15) { (try? Self.liveVotes(session, for: honest)) == 2 })
        #expect(participants.allSatisfy { $0.current == honest })
    }
}
