import Foundation
import TestSupport
import Testing

@testable import OpenUDIDKit

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
