import Foundation
import Glibc
import OpenUDIDKit
import Testing

private let now = Date(timeIntervalSince1970: 1_704_067_200)

private func record(_ app: String, id: Identifier = .random()) -> SlotRecord {
    let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
    return SlotRecord(id: id, app: app, vendor: vendor, born: 1_700_000_000_000, written: 1_700_000_000_000, optOut: id.isOptedOut)
}

private func problem(_ read: StoreRead) -> StoreUnavailable? {
    if case .unavailable(let problem) = read { return problem }
    return nil
}

@Suite struct FileSlotStoreTests {
    @Test func writesReadsAndRemovesAnAppsSlot() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.appending("slots"))
        let bytes = record("com.acme.notes").encoded()
        #expect(store.read(app: "com.acme.notes") == .absent)
        try store.write(bytes, app: "com.acme.notes")
        #expect(store.read(app: "com.acme.notes") == .found(bytes))
        #expect(FileManager.default.fileExists(atPath: directory.appending("slots/com.acme.notes.json")))
        #expect(mode(of: directory.appending("slots")) == 0o700)
        try store.remove(app: "com.acme.notes")
        #expect(store.read(app: "com.acme.notes") == .absent)
    }

    @Test(arguments: ["../escape", "../../etc.passwd", "com.acme/../../x", ".hidden.app", "single"])
    func refusesNamesThatAreNotAppIds(app: String) throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.appending("slots"))
        #expect(problem(store.read(app: app))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try store.write(Data("x".utf8), app: app) }
        #expect(throws: StoreUnavailable.self) { try store.remove(app: app) }
        #expect(names(in: directory.path) == [])
    }

    @Test func listsValidSlotsInOrderAndReportsTheRest() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.appending("slots"))
        let apps = ["org.zeta.app", "com.acme.notes", "com.acme.draw"]
        var written: [String: Data] = [:]
        for app in apps {
            written[app] = record(app).encoded()
            try store.write(written[app] ?? Data(), app: app)
        }
        // Things a listing must pass over.
        try plant("junk", at: directory.appending("slots/notes.json"))
        try plant("junk", at: directory.appending("slots/.hidden.app.json"))
        try plant("junk", at: directory.appending("slots/com.acme.old.json.corrupt-1700000000000"))
        try plant("junk", at: directory.appending("slots/README"))
        try plant("junk", at: directory.appending("slots/.openudid-tmp-1234"))
        // A link named like a slot is listed but never followed.
        try plant(String(decoding: record("com.link.app").encoded(), as: UTF8.self), at: directory.appending("target"))
        #expect(symlink(directory.appending("target"), directory.appending("slots/com.link.app.json")) == 0)

        let listing = try store.list()
        #expect(listing.entries.map(\.app) == ["com.acme.draw", "com.acme.notes", "com.link.app", "org.zeta.app"])
        for entry in listing.entries where entry.app != "com.link.app" {
            #expect(entry.content == .found(written[entry.app] ?? Data()))
        }
        #expect(problem(listing.entries[2].content)?.kind == .unsafePath)
        #expect(listing.invalidNames == [".hidden.app.json", "notes.json"])
        #expect(listing.omitted == 0)
        #expect(!listing.scanStopped)
        #expect(listing.report?.contains("not named for a valid app id") == true)
    }

    @Test func listsAtMostTheLimitAndSaysHowManyItLeftOut() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.path)
        for index in 0..<7 {
            try store.write(record("com.app.n\(index)").encoded(), app: "com.app.n\(index)")
        }
        let listing = try store.list(limit: 3)
        #expect(listing.entries.map(\.app) == ["com.app.n0", "com.app.n1", "com.app.n2"])
        #expect(listing.omitted == 4)
        #expect(listing.report == "left out 4 slot file(s) over the limit")
    }

    @Test func reportsOversizedAndCorruptSlotsWithoutFailingTheListing() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.path)
        try plant(String(repeating: "x", count: 9000), at: directory.appending("com.big.app.json"))
        try plant("{not json", at: directory.appending("com.bad.app.json"))
        let listing = try store.list()
        #expect(listing.entries.count == 2)
        #expect(listing.entries[0].content == .found(Data("{not json".utf8)))
        let big = problem(listing.entries[1].content)
        #expect(big?.kind == .corrupt)
        #expect(big?.message.contains("9000 bytes, over the 4096-byte cap") == true)
    }

    @Test func aMissingDirectoryListsEmptyAndALinkedOneIsRefused() throws {
        let directory = try TemporaryDirectory()
        let missing = try FileSlotStore(directory: directory.appending("nope")).list()
        #expect(missing.entries.isEmpty && missing.report == nil)

        let real = directory.appending("real")
        try FileSlotStore(directory: real).write(record("com.acme.notes").encoded(), app: "com.acme.notes")
        #expect(symlink(real, directory.appending("linked")) == 0)
        #expect(throws: StoreUnavailable.self) { try FileSlotStore(directory: directory.appending("linked")).list() }
    }

    @Test func quarantineMovesACorruptSlotAside() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.path)
        try plant("garbage", at: directory.appending("com.acme.notes.json"))
        let moved = try #require(try store.quarantine(app: "com.acme.notes", now: now))
        #expect(moved == directory.appending("com.acme.notes.json.corrupt-1704067200000"))
        #expect(contents(of: moved) == "garbage")
        #expect(try store.list().entries.isEmpty)
    }
}

@Suite struct LocalCacheTests {
    @Test func storesTheIdentifierWithItsAppAndVendor() throws {
        let directory = try TemporaryDirectory()
        let paths = try StoragePaths(environment: ["HOME": directory.path])
        let app = try AppIdentity("com.acme.notes", vendor: "com.acme.suite")
        let cache = LocalCache(app: app, paths: paths)
        #expect(cache.path == directory.appending(".local/share/com.acme.notes/openudid.json"))
        #expect(cache.read(now: now) == .absent)

        let id = Identifier.random()
        try cache.write(id, born: 1_600_000_000_000, at: Date(timeIntervalSince1970: 1_700_000_000))
        let expected = SlotRecord(
            id: id, app: "com.acme.notes", vendor: "com.acme.suite",
            born: 1_600_000_000_000, written: 1_700_000_000_000, optOut: false)
        #expect(cache.read(now: now) == .identifier(expected))
        #expect(mode(of: cache.path) == 0o600)
        #expect(mode(of: directory.appending(".local/share/com.acme.notes")) == 0o700)
    }

    @Test func optingOutForgetsTheIdentifierAndRemovingOptsBackIn() throws {
        let directory = try TemporaryDirectory()
        let cache = LocalCache(app: try AppIdentity("com.acme.notes"), path: directory.appending("cache.json"))
        try cache.write(.random(), born: 1_600_000_000_000, at: now)
        try cache.optOut(at: now)
        guard case .optedOut(let record) = cache.read(now: now) else {
            Issue.record("opt-out not recorded: \(cache.read(now: now))")
            return
        }
        #expect(record.id == .optedOut && record.optOut)
        #expect(record.written == 1_704_067_200_000)
        #expect(contents(of: cache.path)?.contains(String(repeating: "0", count: 40)) == true)
        try cache.remove()
        #expect(cache.read(now: now) == .absent)
    }

    @Test func reportsACorruptOrForeignCacheAndLeavesIt() throws {
        let directory = try TemporaryDirectory()
        let cache = LocalCache(app: try AppIdentity("com.acme.notes"), path: directory.appending("cache.json"))
        try plant(#"{"v":1,"id":"x"}"#, at: cache.path)
        guard case .unavailable(let corrupt) = cache.read(now: now) else {
            Issue.record("a corrupt cache was accepted")
            return
        }
        #expect(corrupt.kind == .corrupt)
        #expect(corrupt.message.hasPrefix(cache.path + ": record rejected:"))
        #expect(contents(of: cache.path) == #"{"v":1,"id":"x"}"#)

        try plant(String(decoding: record("org.other.app").encoded(), as: UTF8.self), at: cache.path)
        guard case .unavailable(let foreign) = cache.read(now: now) else {
            Issue.record("another app's record was accepted")
            return
        }
        #expect(foreign.kind == .corrupt)
        #expect(foreign.message.contains("\"org.other.app\""))

        let moved = try #require(try cache.quarantine(now: now))
        #expect(contents(of: moved)?.contains("org.other.app") == true)
        #expect(cache.read(now: now) == .absent)
    }

    @Test func aSymlinkedCacheIsNeitherReadNorWrittenThrough() throws {
        let directory = try TemporaryDirectory()
        let victim = directory.appending("victim")
        try plant("precious", at: victim)
        let cache = LocalCache(app: try AppIdentity("com.acme.notes"), path: directory.appending("cache.json"))
        #expect(symlink(victim, cache.path) == 0)
        guard case .unavailable(let problem) = cache.read(now: now) else {
            Issue.record("read through a link")
            return
        }
        #expect(problem.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try cache.write(.random(), born: 1_700_000_000_000) }
        #expect(throws: StoreUnavailable.self) { try cache.optOut() }
        #expect(contents(of: victim) == "precious")
    }
}

@Suite struct FileVendorMirrorTests {
    @Test func keepsOneFilePerVendor() throws {
        let directory = try TemporaryDirectory()
        let mirror = FileVendorMirror(paths: try StoragePaths(environment: ["XDG_DATA_HOME": directory.path, "XDG_CONFIG_HOME": "/c"]))
        #expect(mirror.name == "file")
        #expect(mirror.directory == directory.appending("openudid/vendors"))
        let acme = record("com.acme.notes").encoded()
        let other = record("org.other.app").encoded()
        try mirror.write(acme, vendor: "com.acme")
        try mirror.write(other, vendor: "org.other")
        #expect(mirror.read(vendor: "com.acme") == .found(acme))
        #expect(mirror.read(vendor: "org.other") == .found(other))
        #expect(names(in: mirror.directory) == ["com.acme.json", "org.other.json"])
        try mirror.remove(vendor: "com.acme")
        try mirror.remove(vendor: "com.acme")
        #expect(mirror.read(vendor: "com.acme") == .absent)
        #expect(mirror.read(vendor: "org.other") == .found(other))
    }

    @Test(arguments: ["../../etc", "com/acme.x", ".acme.com", "acme", "", "com.acme\u{0}.x"])
    func aVendorCannotEscapeTheDirectory(vendor: String) throws {
        let directory = try TemporaryDirectory()
        let mirror = FileVendorMirror(directory: directory.appending("vendors"))
        #expect(problem(mirror.read(vendor: vendor))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try mirror.write(Data("x".utf8), vendor: vendor) }
        #expect(throws: StoreUnavailable.self) { try mirror.remove(vendor: vendor) }
        #expect(names(in: directory.path) == [])
    }

    @Test func anotherAppOfTheVendorLeavesAnAgreeingMirrorAsItIs() throws {
        let directory = try TemporaryDirectory()
        let environment = [
            "HOME": directory.path, "XDG_DATA_HOME": directory.appending("data"), "XDG_CONFIG_HOME": directory.appending("config")
        ]
        let configuration = OpenUDID.Configuration(usesSelections: false, mirror: .file, environment: environment)
        let notes = try OpenUDID(app: "com.acme.notes", configuration: configuration).resolve()
        #expect(notes.repairs.first { $0.place == .mirror } == .written(.mirror))
        let mirror = FileVendorMirror(paths: try StoragePaths(environment: environment))
        guard case .found(let written) = mirror.read(vendor: "com.acme") else {
            Issue.record("the first app wrote no mirror")
            return
        }
        // The second app agrees with the mirror; which app wrote it last is no reason to write it again.
        let photos = try OpenUDID(app: "com.acme.photos", configuration: configuration).resolve()
        #expect(photos.identifier == notes.identifier)
        #expect(photos.repairs.first { $0.place == .mirror } == .unchanged(.mirror))
        #expect(mirror.read(vendor: "com.acme") == .found(written))
    }

    @Test func worksThroughTheProtocol() throws {
        let directory = try TemporaryDirectory()
        let store: any VendorMirrorStore = FileVendorMirror(directory: directory.path)
        let bytes = record("com.acme.notes").encoded()
        try store.write(bytes, vendor: "com.acme")
        #expect(store.read(vendor: "com.acme") == .found(bytes))
        let parsed = try SlotRecord.parse(bytes, now: now)
        #expect(parsed.vendor == "com.acme")
    }
}

/// Directories OpenUDID creates or writes into, each replaced by a link: every store refuses alike.
@Suite struct LinkedDirectoryTests {
    private let directory: TemporaryDirectory
    private let elsewhere: String
    private let paths: StoragePaths

    init() throws {
        directory = try TemporaryDirectory()
        elsewhere = directory.appending("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.appending("data"), withIntermediateDirectories: true)
        paths = try StoragePaths(
            environment: ["XDG_DATA_HOME": directory.appending("data"), "XDG_CONFIG_HOME": directory.appending("config")],
            namespace: "lab")
    }

    private func link(_ relative: String) throws {
        let path = directory.appending("data/" + relative)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, path) == 0)
    }

    @Test(arguments: ["openudid", "openudid/ns", "openudid/ns/lab", "openudid/ns/lab/slots"])
    func fileSlots(linked: String) throws {
        try link(linked)
        let store = FileSlotStore(paths: paths)
        #expect(throws: StoreUnavailable.self) { try store.write(record("com.acme.notes").encoded(), app: "com.acme.notes") }
        #expect(problem(store.read(app: "com.acme.notes"))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try store.list() }
        #expect(try allFiles(under: elsewhere).isEmpty)
    }

    @Test(arguments: ["openudid", "openudid/ns/lab", "openudid/ns/lab/vendors"])
    func vendorMirror(linked: String) throws {
        try link(linked)
        let mirror = FileVendorMirror(paths: paths)
        #expect(throws: StoreUnavailable.self) { try mirror.write(record("com.acme.notes").encoded(), vendor: "com.acme") }
        let read = problem(mirror.read(vendor: "com.acme"))
        #expect(read?.kind == .unsafePath)
        #expect(read?.message.contains("is a symbolic link") == true)
        #expect(try allFiles(under: elsewhere).isEmpty)
    }

    @Test func localCache() throws {
        try link("com.acme.notes")
        let cache = LocalCache(app: try AppIdentity("com.acme.notes"), paths: paths)
        #expect(throws: StoreUnavailable.self) { try cache.write(.random(), born: 1_700_000_000_000) }
        #expect(throws: StoreUnavailable.self) { try cache.optOut() }
        guard case .unavailable(let read) = cache.read(now: now) else {
            Issue.record("a linked app directory must be unknown, not absent")
            return
        }
        #expect(read.message.contains(directory.appending("data/com.acme.notes") + " is a symbolic link"))
        #expect(try allFiles(under: elsewhere).isEmpty)
    }
}

/// Files planted beside the real file slots never hide them.
@Suite struct HostileSlotFilesTests {
    @Test func aThousandJunkFilesBesideTheHonestSlotsHideNone() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.path)
        let honest = ["com.acme.notes", "com.acme.photos"]
        let shared = Identifier.random()
        for app in honest { try store.write(record(app, id: shared).encoded(), app: app) }
        // Empty files under valid names that sort first, and as many under names that are no app id.
        for index in 0..<1000 {
            try plant("", at: directory.appending(String(format: "aaa.junk%04d.json", index)))
            try plant("", at: directory.appending(String(format: "junk%04d.json", index)))
        }
        let listing = try store.list()
        let found = listing.entries.compactMap { entry -> String? in
            guard case .found(let bytes) = entry.content, let record = try? SlotRecord.parse(bytes) else { return nil }
            return record.app
        }
        #expect(found == honest)
        #expect(listing.omitted == 0)
    }

    @Test func theLimitCountsValidRecordsAndTheCallersOwnSlotIsAlwaysRead() throws {
        let directory = try TemporaryDirectory()
        let store = FileSlotStore(directory: directory.path)
        for index in 0..<5 { try store.write(record("com.app.n\(index)").encoded(), app: "com.app.n\(index)") }
        try plant("{broken", at: directory.appending("com.app.a.json"))
        let listing = try store.list(limit: 2, including: "com.app.n4")
        #expect(listing.entries.map(\.app) == ["com.app.a", "com.app.n0", "com.app.n1", "com.app.n4"])
        #expect(listing.omitted == 2)
    }
}

@Suite struct LongAppIdTests {
    /// The longest app id (`AppIdentity.maximumLength`), so that every name derived from it fits NAME_MAX (255).
    static let app = String(repeating: "a", count: 112) + "." + String(repeating: "b", count: AppIdentity.maximumLength - 113)

    @Test func theLongestAppIdHasARealFileSlotAndCache() throws {
        #expect(Self.app.utf8.count == AppIdentity.maximumLength)
        let directory = try TemporaryDirectory()
        let paths = try StoragePaths(
            environment: ["XDG_DATA_HOME": directory.path, "XDG_CONFIG_HOME": directory.path + "/c"],
            namespace: String(repeating: "n", count: 64))
        let store = FileSlotStore(paths: paths)
        let bytes = record(Self.app).encoded()
        try store.write(bytes, app: Self.app)
        #expect(store.read(app: Self.app) == .found(bytes))
        #expect(try store.list().entries.map(\.app) == [Self.app])
        try plant("damaged", at: try store.path(for: Self.app))
        let moved = try #require(try store.quarantine(app: Self.app, now: now))
        #expect((moved as NSString).lastPathComponent.utf8.count <= 255)
        #expect(contents(of: moved) == "damaged")

        let identity = try AppIdentity(Self.app)
        let cache = LocalCache(app: identity, paths: paths)
        try cache.write(.random(), born: 1_700_000_000_000)
        guard case .identifier = cache.read() else {
            Issue.record("the cache of a 230-byte app id must be readable")
            return
        }
    }
}
