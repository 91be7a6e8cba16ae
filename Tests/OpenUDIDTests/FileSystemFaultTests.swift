import Foundation
import Glibc
import InputGate
import Testing

@testable import OpenUDIDKit

// Disk full, read-only, unreadable and interrupted file systems, made by
// injecting an errno into the file-system layer of one handle: no root, no
// mount, nothing shared with another test.

/// A private data and config home, and one handle on it whose file calls go through `fileSystem`.
private struct Home {
    let directory: TemporaryDirectory
    let environment: [String: String]
    let paths: StoragePaths
    let fileSystem = FileSystem()

    init() throws {
        directory = try TemporaryDirectory()
        environment = [
            "HOME": directory.path, "XDG_DATA_HOME": directory.appending("data"),
            "XDG_CONFIG_HOME": directory.appending("config")
        ]
        paths = try StoragePaths(environment: environment)
    }

    /// A handle of `app` whose file calls go through `fileSystem`, with file slots, cache and a file mirror.
    func handle(_ app: String = "com.acme.notes") throws -> OpenUDID {
        var configuration = OpenUDID.Configuration(usesSelections: false, mirror: .file, environment: environment)
        configuration.fileSystem = fileSystem
        return try OpenUDID(app: app, configuration: configuration)
    }

    /// The three places of com.acme.notes: where each lives, and a path fragment only its files have.
    var places: [(name: String, path: String, fragment: String)] {
        [
            ("file slot", paths.slotsDirectory + "/com.acme.notes.json", "/openudid/slots/"),
            ("local cache", paths.localCacheFile(for: try! AppIdentity("com.acme.notes")), "/com.acme.notes/"),
            ("mirror", paths.vendorsDirectory + "/com.acme.json", "/openudid/vendors/")
        ]
    }

    /// Writes `id` into the three places with times a day old, as an earlier run would have.
    func plant(_ id: Identifier) throws {
        let old = Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000
        let record = SlotRecord(id: id, app: "com.acme.notes", vendor: "com.acme", born: old, written: old, optOut: false)
        for place in places { try AtomicFile.write(record.encoded(), to: place.path) }
    }
}

private func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

/// What a repair did, without its place.
private enum Outcome: Equatable {
    case written, unchanged
    case skipped(String)
    case failed(String)

    init(_ repair: Repair) {
        switch repair {
        case .written: self = .written
        case .unchanged: self = .unchanged
        case .skipped(_, let why): self = .skipped(why)
        case .failed(_, let why): self = .failed(why)
        }
    }
}

/// What the repair of the place named `place` (`file slot`, `local cache`, `mirror`) did.
private func outcome(_ report: Report, _ place: String) -> Outcome? {
    report.repairs.first { $0.place.repairName == place }.map(Outcome.init)
}

@Suite struct DiskFullAndReadOnlyTests {
    /// A write that fails midway (`ENOSPC` from `write`) or at the start (`EROFS` from
    /// creating the temporary file) leaves no file and no temporary behind, is
    /// reported with its reason, and costs nothing: the other places are written.
    @Test(arguments: [
        (ENOSPC, FileSystem.Call.write, "No space left on device", "free some disk space"),
        (EROFS, FileSystem.Call.open, "Read-only file system", "mounted read-only")
    ])
    func aFailedWriteOfOnePlaceIsReportedAndTheOthersAreWritten(
        fault: (code: Int32, call: FileSystem.Call, words: String, remedy: String)
    ) throws {
        for index in 0..<3 {
            let home = try Home()
            let place = home.places[index]
            // Only the temporary file of a write: reads of the same place still work.
            home.fileSystem.inject(
                fault.code, on: fault.call, times: .max, path: place.fragment + AtomicFile.temporaryPrefix)
            let report = try home.handle().resolve()
            guard case .failed(let why) = outcome(report, place.name) else {
                Issue.record("\(place.name): \(String(describing: outcome(report, place.name))), expected a failure")
                continue
            }
            #expect(why.contains(fault.words) && why.contains(fault.remedy), "\(why)")
            #expect(contents(place.path) == nil, "\(place.name) must not exist after a failed write")
            let directory = AtomicFile.split(place.path).directory
            #expect(!names(in: directory).contains { $0.hasPrefix(AtomicFile.temporaryPrefix) }, "a temporary was left")
            for other in home.places where other.name != place.name {
                #expect(outcome(report, other.name) == .written, "\(other.name)")
            }

            // Space is back: the next resolution keeps the identifier and fills the place in.
            home.fileSystem.clearFaults()
            let again = try home.handle().resolve()
            #expect(again.identifier == report.identifier)
            #expect(outcome(again, place.name) == .written)
        }
    }

    /// A full disk while the held copy is fine: nothing needs writing, nothing fails.
    @Test func aFullDiskCostsNothingWhenEveryPlaceAgrees() throws {
        let home = try Home()
        let first = try home.handle().resolve()
        home.fileSystem.inject(ENOSPC, on: .write, times: .max)
        home.fileSystem.inject(EROFS, on: .rename, times: .max)
        let second = try home.handle().resolve()
        #expect(second.identifier == first.identifier)
        #expect(second.repairs.allSatisfy { Outcome($0) == .unchanged }, "\(second.repairs)")
    }

    /// An opt-out cannot be written on a read-only disk: the call throws an error that carries the errno.
    @Test func optingOutOnAReadOnlyDiskThrowsAndChangesNothing() throws {
        let home = try Home()
        let udid = try home.handle()
        let id = udid.value()
        home.fileSystem.inject(EROFS, on: .open, times: .max, path: AtomicFile.temporaryPrefix)
        let error = #expect(throws: OpenUDIDError.self) { try udid.optOut() }
        #expect(error?.kind == .storeUnavailable)
        #expect(error?.errno == EROFS)
        #expect(error?.underlying is StoreUnavailable)
        #expect(error?.message.contains("mounted read-only") == true)
        home.fileSystem.clearFaults()
        #expect(udid.value(refresh: true) == id)
    }
}

@Suite struct UnreadablePlaceTests {
    /// `EACCES` on open and `EIO` on read of one place: it is left exactly as it
    /// was (a rewrite would change its `written` time), the identifier is the one
    /// the other places hold, and the report says why the place was skipped.
    @Test(arguments: [
        (EACCES, FileSystem.Call.open, "Permission denied"),
        (EIO, FileSystem.Call.read, "Input/output error")
    ])
    func aPlaceThatCannotBeReadIsNeverOverwritten(fault: (code: Int32, call: FileSystem.Call, words: String)) throws {
        for index in 0..<3 {
            let home = try Home()
            let id = Identifier.random()
            try home.plant(id)
            let place = home.places[index]
            let before = try #require(contents(place.path))
            let file = AtomicFile.split(place.path).name
            home.fileSystem.inject(fault.code, on: fault.call, times: .max, path: file)

            let report = try home.handle().resolve()
            #expect(report.identifier == id)
            guard case .skipped(let why) = outcome(report, place.name) else {
                Issue.record("\(place.name): \(String(describing: outcome(report, place.name))), expected it skipped")
                continue
            }
            #expect(why.contains(fault.words) && why.contains("left as it is"), "\(why)")
            #expect(contents(place.path) == before, "\(place.name) was overwritten")
        }
    }

    /// Nothing can be read at all: the handle keeps the identifier it resolved
    /// before, and writes nowhere, since it cannot know what the places hold.
    @Test func whenNoPlaceCanBeReadTheHeldIdentifierIsKeptAndNothingIsWritten() throws {
        let home = try Home()
        let udid = try home.handle()
        let id = udid.value()
        let before = home.places.map { contents($0.path) }
        #expect(before.allSatisfy { $0 != nil })

        home.fileSystem.inject(EACCES, on: .open, times: .max, path: ".json")
        let report = udid.resolve(refresh: true)
        #expect(report.identifier == id)
        for place in home.places {
            guard case .skipped = outcome(report, place.name) else {
                Issue.record("\(place.name): \(String(describing: outcome(report, place.name)))")
                continue
            }
        }
        #expect(home.places.map { contents($0.path) } == before)
    }

    /// The slot directory cannot be listed (`EIO` from readdir): the file slots are
    /// unavailable, the app's own slot is not rewritten, and the report says so.
    @Test func anUnlistableSlotDirectoryIsReportedAndItsSlotLeftAlone() throws {
        let home = try Home()
        let id = Identifier.random()
        try home.plant(id)
        let slot = home.places[0].path
        let before = try #require(contents(slot))
        home.fileSystem.inject(EIO, on: .readdir, times: .max, path: "/openudid/slots")

        let report = try home.handle().resolve()
        #expect(report.identifier == id)
        let source = try #require(report.sources.first { $0.place == .fileSlot })
        #expect(!source.isAvailable)
        #expect(source.description.contains("Input/output error"), "\(source)")
        guard case .skipped = outcome(report, "file slot") else {
            Issue.record("file slot: \(String(describing: outcome(report, "file slot")))")
            return
        }
        #expect(contents(slot) == before)
    }
}

@Suite struct InterruptedCallTests {
    /// `EINTR` on every kind of call a write and a read make, once each: the layer
    /// retries, so the write lands and the read finds it, and the interrupted
    /// calls were really made again.
    @Test(arguments: [FileSystem.Call.open, .write, .fsync, .rename, .mkdir, .stat, .lstat, .read])
    func anInterruptedCallIsRetried(call: FileSystem.Call) throws {
        let directory = try TemporaryDirectory()
        let fileSystem = FileSystem()
        let path = directory.appending("a/b/file.json")
        let bytes = Data("{\"x\":1}".utf8)
        fileSystem.inject(EINTR, on: call)
        try AtomicFile.write(bytes, to: path, below: directory.path, fileSystem: fileSystem)
        let read = AtomicFile.read(path, below: directory.path, fileSystem: fileSystem)
        #expect(read == .found(bytes))
        #expect(contents(path) == bytes)

        // The same work without the fault makes one call fewer of that kind.
        let plain = FileSystem()
        let other = directory.appending("c/d/file.json")
        try AtomicFile.write(bytes, to: other, below: directory.path, fileSystem: plain)
        _ = AtomicFile.read(other, below: directory.path, fileSystem: plain)
        #expect(fileSystem.count(of: call) == plain.count(of: call) + 1)
    }

    /// A whole resolution with `EINTR` sprinkled over its reads and writes ends as an uninterrupted one does.
    @Test func aResolutionThroughInterruptionsWritesEveryPlace() throws {
        let home = try Home()
        for call in [FileSystem.Call.open, .read, .write, .fsync, .rename, .flock, .readdir] {
            home.fileSystem.inject(EINTR, on: call, times: 3)
        }
        let report = try home.handle().resolve()
        #expect(report.repairs.map(Outcome.init) == [.written, .written, .written], "\(report.repairs)")
        // What the interrupted resolution left on disk, read without faults: how many
        // of the injected ones it used up depends on how many calls its writes make.
        home.fileSystem.clearFaults()
        let fresh = try home.handle().resolve()
        #expect(fresh.identifier == report.identifier)
        #expect(fresh.repairs.allSatisfy { Outcome($0) == .unchanged })
    }

    /// Faults belong to their instance: another file system, and the real one, are untouched.
    @Test func faultsStayWithTheirInstance() throws {
        let directory = try TemporaryDirectory()
        let faulty = FileSystem()
        faulty.inject(EIO, on: .open, times: .max)
        let path = directory.appending("file")
        try AtomicFile.write(Data("x".utf8), to: path)
        try AtomicFile.write(Data("x".utf8), to: path, fileSystem: FileSystem())
        #expect(AtomicFile.read(path) == .found(Data("x".utf8)))
        guard case .unavailable(let problem) = AtomicFile.read(path, fileSystem: faulty) else {
            Issue.record("the faulty instance read the file")
            return
        }
        #expect(problem.kind == .io)
        #expect(faulty.count(of: .open) == 1)
        #expect(FileSystem.system.count(of: .open) == 0)
    }

    /// The nth matching call fails, not the ones before it.
    @Test func theNthCallFails() throws {
        let directory = try TemporaryDirectory()
        let fileSystem = FileSystem()
        let path = directory.appending("file")
        try AtomicFile.write(Data("x".utf8), to: path)
        fileSystem.inject(EACCES, on: .open, at: 3, path: "file")
        #expect(AtomicFile.read(path, fileSystem: fileSystem) == .found(Data("x".utf8)))
        #expect(AtomicFile.read(path, fileSystem: fileSystem) == .found(Data("x".utf8)))
        #expect(AtomicFile.read(path, fileSystem: fileSystem) != .found(Data("x".utf8)))
        #expect(AtomicFile.read(path, fileSystem: fileSystem) == .found(Data("x".utf8)))
    }
}
