import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// A client that reaches only the X display, serving a record of its own
/// choosing while the user resets: it must neither choose the identifier every
/// app moves to nor carry the old one across the reset (docs/PROTOCOL.md §9,
/// docs/SECURITY.md "The reset").
@Suite(.requiresXvfb) struct ResetAttackTests {
    /// What the display client serves in slot 99.
    enum Served: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// A new identifier claiming an absurd generation, to supersede everything.
        case newIdentifierOfAHugeGeneration
        /// A new identifier claiming exactly the generation the reset makes.
        case newIdentifierOfTheNextGeneration
        /// The old identifier claiming an absurd generation, to outlive the reset.
        case oldIdentifierOfAHugeGeneration

        var testDescription: String { rawValue }
    }

    static func record(app: String, identifier: String, generation: Int64) -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
        return "{\"app\":\"\(app)\",\"born\":\(SlotRecord.earliestTime),\"generation\":\(generation),\"id\":\"\(identifier)\","
            + "\"optOut\":false,\"v\":1,\"vendor\":\"\(vendor)\",\"written\":\(now)}"
    }

    /// Starts the display client serving `served` in slot 99 and returns it with the identifier it serves.
    static func startClient(_ session: TestSession, _ served: Served, old: String) throws -> (ChildProcess, String) {
        let (identifier, generation): (String, Int64) =
            switch served {
            case .newIdentifierOfAHugeGeneration: (Identifier.random().hex, 1_000_000_000)
            case .newIdentifierOfTheNextGeneration: (Identifier.random().hex, 1)
            case .oldIdentifierOfAHugeGeneration: (old, 1_000_000_000)
            }
        let client = try startSelectionHelper(
            display: SharedDisplay.display,
            [
                "own", "--prefix", session.slotName(99), "--target", "_OPENUDID_RECORD",
                "--text", record(app: "com.forge.reset", identifier: identifier, generation: generation)
            ])
        return (client, identifier)
    }

    /// Waits until every participant prints the same identifier other than `old`, and returns it.
    static func agreedAfterReset(_ participants: [Participant], old: String) -> String? {
        var agreed: String?
        _ = eventually(timeout: 20) {
            let now = Set(participants.map(\.current))
            guard now.count == 1, let value = now.first ?? nil, value != old else { return false }
            agreed = value
            return true
        }
        return agreed
    }

    @Test(arguments: Served.allCases)
    func fileBackedAppsWithTheirKeyringTakeNoIdentifierADisplayClientServesAtAReset(_ served: Served) throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(
            display: SharedDisplay.display, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let options = ["--mirror", "secret-service"]
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let participants = try apps.map { try session.serve($0, options) }
        defer { participants.forEach { $0.stop() } }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let old = try #require(participants[0].current)

        let (client, served) = try Self.startClient(session, served, old: old)
        defer { client.signal(SIGKILL) }
        let reset = try session.run(["reset"])
        #expect(reset.status == 0, "\(reset.standardError)")

        let new = try #require(Self.agreedAfterReset(participants, old: old), "\(participants.map { $0.current ?? "-" })")
        #expect(new != served, "every app took the display client's \(served)")

        // Nothing of the client's record reached a file or the keyring, and a
        // later app of the vendor on fresh files takes the user's new identifier.
        client.signal(SIGKILL)
        for app in apps {
            // An app writes its files after it serves the new identifier: wait for them.
            #expect(eventually { VoteAttackTests.fileSlot(session, app).contains(new) }, "\(app)")
            let slot = VoteAttackTests.fileSlot(session, app)
            #expect(slot.contains(new) && !slot.contains(served), "\(app): \(slot)")
        }
        let later = try session.report("com.acme.mail", options)
        #expect(later["id"] as? String == new, "\(later)")
        #expect(later["generation"] as? Int == 1)
    }

    @Test func selectionOnlyAppsTakeNoIdentifierADisplayClientServesAtAReset() throws {
        let session = try TestSession(display: SharedDisplay.display)
        let apps = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]
        let participants = try apps.map { try session.serve($0, VoteAttackTests.selectionOnly) }
        defer { participants.forEach { $0.stop() } }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let old = try #require(participants[0].current)

        // The client guesses the generation the reset makes: the identifier it
        // serves is not bound to the reset's key, which it cannot read.
        let (client, served) = try Self.startClient(session, .newIdentifierOfTheNextGeneration, old: old)
        defer { client.signal(SIGKILL) }
        let reset = try session.run(["reset"])
        #expect(reset.status == 0, "\(reset.standardError)")

        let new = try #require(Self.agreedAfterReset(participants, old: old), "\(participants.map { $0.current ?? "-" })")
        #expect(new != served)
        let report = try session.report("org.observer.app", VoteAttackTests.selectionOnly)
        #expect(report["id"] as? String == new, "\(report)")
        let unbound = (report["ignored"] as? [[String: Any]] ?? []).filter { $0["reason"] as? String == "unbound" }
        #expect(unbound.count == 1, "the client's record is unbound: \(report["ignored"] ?? "")")
    }

    @Test func aResetMovesOnFromAPlantedRecordOfTheHighestGeneration() throws {
        let session = try TestSession(display: nil)
        let files = ["--mirror", "file"]
        let old = try session.get("com.acme.notes", files)
        // A record of the highest generation planted in a file slot.
        let slots = session.home.dataHome.path + "/openudid/ns/\(session.namespace)/slots"
        let planted = Identifier.random().hex
        try Data(Self.record(app: "com.x.planted", identifier: planted, generation: SlotRecord.maximumGeneration).utf8)
            .write(to: URL(fileURLWithPath: slots + "/com.x.planted.json"))
        #expect(try session.get("org.indie.chess", files) == planted, "without a marker, a durable record raises the generation")

        for expected in [1, 2] {
            let reset = try session.run(["reset"])
            #expect(reset.status == 0, "\(reset.standardError)")
            #expect(reset.standardOutput.hasPrefix("generation \(expected)\n"), "\(reset.standardOutput)")
            let report = try session.report("com.acme.notes", files)
            #expect(report["generation"] as? Int == expected)
            #expect(report["id"] as? String != planted && report["id"] as? String != old)
        }
    }

    @Test func aResetKeyIsWrittenBeforeTheMarkerAndBindsTheIdentifierAppsGenerate() throws {
        let session = try TestSession(display: nil)
        let files = ["--mirror", "none"]
        _ = try session.get("com.acme.notes", files)
        #expect(try session.run(["reset"]).status == 0)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let marker = ResetMarker(paths: paths)
        guard case .read(let key) = marker.key().key, key.generation == 1 else {
            Issue.record("the reset wrote no key of generation 1: \(marker.key())")
            return
        }
        let report = try session.report("com.acme.notes", files)
        let born = try #require(report["born"] as? Int64)
        #expect(report["id"] as? String == key.identifier(born: born).hex)
        #expect(report["origin"] as? String == "generated")
    }
}

extension ResetAttackTests {
    /// What stands at the reset key after the reset, in place of its key.
    enum UnusableKey: String, CaseIterable, Sendable {
        case fifo, symbolicLink, oneGigabyte, otherGeneration
    }

    /// A reset key that exists but cannot be used is unknown, not absent: a
    /// display client's record of the new generation then casts no ballot, and
    /// a fresh file-backed app neither takes it nor writes it to its files.
    @Test(arguments: UnusableKey.allCases)
    func aResetKeyThatCannotBeUsedLetsNoDisplayClientsRecordCount(_ kind: UnusableKey) throws {
        let session = try TestSession(display: SharedDisplay.display)
        let files = ["--mirror", "none"]
        _ = try session.get("com.acme.notes", files)
        #expect(try session.run(["reset"]).status == 0)
        let path = try StoragePaths(environment: session.environment, namespace: session.namespace).resetKey
        let key = try String(contentsOfFile: path, encoding: .utf8)
        try FileManager.default.removeItem(atPath: path)
        switch kind {
        case .fifo:
            #expect(mkfifo(path, 0o600) == 0)
        case .symbolicLink:
            try Data(key.utf8).write(to: URL(fileURLWithPath: path + ".real"))
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".real")
        case .oneGigabyte:
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            #expect(truncate(path, 1 << 30) == 0)
        case .otherGeneration:
            try Data(("7" + key.drop { $0 != " " }).utf8).write(to: URL(fileURLWithPath: path))
        }

        let (client, served) = try Self.startClient(session, .newIdentifierOfTheNextGeneration, old: "")
        defer { client.signal(SIGKILL) }
        let report = try session.report("org.fresh.app", files)
        #expect(report["id"] as? String != served, "the fresh app took the display client's identifier")
        #expect(report["generation"] as? Int == 1)
        let named = report.rejections.filter { $0.place == path }
        #expect(named.count == 1 && named[0].reason.contains("the key is unknown"), "\(report.rejections)")
        #expect(!VoteAttackTests.fileSlot(session, "org.fresh.app").contains(served))
    }
}

/// The reset key file's format (docs/PROTOCOL.md §9) and the binding.
@Suite struct ResetKeyTests {
    static let key = ResetKey(generation: 3, bytes: Array(0..<32))!

    @Test func encodesAsTheGenerationASpaceAndLowercaseHexAndParsesBack() throws {
        let text = String(decoding: Self.key.encoded(), as: UTF8.self)
        #expect(text == "3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n")
        #expect(ResetKey.parse(Self.key.encoded()) == Self.key)
    }

    @Test(arguments: [
        "", "3\n", "3 0001\n", "03 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
        "3 000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F\n",
        "3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "3  000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
        "0 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
        "3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g\n"
    ])
    func rejectsAnythingElse(_ text: String) {
        #expect(ResetKey.parse(Data(text.utf8)) == nil)
    }

    @Test func bindsTheIdentifierItsGenerationAndBornTogether() throws {
        let born: Int64 = 1_700_000_000_000
        let identifier = Self.key.identifier(born: born)
        let app = try AppIdentity("com.acme.notes")
        let record = SlotRecord(id: identifier, app: app, born: born, written: born, generation: 3)
        #expect(Self.key.binds(record))
        var earlier = record
        earlier.born -= 1
        #expect(!Self.key.binds(earlier), "a forged born breaks the binding")
        var otherGeneration = record
        otherGeneration.generation = 4
        #expect(!Self.key.binds(otherGeneration))
        var other = record
        other.id = Identifier.random()
        #expect(!Self.key.binds(other))
    }
}
