import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Whether `/dev/shm` is a tmpfs this user can write.
private let tmpfsAtDevShm: Bool = {
    let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
    return mounts.split(separator: "\n").contains { $0.contains(" /dev/shm tmpfs ") }
        && access("/dev/shm", W_OK) == 0
}()

/// A `slots/` directory stuffed with more names than a listing looks at
/// (`FileSlotStore.scanLimit`): the app still reads its own slot, by name, and
/// never writes over what it did not read (docs/PROTOCOL.md §5 item 4).
///
/// The home lives on tmpfs (`/dev/shm`), whose listing order follows the order
/// the names were made in, so that the app's own slot can be put past the point
/// where the listing stops; on a file system that lists in hash order (ext4)
/// where it lands would be chance.
@Suite(.enabled(if: tmpfsAtDevShm, "needs a writable tmpfs at /dev/shm"))
struct CrowdedSlotsTests {
    static let app = "com.acme.notes"
    static let junk = 30_000

    /// A private home on tmpfs, removed with the value.
    final class Home: Sendable {
        let root: String

        init() throws {
            var template = Array("/dev/shm/openudid-crowded-XXXXXX".utf8CString)
            let made = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) })
            root = String(cString: made)
        }

        var data: String { root + "/data" }
        var environment: [String: String] {
            [
                "HOME": root, "XDG_DATA_HOME": data, "XDG_CONFIG_HOME": root + "/config",
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
            ]
        }
        var slots: String { data + "/openudid/slots" }
        var ownSlot: String { slots + "/\(CrowdedSlotsTests.app).json" }
        var localCache: String { data + "/\(CrowdedSlotsTests.app)/openudid.json" }

        deinit { try? FileManager.default.removeItem(atPath: root) }
    }

    /// `openudid get --app com.acme.notes` with files alone: no display, no mirror.
    private func get(_ home: Home) throws -> CommandResult {
        try runCommand(
            Tools.product("openudid"), ["get", "--app", Self.app, "--no-display", "--mirror", "none", "--json"],
            environment: home.environment)
    }

    private func identifier(_ result: CommandResult) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        return try #require(object?["id"] as? String, "\(result.standardOutput) \(result.standardError)")
    }

    /// Makes `count` empty files named `junk-<n>` in `directory`.
    private func plantJunk(_ count: Int, in directory: String) throws {
        for index in 0..<count {
            let descriptor = open(directory + "/junk-\(index)", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0, "cannot make junk-\(index): \(String(cString: strerror(errno)))")
            close(descriptor)
        }
    }

    /// Where `name` comes in a listing of `directory`, counting from 1.
    private func position(of name: String, in directory: String) throws -> Int? {
        let stream = try #require(opendir(directory))
        defer { closedir(stream) }
        var index = 0
        while let entry = readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if entryName == "." || entryName == ".." { continue }
            index += 1
            if entryName == name { return index }
        }
        return nil
    }

    /// Puts the app's slot past the first `FileSlotStore.scanLimit` names of the
    /// listing: moved out and back, it is the newest name.
    private func moveOwnSlotPastTheScanLimit(_ home: Home) throws {
        let name = "\(Self.app).json"
        if let at = try position(of: name, in: home.slots), at <= FileSlotStore.scanLimit {
            try #require(rename(home.ownSlot, home.root + "/aside.json") == 0)
            try #require(rename(home.root + "/aside.json", home.ownSlot) == 0)
        }
        let at = try #require(try position(of: name, in: home.slots))
        try #require(at > FileSlotStore.scanLimit, "the slot is listed at \(at), before the listing stops")
    }

    @Test func anAppReadsItsOwnSlotPastAStoppedListingAndKeepsItsIdentifier() throws {
        let home = try Home()
        let first = try get(home)
        try #require(first.status == 0, "\(first.standardError)")
        let identifier = try identifier(first)
        let slotBefore = try #require(FileManager.default.contents(atPath: home.ownSlot))

        // The app's cache is gone, and junk crowds its slot out of the listing.
        try FileManager.default.removeItem(atPath: home.localCache)
        try plantJunk(Self.junk, in: home.slots)
        try moveOwnSlotPastTheScanLimit(home)
        let listing = try FileSlotStore(directory: home.slots).list(including: Self.app)
        #expect(listing.scanStopped)
        #expect(listing.entries.map(\.app) == [Self.app], "read by name")

        let again = try get(home)
        #expect(again.status == 0, "\(again.standardError)")
        #expect(try self.identifier(again) == identifier, "the app kept its identifier")
        #expect(FileManager.default.contents(atPath: home.ownSlot) == slotBefore, "its slot was not written over")
        #expect(again.standardOutput.contains("listing stopped early"), "the report says the file slots are incomplete")
    }

    @Test func anAppWhoseSlotIsAbsentWritesNothingThereWhenTheListingStopped() throws {
        let home = try Home()
        try FileManager.default.createDirectory(atPath: home.slots, withIntermediateDirectories: true)
        try plantJunk(Self.junk + 1, in: home.slots)

        let result = try get(home)
        let generated = try identifier(result)
        #expect(generated != Identifier.optedOut.hex)
        #expect(!FileManager.default.fileExists(atPath: home.ownSlot), "a slot past the stop may hold the identifier")
        #expect(FileManager.default.fileExists(atPath: home.localCache), "the app's own cache is its own")
    }
}
