import Foundation
import OpenUDIDKit
import TestSupport
import Testing

/// Runs `openudid` in `environment`.
private func openudid(_ arguments: [String], _ environment: [String: String]) throws -> CommandResult {
    try runCommand(Tools.product("openudid"), arguments, environment: environment, timeout: 60)
}

/// `openudid get --json` of `app` with the Secret Service mirror and no display, parsed.
private func report(_ app: String, _ environment: [String: String]) throws -> [String: Any] {
    let result = try openudid(["get", "--app", app, "--mirror", "secret-service", "--no-display", "--json"], environment)
    guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
    else { throw HarnessError("openudid get --app \(app) failed (\(result.status)): \(result.standardError)") }
    return object
}

/// Whether `text` says that a Secret Service call waited out its deadline: what a call
/// that needs the user (a dialog, a prompt) comes to, and what the mirror must never wait for.
private func waitedForTheDeadline(_ text: String) -> Bool { text.contains("did not answer within") }

/// What the report says of the mirror: the source's state and detail, and what was done to it.
private func mirror(in report: [String: Any]) -> (state: String?, detail: String, repair: String?) {
    let source = (report["sources"] as? [[String: Any]])?.first { $0["name"] as? String == "mirror" }
    let repair = (report["repairs"] as? [[String: Any]])?.first { $0["place"] as? String == "mirror" }
    return (source?["state"] as? String, source?["detail"] as? String ?? "", repair?["outcome"] as? String)
}

/// The Secret Service mirror against KeePassXC 2.7 with its defaults: access
/// confirmation on, unlock before search on, Recycle Bin on.
@Suite(.serialized) struct KeePassXCMirrorTests {
    @Test func aLockedDatabaseIsReportedAtOnceAndNoWindowOpens() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        let written = try report("com.acme.notes", environment)
        #expect(mirror(in: written).repair == "written")
        try keepassxc.lock()
        let before = try keepassxc.windowTitles()
        #expect(before.contains { $0.contains("[Locked]") }, "the database must be locked: \(before)")
        #expect(try keepassxc.dialogTitles().isEmpty)

        let locked = try report("com.acme.notes", environment)
        let after = try keepassxc.dialogTitles()
        // Before the collection was looked at first, every call waited for the Unlock
        // Database dialog until the 2 s deadline; now nothing waits at all.
        #expect(after.isEmpty, "no dialog may appear: \(after)")
        let found = mirror(in: locked)
        #expect(!waitedForTheDeadline(found.detail), "a get must not wait for the deadline: \(found.detail)")
        #expect(found.state == "unavailable")
        #expect(found.detail.contains("KeePassXC's default collection is locked"), "\(found.detail)")
        #expect(found.detail.contains("unlock the database in KeePassXC"), "\(found.detail)")
        #expect(locked["id"] as? String == written["id"] as? String, "the app's own copies still hold the identifier")
    }

    @Test func accessConfirmationIsReportedAsSuchAndOpensNoWindow() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        #expect(mirror(in: try report("com.acme.notes", environment)).repair == "written")
        #expect(try keepassxc.dialogTitles().isEmpty)

        let found = mirror(in: try report("com.acme.photos", environment))
        #expect(found.state == "unavailable")
        #expect(found.detail.contains("KeePassXC keeps the Secret Service item of com.acme"), "\(found.detail)")
        #expect(found.detail.contains("Confirm when passwords are retrieved by clients"), "\(found.detail)")
        #expect(!found.detail.contains("logging in"), "not a locked keyring: \(found.detail)")
        #expect(found.repair != "written", "an item kept from this app is never replaced")
        #expect(!waitedForTheDeadline(found.detail), "\(found.detail)")
        let dialogs = try keepassxc.dialogTitles()
        #expect(dialogs.isEmpty, "no access dialog may appear: \(dialogs)")
        let live = try keepassxc.entries { $0.contains { $0.title.hasPrefix("OpenUDID") } }
            .filter { !$0.isRecycled && $0.title.hasPrefix("OpenUDID") }
        #expect(live.count == 1, "\(live)")
    }

    @Test func forgetAllLeavesNoLiveEntryAndNamesTheRecycleBin() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        let acme = try report("com.acme.notes", environment)["id"] as? String
        _ = try report("org.indie.chess", environment)
        let identifier = try #require(acme)
        // KeePassXC saves each change a moment later: read until what is expected is there, or give up.
        let before = try keepassxc.entries { $0.filter { !$0.isRecycled && $0.password.contains(identifier) }.count == 2 }
        let held = before.filter { !$0.isRecycled && $0.password.contains(identifier) }
        // One identifier for every app, one mirror item per vendor.
        #expect(held.count == 2, "each vendor's mirror item holds the identifier: \(before)")

        let forget = try openudid(["forget", "--all"], environment)
        #expect(forget.status == 0, "\(forget.standardError)")
        #expect(forget.standardOutput.contains("keyring: OpenUDID identifier for com.acme"))
        #expect(forget.standardOutput.contains("keyring: OpenUDID identifier for org.indie"))
        #expect(forget.standardError.contains("Recycle Bin"), "\(forget.standardError)")
        #expect(forget.standardError.contains("Empty recycle bin"), "\(forget.standardError)")

        // Read once KeePassXC has saved the deletion: the entry is then in its Recycle Bin.
        let entries = try keepassxc.entries { entries in
            entries.contains { $0.isRecycled && $0.password.contains(identifier) }
                && !entries.contains { !$0.isRecycled && $0.password.contains(identifier) }
        }
        let live = entries.filter { !$0.isRecycled }
        #expect(!live.contains { $0.password.contains(identifier) || $0.history.contains { $0.contains(identifier) } }, "\(entries)")
        #expect(entries.contains { $0.isRecycled && $0.password.contains(identifier) }, "KeePassXC keeps it where the message says")
    }

    @Test func resetLeavesNoLiveEntryAndSaysWhereTheOldOneIs() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        let old = try #require(try report("com.acme.notes", environment)["id"] as? String)

        let reset = try openudid(["reset"], environment)
        #expect(reset.status == 0, "\(reset.standardError)")
        #expect(reset.standardOutput.contains("removed keyring: OpenUDID identifier for com.acme"))
        #expect(reset.standardError.contains("Recycle Bin"), "\(reset.standardError)")
        let entries = try keepassxc.entries { entries in
            entries.contains { $0.isRecycled && $0.password.contains(old) }
                && !entries.contains { !$0.isRecycled && $0.password.contains(old) }
        }
        #expect(entries.contains { $0.isRecycled && $0.password.contains(old) }, "\(entries)")
        #expect(!entries.contains { !$0.isRecycled && $0.password.contains(old) }, "\(entries)")
    }

    @Test func withdrawingConsentLeavesNoLiveEntryWithTheAppsId() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        let required = ["--consent", "required"]
        let granted = try openudid(["consent", "--app", "com.acme.notes", "grant"], environment)
        #expect(granted.status == 0, "\(granted.standardError)")
        let result = try openudid(
            ["get", "--app", "com.acme.notes", "--mirror", "secret-service", "--no-display"] + required, environment)
        let identifier = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(result.status == 0 && identifier.count == 40, "\(result.standardError)")
        _ = try keepassxc.entries { $0.contains { !$0.isRecycled && $0.password.contains("com.acme.notes") } }

        let withdrawn = try openudid(
            ["consent", "--app", "com.acme.notes", "withdraw", "--mirror", "secret-service", "--no-display"], environment)
        #expect(withdrawn.status == 0, "\(withdrawn.standardError)")
        let entries = try keepassxc.entries { entries in
            entries.contains { $0.isRecycled && $0.password.contains("com.acme.notes") }
                && !entries.contains { !$0.isRecycled && $0.password.contains(identifier) }
        }
        #expect(!entries.contains { !$0.isRecycled && $0.password.contains(identifier) }, "\(entries)")
    }

    @Test func aLockedDatabaseMakesForgetSayWhatStays() throws {
        let keepassxc = try PrivateKeePassXC()
        let environment = keepassxc.environment()
        _ = try report("com.acme.notes", environment)
        try keepassxc.lock()
        let forget = try openudid(["forget", "--all"], environment)
        #expect(forget.status == 1)
        #expect(forget.standardError.contains("KeePassXC's default collection is locked"), "\(forget.standardError)")
        #expect(!waitedForTheDeadline(forget.standardError), "\(forget.standardError)")
        #expect(try keepassxc.dialogTitles().isEmpty)
    }
}

/// The Secret Service mirror against KeePassXC with access confirmation turned
/// off, the setting its message recommends: apps of a vendor share the item, and
/// a changed record leaves no history behind.
@Suite(.serialized) struct KeePassXCWithoutConfirmationTests {
    @Test func appsShareTheMirrorAndARewriteAddsNoHistory() throws {
        let keepassxc = try PrivateKeePassXC(confirmAccess: false)
        let store = SecretServiceMirror(busAddress: keepassxc.address)
        try store.write(Data("first record".utf8), vendor: "com.acme")
        #expect(store.read(vendor: "com.acme") == .found(Data("first record".utf8)))
        try store.write(Data("second record".utf8), vendor: "com.acme")
        #expect(store.read(vendor: "com.acme") == .found(Data("second record".utf8)))

        // KeePassXC saves each change a moment later, and on a busy machine the new entry and
        // the recycled one may reach the file in two saves: read until both are there.
        let saved = try keepassxc.entries { entries in
            entries.contains { !$0.isRecycled && $0.password == "second record" }
                && entries.contains { $0.isRecycled && $0.password == "first record" }
        }
        let live = saved.filter { !$0.isRecycled && $0.title.hasPrefix("OpenUDID") }
        #expect(live.count == 1, "\(live)")
        // KeePassXC records the new entry's own creation in its history; the earlier record must not be there.
        #expect(
            live.first?.history.contains { $0.contains("first record") } == false, "a changed secret must not go to the history: \(live)")
        #expect(saved.contains { $0.isRecycled && $0.password == "first record" }, "the earlier entry went to the Recycle Bin: \(saved)")

        let first = try report("com.acme.notes", keepassxc.environment())
        let second = try report("com.acme.photos", keepassxc.environment())
        #expect(mirror(in: second).state == "read", "\(mirror(in: second))")
        #expect(first["id"] as? String == second["id"] as? String)
    }
}

/// The Secret Service mirror against kwalletd5 5.103, started as pam_kwallet5 starts it at login.
@Suite(.serialized) struct KWalletMirrorTests {
    @Test func theFirstAppOfASessionKeepsItsMirrorAndForgetLeavesNoItem() throws {
        let kwallet = try PrivateKWallet()
        let environment = kwallet.environment()
        #expect(try kwallet.isDefaultCollectionLocked(), "after login KWallet reports its collection locked until a client unlocks it")

        // Unlocked without a prompt: a prompt would have waited out the deadline, and the item would not be written.
        let first = try report("com.acme.notes", environment)
        #expect(mirror(in: first).repair == "written", "\(mirror(in: first))")
        #expect(try !kwallet.isDefaultCollectionLocked())

        let removed = try openudid(["remove-app", "com.acme.notes"], environment)
        #expect(removed.status == 0, "\(removed.standardError)")
        let second = try report("com.acme.photos", environment)
        #expect(second["id"] as? String == first["id"] as? String, "the vendor's mirror carries the identifier to its next app")
        #expect(mirror(in: second).state == "read", "\(mirror(in: second))")

        let forget = try openudid(["forget", "--all"], environment)
        #expect(forget.status == 0, "\(forget.standardError)")
        #expect(try kwallet.mirrorItems().isEmpty)
    }

    @Test func aClosedWalletIsReportedAndNotOpened() throws {
        let kwallet = try PrivateKWallet()
        let environment = kwallet.environment()
        try kwallet.closeWallet()

        let found = mirror(in: try report("com.acme.notes", environment))
        #expect(found.state == "unavailable")
        #expect(found.detail.contains("KWallet's default collection is locked"), "\(found.detail)")
        #expect(found.detail.contains("open the wallet in KWallet"), "\(found.detail)")
        // Running KWallet's prompt would ask for the wallet's password and wait for the deadline.
        #expect(!waitedForTheDeadline(found.detail), "\(found.detail)")
        #expect(try !kwallet.isWalletOpen())
    }
}
