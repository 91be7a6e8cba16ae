import Foundation
import Glibc
import InputGate
import Testing

@testable import OpenUDIDKit

private func bytes(_ text: String) -> Data { Data(text.utf8) }

private func unavailable(_ read: StoreRead) -> StoreUnavailable? {
    if case .unavailable(let problem) = read { return problem }
    return nil
}

@Suite struct AtomicFileTests {
    @Test func writesAndReadsBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("a/b/c/file.json")
        #expect(AtomicFile.read(path) == .absent)
        try AtomicFile.write(bytes("first"), to: path)
        #expect(AtomicFile.read(path) == .found(bytes("first")))
        try AtomicFile.write(bytes("second, longer"), to: path)
        #expect(AtomicFile.read(path) == .found(bytes("second, longer")))
        try AtomicFile.write(Data(), to: path)
        #expect(AtomicFile.read(path) == .found(Data()))
        // No temporary file is left behind.
        #expect(names(in: directory.appending("a/b/c")) == ["file.json"])
    }

    @Test func createsPrivateFilesAndDirectoriesButLeavesExistingDirectoriesAlone() throws {
        let directory = try TemporaryDirectory()
        let existing = directory.appending("shared")
        #expect(mkdir(existing, 0o755) == 0)
        chmod(existing, 0o755)
        let path = existing + "/new/deeper/file.json"
        try AtomicFile.write(bytes("x"), to: path)
        #expect(mode(of: path) == 0o600)
        #expect(mode(of: existing + "/new") == 0o700)
        #expect(mode(of: existing + "/new/deeper") == 0o700)
        #expect(mode(of: existing) == 0o755)
        // Replacing a file keeps it private even if someone loosened the old one.
        chmod(path, 0o644)
        try AtomicFile.write(bytes("y"), to: path)
        #expect(mode(of: path) == 0o600)
    }

    @Test func neverFollowsASymlinkAtTheTarget() throws {
        let directory = try TemporaryDirectory()
        let victim = directory.appending("victim")
        try plant("precious", at: victim)
        let path = directory.appending("slot.json")
        #expect(symlink(victim, path) == 0)

        let problem = unavailable(AtomicFile.read(path))
        #expect(problem?.kind == .unsafePath)
        #expect(problem?.message.contains(path) == true)

        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("evil"), to: path) }
        do {
            try AtomicFile.write(bytes("evil"), to: path)
        } catch {
            #expect(error.kind == .unsafePath)
            #expect(error.message.contains(path))
        }
        #expect(throws: StoreUnavailable.self) { try AtomicFile.remove(path) }
        #expect(throws: StoreUnavailable.self) { try AtomicFile.quarantine(path) }

        #expect(contents(of: victim) == "precious")
        #expect(isSymbolicLink(path))
        #expect(names(in: directory.path) == ["slot.json", "victim"])
    }

    @Test func neverCreatesTheTargetOfADanglingSymlink() throws {
        let directory = try TemporaryDirectory()
        let elsewhere = directory.appending("elsewhere")
        let path = directory.appending("slot.json")
        #expect(symlink(elsewhere, path) == 0)
        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("x"), to: path) }
        #expect(!FileManager.default.fileExists(atPath: elsewhere))
        #expect(unavailable(AtomicFile.read(path))?.kind == .unsafePath)
    }

    @Test func refusesDirectoriesAndFIFOsWithoutBlocking() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.appending("folder.json")
        #expect(mkdir(folder, 0o700) == 0)
        #expect(unavailable(AtomicFile.read(folder))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("x"), to: folder) }

        let fifo = directory.appending("fifo.json")
        #expect(mkfifo(fifo, 0o600) == 0)
        // Without O_NONBLOCK this open would wait forever for a writer.
        #expect(unavailable(AtomicFile.read(fifo))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("x"), to: fifo) }
    }

    @Test func reportsAnOversizedFileWithoutReadingItAndLeavesIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("big.json")
        try plant(String(repeating: "x", count: 9000), at: path)
        let problem = unavailable(AtomicFile.read(path))
        #expect(problem?.kind == .corrupt)
        #expect(
            problem?.message == """
                \(path) is 9000 bytes, over the 4096-byte cap; it is not read, and the app that owns it \
                moves it aside (as big.json.corrupt-<milliseconds>) before writing its record again
                """)
        #expect(contents(of: path)?.count == 9000)
        #expect(AtomicFile.read(path, limit: 9000) == .found(Data(String(repeating: "x", count: 9000).utf8)))
    }

    @Test func aPathThroughAFileIsUnsafeNotAbsent() throws {
        let directory = try TemporaryDirectory()
        try plant("x", at: directory.appending("file"))
        #expect(unavailable(AtomicFile.read(directory.appending("file/slot.json")))?.kind == .unsafePath)
        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("x"), to: directory.appending("file/sub/slot.json")) }
        #expect(contents(of: directory.appending("file")) == "x")
    }

    @Test func aReadOnlyDirectoryGivesAClearErrorAndKeepsTheOldFile() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.appending("locked")
        let path = folder + "/slot.json"
        try AtomicFile.write(bytes("old"), to: path)
        chmod(folder, 0o555)
        let outcome = withoutRootPrivileges { () -> StoreUnavailable? in
            do {
                try AtomicFile.write(bytes("new"), to: path)
                return nil
            } catch {
                return error as? StoreUnavailable
            }
        }
        let error = try #require(outcome ?? nil, "the write into a read-only directory succeeded")
        #expect(error.kind == .io)
        #expect(error.message.hasPrefix("cannot write \(path): Permission denied"))
        #expect(error.message.contains("check the owner and permissions of \(folder)"))
        chmod(folder, 0o700)
        #expect(contents(of: path) == "old")
        #expect(names(in: folder) == ["slot.json"])
    }

    @Test func explainsCommonFailures() {
        #expect(AtomicFile.failure("/x/y", ENOSPC).message == "cannot write /x/y: No space left on device; free some disk space")
        #expect(
            AtomicFile.failure("/x/y", EROFS).message
                == "cannot write /x/y: Read-only file system; the file system is mounted read-only")
        #expect(AtomicFile.failure("/x/y", EFBIG).message.contains("ulimit -f"))
        #expect(AtomicFile.failure("/x/y", EACCES).kind == .io)
    }

    @Test func concurrentWritersNeverLeaveATornFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("slot.json")
        let app = try AppIdentity("com.acme.notes")
        let records = (0..<8).map { thread in
            (0..<200).map { round in
                // Sizes vary so a torn file could not pass as a whole one by length alone.
                let name = "com.acme.t\(thread)r\(round)" + String(repeating: "x", count: (thread * 200 + round) % 97)
                return SlotRecord(
                    id: .random(), app: name, vendor: app.vendor,
                    born: 1_700_000_000_000, written: 1_700_000_000_000 + Int64(round), optOut: false)
            }
        }
        let valid = Set(records.joined().map { $0.encoded() })
        try AtomicFile.write(records[0][0].encoded(), to: path)

        // A few examples are enough to diagnose; a broken writer would produce thousands.
        let failures = Locked<(count: Int, examples: [String])>((0, []))
        @Sendable func fail(_ text: String) {
            failures.withLock {
                $0.count += 1
                if $0.examples.count < 5 { $0.examples.append(text) }
            }
        }
        let finished = Locked(0)
        let reads = Locked(0)
        onThreads(10) { index in
            if index < 8 {
                for record in records[index] {
                    do {
                        try AtomicFile.write(record.encoded(), to: path)
                    } catch {
                        fail("write: \(error)")
                    }
                }
                finished.withLock { $0 += 1 }
            } else {
                // Readers run until every writer is done.
                while finished.withLock({ $0 }) < 8 {
                    switch AtomicFile.read(path) {
                    case .found(let data) where valid.contains(data):
                        reads.withLock { $0 += 1 }
                    case let other:
                        fail("read: \(other)")
                    }
                }
            }
        }
        let (failureCount, examples) = failures.withLock { $0 }
        #expect(failureCount == 0, "\(examples)")
        #expect(reads.withLock { $0 } > 0)
        let final = AtomicFile.read(path)
        guard case .found(let data) = final else {
            Issue.record("final read gave \(final)")
            return
        }
        #expect(valid.contains(data))
        #expect(names(in: directory.path) == ["slot.json"])
    }

    @Test func quarantineKeepsTheBytesUnderANewName() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("slot.json")
        let now = Date(timeIntervalSince1970: 1_700_000_000.123)
        #expect(try AtomicFile.quarantine(path, now: now) == nil)

        try plant("garbage\u{0}bytes", at: path)
        let moved = try #require(try AtomicFile.quarantine(path, now: now))
        #expect(moved == path + ".corrupt-1700000000123")
        #expect(contents(of: moved) == "garbage\u{0}bytes")
        #expect(AtomicFile.read(path) == .absent)

        // A second corrupt file in the same millisecond does not overwrite the first.
        try plant("more garbage", at: path)
        let second = try #require(try AtomicFile.quarantine(path, now: now))
        #expect(second == path + ".corrupt-1700000000123-1")
        #expect(contents(of: moved) == "garbage\u{0}bytes")
        #expect(contents(of: second) == "more garbage")
    }

    @Test func removeDeletesAFileAndAcceptsAMissingOne() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("slot.json")
        try AtomicFile.remove(path)
        try AtomicFile.remove(directory.appending("missing/dir/slot.json"))
        try AtomicFile.write(bytes("x"), to: path)
        try AtomicFile.remove(path)
        #expect(AtomicFile.read(path) == .absent)
    }

    @Test func aLinkedDirectoryBelowTheRootIsRefusedOnWriteAndUnknownOnRead() throws {
        let directory = try TemporaryDirectory()
        let root = directory.appending("data")
        let elsewhere = directory.appending("elsewhere")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: elsewhere + "/slots", withIntermediateDirectories: true)
        try plant("theirs", at: elsewhere + "/slots/com.acme.notes.json")
        #expect(symlink(elsewhere, root + "/openudid") == 0)
        let path = root + "/openudid/slots/com.acme.notes.json"

        let read = unavailable(AtomicFile.read(path, below: root))
        #expect(read?.kind == .unsafePath)
        #expect(read?.message.contains("\(root)/openudid is a symbolic link") == true, "\(String(describing: read))")
        #expect(throws: StoreUnavailable.self) { try AtomicFile.write(bytes("mine"), to: path, below: root) }
        #expect(throws: StoreUnavailable.self) { try AtomicFile.remove(path, below: root) }
        #expect(throws: StoreUnavailable.self) { _ = try AtomicFile.quarantine(path, below: root) }
        #expect(contents(of: elsewhere + "/slots/com.acme.notes.json") == "theirs")
        #expect(names(in: elsewhere + "/slots") == ["com.acme.notes.json"])

        // Above the root, links are fine: users link ~/.local/share elsewhere.
        let linkedRoot = directory.appending("linked-data")
        #expect(symlink(elsewhere, linkedRoot) == 0)
        try AtomicFile.write(bytes("mine"), to: linkedRoot + "/slots/com.acme.photos.json", below: linkedRoot)
        #expect(AtomicFile.read(linkedRoot + "/slots/com.acme.photos.json", below: linkedRoot) == .found(bytes("mine")))
    }

    /// A write where the directories exist looks at each one below the root once,
    /// without following links, and at none above it; a write that had to create
    /// the directory does not search it for temporaries a killed writer left.
    @Test func aWriteIntoExistingDirectoriesChecksOnlyThoseBelowTheRoot() throws {
        let directory = try TemporaryDirectory()
        let root = directory.appending("data")
        let path = root + "/openudid/slots/com.acme.notes.json"
        let first = FileSystem()
        try AtomicFile.write(bytes("one"), to: path, below: root, fileSystem: first)
        #expect(first.count(of: .mkdir) == 3)
        #expect(first.count(of: .readdir) == 0)

        let again = FileSystem()
        try AtomicFile.write(bytes("two"), to: path, below: root, fileSystem: again)
        #expect(again.count(of: .stat) == 0)
        #expect(again.count(of: .lstat) == 3, "openudid, slots and the file itself")
        #expect(again.count(of: .mkdir) == 0)
        #expect(again.count(of: .readdir) > 0, "an existing directory is searched for left-over temporaries")
        #expect(AtomicFile.read(path, below: root) == .found(bytes("two")))
    }

    /// A directory made for a write is an entry in the one above it: that one
    /// is flushed too, or a crash could take the new directory and the flushed
    /// file in it away. Directories that were there are not flushed again.
    @Test func aWriteThatMakesDirectoriesFlushesTheDirectoriesAboveThem() throws {
        let directory = try TemporaryDirectory()
        let root = directory.appending("data")
        let path = root + "/openudid/slots/com.acme.notes.json"
        let first = FileSystem()
        try AtomicFile.write(bytes("one"), to: path, below: root, fileSystem: first)
        #expect(first.paths(of: .mkdir) == [root, root + "/openudid", root + "/openudid/slots"])
        #expect(
            first.paths(of: .fsync).filter { !$0.contains(AtomicFile.temporaryPrefix) }
                == [directory.path, root, root + "/openudid", root + "/openudid/slots"],
            "the parent of each directory made, then the file's own directory after the rename")

        let again = FileSystem()
        try AtomicFile.write(bytes("two"), to: path, below: root, fileSystem: again)
        #expect(again.paths(of: .fsync).filter { !$0.contains(AtomicFile.temporaryPrefix) } == [root + "/openudid/slots"])
    }

    /// A file shorter than the cap is read with one read: the short count is its end.
    @Test func readsASmallFileWithOneRead() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("slot.json")
        try AtomicFile.write(bytes("{\"app\":\"com.acme.notes\"}"), to: path)
        let fileSystem = FileSystem()
        #expect(AtomicFile.read(path, fileSystem: fileSystem) == .found(bytes("{\"app\":\"com.acme.notes\"}")))
        #expect(fileSystem.count(of: .read) == 1)
    }

    @Test func aMissingDirectoryBelowTheRootReadsAsAbsent() throws {
        let directory = try TemporaryDirectory()
        #expect(AtomicFile.read(directory.appending("openudid/slots/x.y.json"), below: directory.path) == .absent)
    }

    @Test func aWriteRemovesTemporaryFilesThatAKilledWriterLeftButNotFreshOnes() throws {
        let directory = try TemporaryDirectory()
        let stale = directory.appending(".openudid-tmp-dead")
        let fresh = directory.appending(".openudid-tmp-busy")
        let other = directory.appending(".other-tmp-dead")
        for path in [stale, fresh, other] { try plant("half a rec", at: path) }
        let old = Date().addingTimeInterval(-Double(AtomicFile.staleTemporaryAge) - 30)
        for path in [stale, other] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
        }
        try AtomicFile.write(bytes("whole"), to: directory.appending("slot.json"))
        #expect(names(in: directory.path) == [".openudid-tmp-busy", ".other-tmp-dead", "slot.json"])
    }

    @Test func aWriterKilledMidWriteLeavesATemporaryFileTheNextWriteRemoves() throws {
        let directory = try TemporaryDirectory()
        // A real writer, stopped for good by SIGKILL between creating its temporary file and renaming it.
        let child = fork()
        if child == 0 {
            let descriptor = open(directory.appending(".openudid-tmp-0123456789abcdef"), O_WRONLY | O_CREAT | O_EXCL, 0o600)
            _ = write(descriptor, "{\"id\":", 6)
            while true { pause() }
        }
        #expect(child > 0)
        let temporary = directory.appending(".openudid-tmp-0123456789abcdef")
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: temporary), Date() < deadline { usleep(1_000) }
        kill(child, SIGKILL)
        var status: Int32 = 0
        waitpid(child, &status, 0)
        #expect(FileManager.default.fileExists(atPath: temporary))

        // Freshly left: kept (its writer might still be running). Aged past the bound: removed.
        try AtomicFile.write(bytes("one"), to: directory.appending("slot.json"))
        #expect(FileManager.default.fileExists(atPath: temporary))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: temporary)
        try AtomicFile.write(bytes("two"), to: directory.appending("slot.json"))
        #expect(names(in: directory.path) == ["slot.json"])
    }

    @Test func quarantineNamesOfTheLongestAppIdsFitTheFileSystem() throws {
        let directory = try TemporaryDirectory()
        let app = String(repeating: "a", count: 115) + "." + String(repeating: "b", count: 114)
        #expect(app.utf8.count == 230)
        let path = directory.appending(app + ".json")
        try AtomicFile.write(bytes("damaged"), to: path)
        let first = try #require(try AtomicFile.quarantine(path, now: Date(timeIntervalSince1970: 1_704_067_200)))
        try AtomicFile.write(bytes("damaged again"), to: path)
        let second = try #require(try AtomicFile.quarantine(path, now: Date(timeIntervalSince1970: 1_704_067_200)))
        for moved in [first, second] {
            let name = (moved as NSString).lastPathComponent
            #expect(name.utf8.count <= 255, "\(name.utf8.count) bytes")
            #expect(name.hasPrefix(app))
            #expect(name.contains(".corrupt-1704067200000"))
        }
        #expect(contents(of: first) == "damaged")
        #expect(contents(of: second) == "damaged again")
    }
}
