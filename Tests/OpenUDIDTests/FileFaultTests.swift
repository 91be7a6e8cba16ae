import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

@Suite struct FileFaultTests {
    static let file = ["--mirror", "file"]

    /// A kind of damage done to a file.
    enum Damage: String, CaseIterable, Sendable {
        case truncated, corrupt, oversized

        func apply(to path: String) throws -> Data {
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let damaged: Data =
                switch self {
                case .truncated: original.prefix(original.count / 2)
                case .corrupt: Data([0x7B, 0xFF, 0x00, 0x22, 0xC3]) + Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
                case .oversized: Data(repeating: UInt8(ascii: " "), count: 10_000) + original
                }
            try damaged.write(to: URL(fileURLWithPath: path))
            return damaged
        }

        var reason: String {
            switch self {
            case .truncated: "not valid JSON"
            case .corrupt: "record rejected"
            case .oversized: "over the 4096-byte cap"
            }
        }
    }

    /// The places an app keeps its copies, with the name its repair goes by.
    enum Place: String, CaseIterable, Sendable {
        case fileSlot = "file slot"
        case localCache = "local cache"
        case mirror = "mirror"

        func path(in session: TestSession, app: String, vendor: String) -> String {
            let shared = session.home.dataHome.path + "/openudid/ns/" + session.namespace
            return switch self {
            case .fileSlot: shared + "/slots/\(app).json"
            case .localCache: session.home.dataHome.path + "/\(app)/openudid-\(session.namespace).json"
            case .mirror: shared + "/vendors/\(vendor).json"
            }
        }
    }

    @Test(arguments: Place.allCases, Damage.allCases)
    func aDamagedFileIsReportedMovedAsideAndRewrittenWithTheOldIdentifier(place: Place, damage: Damage) throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("com.acme.notes", Self.file)
        let path = place.path(in: session, app: "com.acme.notes", vendor: "com.acme")
        let damaged = try damage.apply(to: path)

        let report = try session.report("com.acme.notes", Self.file)
        #expect(report["id"] as? String == shared)
        let complaints =
            report.rejections.map { "\($0.place): \($0.reason)" }
            + ((report["sources"] as? [[String: Any]]) ?? []).compactMap { $0["detail"] as? String }
        #expect(
            complaints.contains { $0.contains(damage.reason) && ($0.contains(path) || $0.contains("file mirror")) },
            "\(complaints)")
        #expect(report.repair(place.rawValue)?.outcome == "written")

        // The damaged bytes are kept under a new name, and the place holds the identifier again.
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let aside = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(name + ".corrupt-") }
        #expect(aside.count == 1)
        if let kept = aside.first {
            #expect(FileManager.default.contents(atPath: directory + "/" + kept) == damaged)
        }
        let repaired = try SlotRecord.parse(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(repaired.id.hex == shared)
    }

    @Test func symlinksPlantedWhereTheFilesGoAreNeverFollowed() throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("com.acme.notes", Self.file)
        #expect(try session.get("com.acme.photos", Self.file) == shared)

        // A planted record of another identifier, which following a link would read or overwrite.
        let decoy = SlotRecord(
            id: .random(), app: "com.acme.notes", vendor: "com.acme", born: SlotRecord.earliestTime + 1,
            written: SlotRecord.earliestTime + 1, optOut: false
        ).encoded()
        let victims = session.home.root.appendingPathComponent("victims")
        try FileManager.default.createDirectory(at: victims, withIntermediateDirectories: true)
        var targets: [Place: String] = [:]
        for place in Place.allCases {
            let path = place.path(in: session, app: "com.acme.notes", vendor: "com.acme")
            let target = victims.appendingPathComponent(place.rawValue.replacingOccurrences(of: " ", with: "-")).path
            // The mirror's link dangles: a write through it would create the target.
            if place != .mirror { try decoy.write(to: URL(fileURLWithPath: target)) }
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
            targets[place] = target
        }

        let report = try unsavedReport(session, "com.acme.notes", Self.file)
        #expect(report["id"] as? String == shared, "the photos app's file slot still holds the identifier")
        for place in Place.allCases {
            let path = place.path(in: session, app: "com.acme.notes", vendor: "com.acme")
            let target = try #require(targets[place])
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: path) == target, "\(place) link was replaced")
            if place == .mirror {
                #expect(!FileManager.default.fileExists(atPath: target), "a write went through the dangling link")
            } else {
                #expect(FileManager.default.contents(atPath: target) == decoy, "\(place) target was written")
            }
            let repair = report.repair(place.rawValue)
            #expect(repair?.outcome == "skipped" || repair?.outcome == "failed", "\(place): \(String(describing: repair))")
        }
        let complaints =
            report.rejections.map { "\($0.place): \($0.reason)" }
            + ((report["sources"] as? [[String: Any]]) ?? []).compactMap { $0["detail"] as? String }
        for place in Place.allCases {
            let path = place.path(in: session, app: "com.acme.notes", vendor: "com.acme")
            #expect(complaints.contains { $0.contains(path) && $0.contains("is a symbolic link") }, "\(place): \(complaints)")
        }
    }

    @Test(.enabled(if: TmpfsMount.isPermitted, "needs mount(2): run as root with CAP_SYS_ADMIN"))
    func aReadOnlyFileSystemGivesClearErrorsAndKeepsEveryFile() throws {
        let session = try TestSession(display: nil)
        let mount = try TmpfsMount(at: session.home.dataHome.path, size: "1m")
        defer { mount.unmount() }
        let shared = try session.get("com.acme.notes", Self.file)
        let before = try snapshot(session.home.dataHome.path)
        try mount.remountReadOnly()

        let report = try unsavedReport(session, "org.indie.chess", Self.file)
        #expect(report["id"] as? String == shared)
        expectEveryRepairFailed(report, saying: "Read-only file system; the file system is mounted read-only")
        #expect(try snapshot(session.home.dataHome.path) == before)
        #expect(try session.get("com.acme.notes", Self.file) == shared)
    }

    @Test(.enabled(if: TmpfsMount.isPermitted, "needs mount(2): run as root with CAP_SYS_ADMIN"))
    func aFullDiskGivesClearErrorsLeavesNoTornFileAndKeepsTheIdentifier() throws {
        let session = try TestSession(display: nil)
        let mount = try TmpfsMount(at: session.home.dataHome.path, size: "64k")
        defer { mount.unmount() }
        let shared = try session.get("com.acme.notes", Self.file)
        let filler = session.home.dataHome.appendingPathComponent("filler").path
        try fillDisk(filler)
        let before = try snapshot(session.home.dataHome.path, excluding: filler)

        let report = try unsavedReport(session, "org.indie.chess", Self.file)
        #expect(report["id"] as? String == shared)
        expectEveryRepairFailed(report, saying: "No space left on device; free some disk space")
        // Nothing torn, nothing half-written left behind, nothing lost.
        #expect(try snapshot(session.home.dataHome.path, excluding: filler) == before)

        try FileManager.default.removeItem(atPath: filler)
        let freed = try session.report("org.indie.chess", Self.file)
        #expect(freed["id"] as? String == shared)
        #expect(freed.repair("file slot")?.outcome == "written")
    }

    // ThreadSanitizer's runtime dies of SIGBUS at start under a zero file size
    // limit (it backs its own memory with a file), before any code of ours runs.
    @Test(.disabled(if: underSanitizer, "a sanitizer runtime cannot start under ulimit -f 0"))
    func aFileSizeLimitGivesClearErrorsAndKeepsTheIdentifier() throws {
        let session = try TestSession(display: nil)
        let shared = try session.get("com.acme.notes", Self.file)
        let before = try snapshot(session.home.dataHome.path)

        // The limit applies to the child alone; it ignores SIGXFSZ, as the
        // library's documentation asks, so the write fails with EFBIG.
        let openudid = Tools.product("openudid").path
        let result = try runCommand(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", "trap '' XFSZ; ulimit -f 0; exec \"$0\" \"$@\"", openudid,
                "get", "--app", "org.indie.chess", "--json"
            ] + Self.file + session.commonArguments,
            environment: session.environment)
        #expect(result.status == 3, "nothing could be saved: \(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == shared)
        for place in Place.allCases {
            let repair = report.repair(place.rawValue)
            #expect(repair?.outcome == "failed", "\(place): \(String(describing: repair))")
            #expect(
                repair?.detail.contains("a file size limit (ulimit -f) is in effect") == true, "\(place): \(String(describing: repair))")
        }
        #expect(try snapshot(session.home.dataHome.path) == before)
    }
}

/// Every place the report names as a repair failed, for the reason `detail` contains.
private func expectEveryRepairFailed(_ report: [String: Any], saying detail: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for place in FileFaultTests.Place.allCases {
        let repair = report.repair(place.rawValue)
        #expect(repair?.outcome == "failed", "\(place): \(String(describing: repair))", sourceLocation: sourceLocation)
        #expect(repair?.detail.contains(detail) == true, "\(place): \(String(describing: repair))", sourceLocation: sourceLocation)
    }
}
