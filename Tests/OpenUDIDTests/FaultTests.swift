import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

/// Faults of the things the library depends on: the X server, the file
/// system, the Secret Service, and many processes at once. Through all of
/// them the host process lives and the identifier the user has is kept.
@Suite(.requiresXvfb) struct XServerFaultTests {
    @Test func participantsOutliveAKilledServerWorkFromFilesAndTakePartAgainWhenItReturns() throws {
        let server = try PrivateXServer(numbering: .randomHigh)
        let session = try TestSession(display: server.display)
        let none = ["--mirror", "none"]
        let apps = ["com.acme.notes", "org.indie.chess", "net.other.viewer"]
        let participants = try apps.map { try session.serve($0, none) }
        defer { participants.forEach { $0.stop() } }
        #expect(eventually(timeout: 10) { Set(participants.map(\.current)).count == 1 })
        let shared = try #require(participants[0].current)
        #expect(occupiedSelectionSlots(session, none).count == 3)

        // `kill()` returns once the server is gone; a participant that the loss took
        // down is caught here or, at the latest, after the restart below.
        server.kill()
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended with the server: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
        // Without a server the identifier still comes from the participants' files.
        #expect(try session.get("org.fresh.app", ["--no-display"] + none) == shared)
        // With the server in DISPLAY gone, the answer comes without the selections, and says so.
        let result = try session.run(["get", "--app", "org.other.app", "--json"] + none)
        #expect(result.status == 5, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == shared)
        #expect(report.source("selections")?.state == "unavailable")

        try server.restart(elsewhereIfTaken: false)
        let back = eventually(timeout: 10) {
            let slots = occupiedSelectionSlots(session, none)
            return slots.count == 3 && Set(slots.map(\.id)) == [shared] && Set(slots.map(\.app)) == Set(apps)
        }
        #expect(back, "after the restart: \(occupiedSelectionSlots(session, none))")
        for participant in participants {
            #expect(participant.child.isRunning, "\(participant.app) ended after the restart: \(participant.child.standardError)")
            #expect(participant.current == shared)
        }
    }
}

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
        for place in Place.allCases {
            let repair = report.repair(place.rawValue)
            #expect(repair?.outcome == "failed", "\(place): \(String(describing: repair))")
            #expect(
                repair?.detail.contains("Read-only file system; the file system is mounted read-only") == true,
                "\(place): \(String(describing: repair))")
        }
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
        for place in Place.allCases {
            let repair = report.repair(place.rawValue)
            #expect(repair?.outcome == "failed", "\(place): \(String(describing: repair))")
            #expect(
                repair?.detail.contains("No space left on device; free some disk space") == true,
                "\(place): \(String(describing: repair))")
        }
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

@Suite struct LinkedDirectoryFaultTests {
    @Test(arguments: ["app directory", "vendors"])
    func aLinkedDirectoryIsNeverWrittenThroughAndTheIdentifierIsKept(linked: String) throws {
        let session = try TestSession(display: nil)
        let file = ["--mirror", "file"]
        let shared = try session.get("com.acme.notes", file)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let directory =
            linked == "vendors"
            ? paths.vendorsDirectory : AtomicFile.split(paths.localCacheFile(for: try AppIdentity("com.acme.photos"))).directory
        let elsewhere = session.home.root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        if FileManager.default.fileExists(atPath: directory) { try FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: AtomicFile.split(directory).directory, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, directory) == 0)

        let result = try session.run(["get", "--app", "com.acme.photos", "--json"] + file)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(report["id"] as? String == shared)
        #expect(try allFiles(under: elsewhere).isEmpty, "a write went through the link")
        let place = linked == "vendors" ? "mirror" : "local cache"
        #expect(report.repair(place)?.outcome == "skipped", "\(String(describing: report.repair(place)))")
        let complaints =
            report.rejections.map(\.reason) + ((report["sources"] as? [[String: Any]]) ?? []).compactMap { $0["detail"] as? String }
        #expect(complaints.contains { $0.contains(directory + " is a symbolic link") }, "\(complaints)")
    }

    @Test func getWarnsAndExitsWithThreeWhenNothingCouldBeSaved() throws {
        let session = try TestSession(display: nil)
        let data = session.home.dataHome.path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // Files standing where the directories go: nothing can be written, whoever runs the tool.
        try plant("not a directory", at: data + "/openudid")
        try plant("not a directory", at: data + "/com.acme.notes")
        let result = try session.run(["get", "--app", "com.acme.notes", "--mirror", "none"])
        #expect(result.status == 3, "\(result.standardError)")
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines).count == 40)
        #expect(result.standardError.hasPrefix("openudid: the identifier could not be saved anywhere ("), "\(result.standardError)")

        // With one place that holds it, all is well.
        try FileManager.default.removeItem(atPath: data + "/com.acme.notes")
        #expect(try session.run(["get", "--app", "com.acme.notes", "--mirror", "none"]).status == 0)
    }
}

@Suite(.requiresXvfb) struct ConcurrencyFaultTests {
    @Test(arguments: [false, true])
    func fiftyProcessesAtOnceAgreeAndLeaveEveryFileWhole(withDisplay: Bool) throws {
        let session = try TestSession(display: withDisplay ? SharedDisplay.display : nil)
        let outputs = Locked<[Int: String]>([:])
        onThreads(50) { index in
            let output: String
            do {
                let result = try session.run(["get", "--app", "org.swarm.app\(index)", "--mirror", "file"], timeout: 60)
                output = result.status == 0 ? result.standardOutput : "failed: \(result.standardError)"
            } catch {
                output = "did not finish: \(error)"
            }
            outputs.withLock { $0[index] = output }
        }
        let printed = outputs.withLock { $0 }
        #expect(printed.count == 50)
        let identifiers = Set(printed.values.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        #expect(identifiers.count == 1, "\(identifiers.count) different results: \(identifiers.prefix(5))")
        let shared = try #require(identifiers.first)
        #expect(shared.count == 40)

        let data = session.home.dataHome.path
        let files = try allFiles(under: data)
        #expect(files.filter { $0.contains(".openudid-tmp-") || $0.contains(".corrupt-") }.isEmpty, "\(files)")
        let records = files.filter { $0.hasSuffix(".json") }
        #expect(records.count == 50 + 50 + 1, "50 file slots, 50 caches and one mirror: \(records.count)")
        for path in records {
            let record = try SlotRecord.parse(try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(record.id.hex == shared, "\(path)")
        }
    }
}

extension ConcurrencyFaultTests {
    @Test func anAppKeepingTheGenerationLockDelaysButNeverBlocksAFirstResolution() throws {
        let session = try TestSession(display: nil)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let squatter = try #require(FileLock.acquire(paths.generationLock, waitingAtMost: .zero).value)
        defer { squatter.release() }
        let started = Date()
        let report = try session.report("com.acme.notes", ["--mirror", "none"])
        #expect((report["id"] as? String)?.count == 40)
        // It waited for the lock (a lower bound the clock cannot race) and went on at the
        // bound the report names: going on without the lock is said, not silent. A wait
        // without end would leave the process running past the harness's time-out.
        #expect(Date().timeIntervalSince(started) >= 1.9)
        let said = "another app held the lock \(paths.generationLock) for "
        let reason = try #require(report.rejections.first { $0.place == paths.generationLock }?.reason, "\(report.rejections)")
        let waited = reason.hasPrefix(said) ? Double(reason.dropFirst(said.count).prefix { $0 != " " }) : nil
        #expect(waited.map { $0 > 0 && $0 <= 2 } == true, "it waits no longer than the generation wait: \(reason)")
    }

    @Test(arguments: ["directory", "fifo"])
    func aDirectoryOrFIFOPlantedAtTheLockStillGivesFirstStartsOneIdentifier(planted: String) throws {
        let session = try TestSession(display: nil)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        try FileManager.default.createDirectory(
            atPath: AtomicFile.split(paths.generationLock).directory,
            withIntermediateDirectories: true)
        if planted == "directory" {
            try FileManager.default.createDirectory(atPath: paths.generationLock, withIntermediateDirectories: false)
        } else {
            #expect(mkfifo(paths.generationLock, 0o600) == 0)
        }
        let outputs = Locked<[String]>([])
        onThreads(30) { index in
            let result = try? session.run(["get", "--app", "org.swarm.app\(index)", "--mirror", "file", "--no-display"], timeout: 60)
            outputs.withLock { $0.append(result?.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) ?? "did not finish") }
        }
        let identifiers = Set(outputs.withLock { $0 })
        #expect(identifiers.count == 1, "\(identifiers.count) different results")
        let directory = AtomicFile.split(paths.generationLock).directory
        #expect(names(in: directory).filter { $0.hasPrefix("generate.lock.corrupt-") }.count == 1)
    }
}

@Suite struct SecretServiceFaultTests {
    enum Fault: String, CaseIterable, Sendable {
        case notRunning, locked, killedMidCall
    }

    @Test(arguments: Fault.allCases)
    func aFailingSecretServiceNeverGetsAFreshIdentifierOverTheRealOne(_ fault: Fault) throws {
        let bus = try PrivateSessionBus(keyring: .unlocked(password: "correct horse"))
        let session = try TestSession(display: nil, home: bus.home, extraEnvironment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        let secretService = ["--mirror", "secret-service"]
        let shared = try session.get("com.acme.notes", secretService)
        // Only the keyring holds the identifier now.
        #expect(try session.run(["remove-app", "com.acme.notes"]).status == 0)
        func stored() throws -> String? {
            let lookup = try runCommand(
                try Tools.find("secret-tool"),
                ["lookup", "xdg:schema", "org.openudid.VendorMirror", "vendor", "com.acme"],
                environment: bus.environment())
            return try? SlotRecord.parse(Data(lookup.standardOutput.utf8)).id.hex
        }

        let report: [String: Any]
        switch fault {
        case .notRunning:
            try bus.killKeyring()
            report = try session.report("com.acme.photos", secretService)
        case .locked:
            try bus.lockDefaultCollection()
            report = try session.report("com.acme.photos", secretService)
        case .killedMidCall:
            bus.suspendKeyring()
            let connections = try bus.connectionCount()
            let running = try ChildProcess(
                Tools.product("openudid"),
                ["get", "--app", "com.acme.photos", "--json"] + secretService + session.commonArguments,
                environment: session.environment)
            // The call is under way once the process has joined the bus.
            #expect(eventually { (try? bus.connectionCount()).map { $0 > connections } == true }, "openudid get never joined the bus")
            try bus.killKeyring()
            var lines: [String] = []
            while let line = running.nextLine(timeout: 10) { lines.append(line) }
            #expect(running.wait(timeout: 30) == 0, "\(running.standardError)")
            report = try #require(try JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8)) as? [String: Any])
            // The call ended with the daemon, not at its deadline, which the report would name.
            #expect(report.source("mirror")?.detail.contains("did not answer") == false, "\(String(describing: report.source("mirror")))")
        }

        #expect(report.source("mirror")?.state == "unavailable", "\(String(describing: report.source("mirror")))")
        #expect(report.repair("mirror")?.outcome == "skipped", "\(String(describing: report.repair("mirror")))")

        // The service comes back: it still holds the real identifier, which wins again.
        switch fault {
        case .notRunning, .killedMidCall: try bus.startKeyring(password: "correct horse")
        case .locked: try bus.unlock(password: "correct horse")
        }
        #expect(try stored() == shared)
        #expect(try session.get("com.acme.photos", secretService) == shared)
        #expect(try stored() == shared)
    }
}

// MARK: - Helpers

/// `openudid get --json` that is expected to save the identifier nowhere: exit status 3, a warning, the report.
func unsavedReport(_ session: TestSession, _ app: String, _ extra: [String]) throws -> [String: Any] {
    let result = try session.run(["get", "--app", app, "--json"] + extra)
    #expect(result.status == 3, "\(result.standardError)")
    #expect(result.standardError.contains("could not be saved anywhere"))
    return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
}

/// The occupied selection slots of a session, as `openudid slots --json` lists them.
func occupiedSelectionSlots(_ session: TestSession, _ extra: [String]) -> [(slot: Int, app: String, id: String)] {
    guard let result = try? session.run(["slots", "--json"] + extra),
        let object = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any],
        let slots = object["slots"] as? [[String: Any]]
    else { return [] }
    return slots.filter { $0["kind"] as? String == "selection" }.map {
        (($0["slot"] as? Int) ?? -1, $0["app"] as? String ?? "", $0["id"] as? String ?? "")
    }
}

/// Every regular file under `root`, as absolute paths.
func allFiles(under root: String) throws -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var files: [String] = []
    for case let relative as String in enumerator {
        var info = stat()
        if lstat(root + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { files.append(root + "/" + relative) }
    }
    return files.sorted()
}

/// The names and contents of every file under `root`, to compare before and after.
func snapshot(_ root: String, excluding: String? = nil) throws -> [String: Data] {
    var contents: [String: Data] = [:]
    for path in try allFiles(under: root) where path != excluding {
        contents[path] = try Data(contentsOf: URL(fileURLWithPath: path))
    }
    return contents
}

/// Writes to `path` until the file system is full.
func fillDisk(_ path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard descriptor >= 0 else { throw HarnessError("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let block = [UInt8](repeating: 0x2E, count: 512)
    while true {
        let written = block.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            guard errno == ENOSPC else { throw HarnessError("filling \(path): \(String(cString: strerror(errno)))") }
            return
        }
    }
}

/// A tmpfs mounted over a directory for one test, to make a small or read-only file system.
final class TmpfsMount: Sendable {
    let path: String

    /// Whether this process may mount file systems (root with CAP_SYS_ADMIN, not in a locked-down container).
    static let isPermitted: Bool = {
        guard geteuid() == 0 else { return false }
        let directory = probeDirectory()
        defer { rmdir(directory) }
        guard let probe = try? TmpfsMount(at: directory, size: "4k") else { return false }
        probe.unmount()
        return true
    }()

    private static func probeDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.path + "/openudid-mount-probe-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    init(at path: String, size: String) throws {
        self.path = path
        let result = try runCommand(
            try Tools.find("mount"), ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path],
            environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        guard result.status == 0 else { throw HarnessError("mount tmpfs on \(path): \(result.standardError)") }
    }

    func remountReadOnly() throws {
        let result = try runCommand(
            try Tools.find("mount"), ["-o", "remount,ro", path], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        guard result.status == 0 else { throw HarnessError("remount \(path) read-only: \(result.standardError)") }
    }

    func unmount() {
        _ = try? runCommand(try Tools.find("umount"), [path], environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
    }
}

extension ConcurrencyFaultTests {
    /// Apps that find nothing while another app holds the generation lock
    /// read its file slot once it lets go, side by side, and none of them
    /// generates (PROTOCOL §6.4).
    @Test func appsThatWaitWhileAnotherGeneratesTakeWhatItWrote() throws {
        let session = try TestSession(display: nil)
        let paths = try StoragePaths(environment: session.environment, namespace: session.namespace)
        let generator = try #require(FileLock.acquire(paths.generationLock, waitingAtMost: .zero).value)
        let waiters = try (0..<3).map { index in
            try ChildProcess(
                Tools.product("openudid"),
                ["get", "--app", "com.acme.waiter\(index)", "--mirror", "none", "--json"] + session.commonArguments,
                environment: session.environment)
        }
        // A waiter keeps the lock file open while it waits for the generator.
        // The generator lets go as soon as one waits: a waiter gives up after
        // 2 s (PROTOCOL §6.4), which a busy machine could take to start all three.
        #expect(eventually(timeout: 20, every: 0.002) { !processes(holdingOpen: paths.generationLock).isEmpty })

        let identifier = Identifier.random()
        let now = Milliseconds.since1970(Date())
        let record = SlotRecord(id: identifier, app: try AppIdentity("com.acme.generator"), born: now, written: now)
        try FileManager.default.createDirectory(atPath: paths.slotsDirectory, withIntermediateDirectories: true)
        try record.encoded().write(to: URL(fileURLWithPath: paths.slotsDirectory + "/com.acme.generator.json"))
        generator.release()

        for waiter in waiters {
            waiter.waitForEndOfOutput(timeout: 20)
            let output = waiter.takeRemainingText()
            let report = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
            #expect(report["id"] as? String == identifier.hex)
            #expect(report["origin"] as? String != "generated", "\(report)")
            #expect(!report.rejections.contains { $0.place == paths.generationLock }, "\(report.rejections)")
        }
    }

    /// The ids of the processes that have `path` open.
    private func processes(holdingOpen path: String) -> Set<String> {
        // As /proc names it: the kernel's path has no doubled slashes.
        let path = (path as NSString).standardizingPath
        let proc = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var holders: Set<String> = []
        for pid in proc where pid.allSatisfy(\.isNumber) {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in fds where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == path {
                holders.insert(pid)
            }
        }
        return holders
    }
}
