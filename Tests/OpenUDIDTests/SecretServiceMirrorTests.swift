import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// The mirror against a real gnome-keyring on a private session bus, one bus per test.
@Suite struct SecretServiceMirrorTests {
    let bus: PrivateSessionBus
    let mirror: SecretServiceMirror

    init() throws {
        bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        mirror = SecretServiceMirror(busAddress: bus.address)
    }

    private func record(_ text: String) -> Data { Data(text.utf8) }

    /// Runs secret-tool against the private bus.
    private func secretTool(_ arguments: [String]) throws -> CommandResult {
        try runCommand(try Tools.find("secret-tool"), arguments, environment: bus.environment())
    }

    @Test func storesReadsReplacesAndRemovesAnItem() throws {
        #expect(mirror.read(vendor: "com.acme") == .absent)

        try mirror.write(record("v1 first"), vendor: "com.acme")
        #expect(mirror.read(vendor: "com.acme") == .found(record("v1 first")))

        try mirror.write(record("v1 second"), vendor: "com.acme")
        #expect(mirror.read(vendor: "com.acme") == .found(record("v1 second")))
        let items = try secretTool(["search", "--all", "vendor", "com.acme"])
        #expect(items.standardOutput.components(separatedBy: "label = ").count == 2, "replacing must not add a second item")

        try mirror.remove(vendor: "com.acme")
        #expect(mirror.read(vendor: "com.acme") == .absent)
        try mirror.remove(vendor: "com.acme")
    }

    @Test func anIndependentClientSeesTheItemUnderOurSchemaAndLabel() throws {
        try mirror.write(record("shared record"), vendor: "com.acme")

        let lookup = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"])
        #expect(lookup.status == 0)
        #expect(lookup.standardOutput == "shared record")

        let search = try secretTool(["search", "--all", "vendor", "com.acme"])
        #expect(search.standardOutput.contains("label = OpenUDID identifier for com.acme"))
        #expect(search.standardOutput.contains("schema = org.openudid.VendorMirror"))
        let found = try bus.searchItems(["xdg:schema": "org.openudid.VendorMirror", "vendor": "com.acme"])
        let collection = try #require(try bus.defaultCollectionPath())
        #expect(found.locked.isEmpty)
        #expect(found.unlocked.count == 1)
        #expect(found.unlocked.allSatisfy { $0.hasPrefix(collection + "/") }, "stored in the default collection")
    }

    @Test func readsWhatAnotherClientStored() throws {
        let stored = try runCommand(
            try Tools.find("secret-tool"),
            ["store", "--label=by hand", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"],
            environment: bus.environment(), input: "written elsewhere")
        #expect(stored.status == 0, "\(stored.standardError)")
        #expect(mirror.read(vendor: "com.acme") == .found(record("written elsewhere")))
    }

    @Test func keepsVendorsApart() throws {
        try mirror.write(record("acme"), vendor: "com.acme")
        #expect(mirror.read(vendor: "org.indie") == .absent)

        try mirror.write(record("indie"), vendor: "org.indie")
        try mirror.remove(vendor: "org.indie")
        #expect(mirror.read(vendor: "com.acme") == .found(record("acme")))
        #expect(mirror.read(vendor: "org.indie") == .absent)
    }

    @Test func ignoresItemsOfOtherSchemas() throws {
        let stored = try runCommand(
            try Tools.find("secret-tool"), ["store", "--label=someone else", "vendor", "com.acme"],
            environment: bus.environment(), input: "not ours")
        #expect(stored.status == 0)
        #expect(mirror.read(vendor: "com.acme") == .absent)
        try mirror.remove(vendor: "com.acme")
        let theirs = try secretTool(["lookup", "vendor", "com.acme"])
        #expect(theirs.standardOutput == "not ours", "removing our item must leave other schemas' items alone")
    }

    @Test func aLockedCollectionIsUnknownNotAbsent() throws {
        try mirror.write(record("kept"), vendor: "com.acme")
        try bus.lockDefaultCollection()

        let read = mirror.read(vendor: "com.acme")
        guard case .unavailable(let failure) = read else {
            Issue.record("a locked item must be unknown, got \(read)")
            return
        }
        #expect(failure.kind == .locked)
        #expect(failure.message.contains("com.acme"))

        #expect(throws: StoreUnavailable.self) { try mirror.write(record("fresh"), vendor: "com.acme") }
        do {
            try mirror.write(record("fresh"), vendor: "com.acme")
        } catch {
            #expect(error.kind == .locked)
        }
        do {
            try mirror.remove(vendor: "com.acme")
            Issue.record("removing a locked item must fail")
        } catch {
            #expect(error.kind == .locked)
        }
        #expect(SecretServiceMirror.probe(busAddress: bus.address).canHoldMirror)
        if case .locked = SecretServiceMirror.probe(busAddress: bus.address) {
        } else {
            Issue.record("probe must report the lock")
        }

        try bus.unlock(password: "correct horse")
        #expect(mirror.read(vendor: "com.acme") == .found(record("kept")), "the item survives the lock untouched")
    }

    @Test func aLockedCollectionWithoutOurItemIsStillUnknown() throws {
        try bus.lockDefaultCollection()
        guard case .unavailable(let failure) = mirror.read(vendor: "com.acme") else {
            Issue.record("a locked collection cannot prove absence")
            return
        }
        #expect(failure.kind == .locked)
        do {
            try mirror.remove(vendor: "com.acme")
            Issue.record("removal cannot be confirmed in a locked collection")
        } catch {
            #expect(error.kind == .locked)
        }
    }

    @Test func aKilledKeyringIsNotRunningWithinTheDeadline() throws {
        try mirror.write(record("kept"), vendor: "com.acme")
        try bus.killKeyring()

        // Known at once, not after the deadline: a read that waited for it would say
        // that the service did not answer.
        let read = mirror.read(vendor: "com.acme")
        guard case .unavailable(let failure) = read else {
            Issue.record("a dead keyring must be unknown, got \(read)")
            return
        }
        #expect(failure.kind == .notRunning)
        #expect(!failure.message.contains("did not answer"), "\(failure.message)")
        #expect(throws: StoreUnavailable.self) { try mirror.write(record("fresh"), vendor: "com.acme") }
        #expect(!SecretServiceMirror.probe(busAddress: bus.address).canHoldMirror)
    }

    @Test func aRestartedKeyringStillHoldsTheItem() throws {
        try mirror.write(record("durable"), vendor: "com.acme")
        try bus.stopKeyringGracefully()
        #expect(mirror.read(vendor: "com.acme") != .absent)
        try bus.startKeyring(password: "correct horse")
        #expect(mirror.read(vendor: "com.acme") == .found(record("durable")))
    }

    @Test func aHungKeyringGivesUpAtTheDeadline() throws {
        try mirror.write(record("kept"), vendor: "com.acme")
        bus.suspendKeyring()
        defer { bus.resumeKeyring() }
        let impatient = SecretServiceMirror(busAddress: bus.address, deadline: .milliseconds(500))

        let started = ContinuousClock.now
        let read = impatient.read(vendor: "com.acme")
        // It waited for the deadline (no upper bound: the message names the deadline it gave up at).
        #expect(ContinuousClock.now - started >= .milliseconds(450))
        #expect(
            read
                == .unavailable(
                    StoreUnavailable(
                        .serviceError,
                        "secret-service: Secret Service did not answer within 0.5 s while reading the item of com.acme")))

        let write = #expect(throws: StoreUnavailable.self) { try impatient.write(record("fresh"), vendor: "com.acme") }
        #expect(write?.message.contains("did not answer within 0.5 s") == true, "\(String(describing: write))")
        if case .unresponsive = SecretServiceMirror.probe(busAddress: bus.address, deadline: .milliseconds(300)) {
        } else {
            Issue.record("a hung service does not answer")
        }

        bus.resumeKeyring()
        #expect(mirror.read(vendor: "com.acme") == .found(record("kept")))
    }

    @Test func aKeyringThatDiesMidCallFailsFast() throws {
        try mirror.write(record("kept"), vendor: "com.acme")
        bus.suspendKeyring()
        let patient = SecretServiceMirror(busAddress: bus.address, deadline: .seconds(20))
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let connections = try bus.connectionCount()
        Thread.detachNewThread {
            outcome.set(patient.read(vendor: "com.acme"))
            done.signal()
        }
        // The call is under way once the mirror has joined the bus (or, should it not join, has ended).
        #expect(eventually { outcome.value != nil || (try? bus.connectionCount()).map { $0 > connections } == true })
        try bus.killKeyring()
        // Waited for beyond the 20 s deadline: a call that ran into it says so, one that
        // ended with the daemon does not.
        #expect(done.wait(timeout: .now() + 60) == .success, "the call must end when the daemon dies")
        guard case .unavailable(let failure)? = outcome.value else {
            Issue.record("a daemon that died mid-call must be unknown, got \(String(describing: outcome.value))")
            return
        }
        #expect(failure.kind == .serviceError || failure.kind == .notRunning)
        #expect(!failure.message.contains("did not answer"), "the call waited for its deadline: \(failure.message)")
    }

    @Test func probeFindsAReadyService() {
        #expect(SecretServiceMirror.probe(busAddress: bus.address) == .ready)
        #expect(SecretServiceMirror.probe(busAddress: bus.address).canHoldMirror)
    }

    @Test(arguments: ["", ".hidden", "com/acme", "com acme", "com.acme\n", "é.com", "a", String(repeating: "a", count: 256)])
    func refusesMalformedVendors(vendor: String) throws {
        guard case .unavailable(let failure) = mirror.read(vendor: vendor) else {
            Issue.record("a malformed vendor must not read as absent or found")
            return
        }
        #expect(failure.message.contains("refusing vendor"))
        #expect(throws: StoreUnavailable.self) { try mirror.write(record("x"), vendor: vendor) }
        #expect(throws: StoreUnavailable.self) { try mirror.remove(vendor: vendor) }
    }

    @Test(arguments: ["com.acme", "org.indie-games_2", "io.github.alice"])
    func acceptsWellFormedVendors(vendor: String) {
        #expect(AppIdentity.isValid(vendor))
    }
}

/// The mirror where no usable Secret Service exists.
@Suite struct SecretServiceMirrorWithoutServiceTests {
    @Test func aBusWithoutASecretServiceIsNotRunning() throws {
        let bus = try PrivateSessionBus(keyring: .none)
        let mirror = SecretServiceMirror(busAddress: bus.address)
        guard case .unavailable(let failure) = mirror.read(vendor: "com.acme") else {
            Issue.record("no service must be unknown")
            return
        }
        #expect(failure.kind == .notRunning)
        #expect(throws: StoreUnavailable.self) { try mirror.write(Data("x".utf8), vendor: "com.acme") }
        if case .unreachable(let why) = SecretServiceMirror.probe(busAddress: bus.address) {
            #expect(why.kind == .notRunning)
        } else {
            Issue.record("probe must report no service")
        }
    }

    @Test func noBusAtAllIsNotRunningAtOnce() throws {
        let home = try PrivateHome()
        let address = "unix:path=" + home.runtimeDir.appendingPathComponent("no-such-bus").path
        let mirror = SecretServiceMirror(busAddress: address)
        let read = mirror.read(vendor: "com.acme")
        guard case .unavailable(let failure) = read else {
            Issue.record("no bus must be unknown")
            return
        }
        #expect(failure.kind == .notRunning)
        #expect(!failure.message.contains("did not answer"), "\(failure.message)")
        #expect(failure.message.contains(address))
        #expect(!SecretServiceMirror.probe(busAddress: address).canHoldMirror)
    }

    @Test func aKeyringWithoutALoginKeyringCannotHoldTheMirror() throws {
        let bus = try PrivateSessionBus(keyring: .withoutLoginKeyring)
        let mirror = SecretServiceMirror(busAddress: bus.address)
        guard case .unavailable(let failure) = mirror.read(vendor: "com.acme") else {
            Issue.record("a service without a default collection cannot prove absence")
            return
        }
        #expect(failure.message.contains("no default collection"))
        do {
            try mirror.write(Data("x".utf8), vendor: "com.acme")
            Issue.record("writing needs a default collection, and must not create one")
        } catch {
            #expect(error.message.contains("no default collection"))
        }
        #expect(try bus.defaultCollectionPath() == nil, "nothing was created behind the user's back")
        #expect(!SecretServiceMirror.probe(busAddress: bus.address).canHoldMirror)
    }

    /// gnome-keyring started by D-Bus activation, with no login keyring: the
    /// automatic choice takes the file store, and the report says why.
    @Test func theAutomaticChoiceSaysWhyItPassedTheSecretServiceOver() throws {
        let bus = try PrivateSessionBus(keyring: .withoutLoginKeyring)
        let session = try TestSession(display: nil, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let mirror = try session.report("com.acme.notes")["mirror"] as? [String: Any]
        #expect(mirror?["store"] as? String == "file")
        let detail = mirror?["detail"] as? String ?? ""
        #expect(detail.contains("Secret Service was passed over") && detail.contains("no default collection"), "\(detail)")
        // Where no store was passed over, the key is there and null.
        let none = try session.report("com.acme.photos", ["--mirror", "file"])["mirror"] as? [String: Any]
        #expect(none?.keys.contains("detail") == true && none?["detail"] is NSNull)
    }
}

/// A value handed from a worker thread to the test.
private final class Outcome: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var stored: StoreRead?
    func set(_ value: StoreRead) { lock.withLock { stored = value } }
    var value: StoreRead? { lock.withLock { stored } }
}

/// The namespace keeps an experiment's item apart from the real one, in both directions.
@Suite struct SecretServiceNamespaceTests {
    let bus: PrivateSessionBus

    init() throws {
        bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
    }

    private func secretTool(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        try runCommand(try Tools.find("secret-tool"), arguments, environment: bus.environment(), input: input)
    }

    @Test func aNamespacedItemAndTheRealOneNeverSeeEachOther() throws {
        let real = SecretServiceMirror(busAddress: bus.address)
        let lab = SecretServiceMirror(busAddress: bus.address, namespace: "lab")
        try lab.write(Data("lab".utf8), vendor: "com.acme")
        #expect(real.read(vendor: "com.acme") == .absent, "a lookup without a namespace matched the namespaced item")
        try real.write(Data("real".utf8), vendor: "com.acme")
        #expect(lab.read(vendor: "com.acme") == .found(Data("lab".utf8)))
        #expect(real.read(vendor: "com.acme") == .found(Data("real".utf8)))

        let lookup = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme", "namespace", "lab"])
        #expect(lookup.standardOutput == "lab")
        let plain = try secretTool(["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme", "namespace", ""])
        #expect(plain.standardOutput == "real")

        try lab.remove(vendor: "com.acme")
        #expect(real.read(vendor: "com.acme") == .found(Data("real".utf8)))
        try real.remove(vendor: "com.acme")
        #expect(lab.read(vendor: "com.acme") == .absent)
    }

    @Test func anItemWithoutTheAttributeIsReadOutsideANamespaceAndReplacedOnWrite() throws {
        let stored = try secretTool(
            ["store", "--label=version 1", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"],
            input: "version 1")
        #expect(stored.status == 0, "\(stored.standardError)")
        let real = SecretServiceMirror(busAddress: bus.address)
        let lab = SecretServiceMirror(busAddress: bus.address, namespace: "lab")
        #expect(real.read(vendor: "com.acme") == .found(Data("version 1".utf8)))
        #expect(lab.read(vendor: "com.acme") == .absent)

        try real.write(Data("version 2".utf8), vendor: "com.acme")
        let items = try secretTool(["search", "--all", "vendor", "com.acme"])
        #expect(items.standardOutput.components(separatedBy: "label = ").count == 2, "the old item is gone: \(items.standardOutput)")
        #expect(real.read(vendor: "com.acme") == .found(Data("version 2".utf8)))
    }

    @Test func anAutomaticChoiceWithAHungKeyringKeepsTheSecretServiceAndSaysItDidNotAnswer() throws {
        bus.suspendKeyring()
        defer { bus.resumeKeyring() }
        let probe = SecretServiceMirror.probe(busAddress: bus.address, deadline: .milliseconds(300))
        guard case .unresponsive(let why) = probe else {
            Issue.record("a hung keyring must be unresponsive, not \(probe)")
            return
        }
        #expect(why.message.contains("did not answer within 0.3 s"))

        let session = try TestSession(display: nil, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let result = try session.run(["get", "--app", "com.acme.notes", "--json", "--mirror", "automatic"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect((report["mirror"] as? [String: Any])?["store"] as? String == "secret-service", "\(report)")
        #expect(report.source("mirror")?.state == "unavailable")
        #expect(report.source("mirror")?.detail.contains("did not answer within") == true, "\(String(describing: report.source("mirror")))")
        #expect(
            !FileManager.default.fileExists(
                atPath: try StoragePaths(environment: session.environment, namespace: session.namespace).vendorsDirectory),
            "the file store was used instead")
    }
}
