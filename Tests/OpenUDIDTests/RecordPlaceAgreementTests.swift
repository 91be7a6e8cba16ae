import Foundation
import Glibc
import InputGate
import OpenUDIDKit
import TestSupport
import Testing

/// Every file-backed place a record lives in, built on a fresh directory and its own file system.
private func places(in directory: TemporaryDirectory, fileSystem: FileSystem) throws -> [any RecordPlace] {
    let environment = ["HOME": directory.path, "XDG_DATA_HOME": directory.appending("data")]
    let paths = try StoragePaths(environment: environment)
    let app = try AppIdentity("com.acme.notes")
    return [
        FileSlotPlace(store: FileSlotStore(paths: paths, fileSystem: fileSystem), app: app.id),
        LocalCachePlace(LocalCache(app: app, paths: paths, fileSystem: fileSystem)),
        VendorMirrorPlace(store: FileVendorMirror(paths: paths, fileSystem: fileSystem), vendor: app.vendor)
    ]
}

private let record = SlotRecord(
    id: .random(), app: "com.acme.notes", vendor: "com.acme", born: 1_700_000_000_000, written: 1_700_000_000_000, optOut: false)

/// The places agree on what reading, writing and quarantining mean, so the engine
/// can treat them alike: the same calls give the same answers in each.
@Suite struct RecordPlaceAgreementTests {
    @Test func everyPlaceRoundTripsAndQuarantinesAlike() throws {
        let directory = try TemporaryDirectory()
        let fileSystem = FileSystem()
        let all = try places(in: directory, fileSystem: fileSystem)
        #expect(Set(all.map(\.name)) == ["file slot", "local cache", "mirror"])
        for place in all {
            #expect(place.read() == .absent, "\(place.name)")
            #expect(try place.quarantine(now: Date()) == nil, "\(place.name): nothing to move aside")

            let bytes = record.encoded()
            try place.write(bytes)
            #expect(place.read() == .found(bytes), "\(place.name)")

            let garbage = Data("not a record".utf8)
            try place.write(garbage)
            #expect(place.read() == .found(garbage), "\(place.name)")
            let kept = try #require(try place.quarantine(now: Date(timeIntervalSince1970: 1_704_067_200)), "\(place.name)")
            #expect(kept.hasPrefix(place.location + ".corrupt-1704067200000"), "\(kept)")
            #expect(FileManager.default.contents(atPath: kept) == garbage, "\(place.name): the bytes must be kept")
            #expect(place.read() == .absent, "\(place.name)")

            try place.write(bytes)
            #expect(place.read() == .found(bytes), "\(place.name)")
        }
    }

    /// The vendor's mirror in a real keyring reads and writes as the files do; it keeps
    /// no side copy when quarantining, so the write after it replaces the item.
    @Test func theSecretServiceMirrorRoundTripsAsTheFilesDo() throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let place = VendorMirrorPlace(store: SecretServiceMirror(busAddress: bus.address), vendor: "com.acme")
        #expect(place.name == "mirror")
        #expect(place.read() == .absent)
        #expect(try place.quarantine(now: Date()) == nil)
        let garbage = Data("not a record".utf8)
        try place.write(garbage)
        #expect(place.read() == .found(garbage))
        #expect(try place.quarantine(now: Date()) == nil)
        let bytes = record.encoded()
        try place.write(bytes)
        #expect(place.read() == .found(bytes))
    }

    /// A failed write leaves the old record, and the failure names the reason, in every place.
    @Test(arguments: [ENOSPC, EROFS, EIO])
    func everyPlaceKeepsItsOldRecordWhenAWriteFails(code: Int32) throws {
        let directory = try TemporaryDirectory()
        let fileSystem = FileSystem()
        for place in try places(in: directory, fileSystem: fileSystem) {
            let bytes = record.encoded()
            try place.write(bytes)
            fileSystem.inject(code, on: .write)
            #expect(
                throws: StoreUnavailable(
                    .io, "cannot write \(place.location): \(String(cString: strerror(code)))\(remedy(code))", errno: code),
                "\(place.name)"
            ) { try place.write(Data("new".utf8)) }
            #expect(place.read() == .found(bytes), "\(place.name)")
        }
    }

    /// A failed read is unknown, never absent, in every place.
    @Test(arguments: [EACCES, EIO])
    func everyPlaceReportsAFailedReadAsUnknown(code: Int32) throws {
        let directory = try TemporaryDirectory()
        let fileSystem = FileSystem()
        for place in try places(in: directory, fileSystem: fileSystem) {
            try place.write(record.encoded())
            fileSystem.inject(code, on: code == EIO ? .read : .open)
            guard case .unavailable(let problem) = place.read() else {
                Issue.record("\(place.name): a failed read must be unknown")
                continue
            }
            #expect(problem.kind == .io)
            #expect(problem.message.contains(place.location) && problem.message.contains(String(cString: strerror(code))))
        }
    }
}

private func remedy(_ code: Int32) -> String {
    switch code {
    case ENOSPC: "; free some disk space"
    case EROFS: "; the file system is mounted read-only"
    default: ""
    }
}
