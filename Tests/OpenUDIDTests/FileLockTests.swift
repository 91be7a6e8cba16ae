import Foundation
import Testing

@testable import OpenUDIDKit

extension Result {
    var value: Success? { if case .success(let value) = self { value } else { nil } }
    var failure: Failure? { if case .failure(let failure) = self { failure } else { nil } }
}

@Suite struct FileLockTests {
    @Test func aSecondHolderWaitsAndGivesUpAtItsBound() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("sub/generate.lock")
        let first = try #require(FileLock.acquire(path, waitingAtMost: .zero).value)
        #expect(mode(of: directory.appending("sub")) == 0o700)

        // It waits (a lower bound the clock cannot race), and gives up at the bound its message names.
        let started = ContinuousClock.now
        let second = FileLock.acquire(path, waitingAtMost: .milliseconds(200)).failure
        #expect(ContinuousClock.now - started >= .milliseconds(190))
        #expect(second?.kind == .timedOut)
        #expect(second?.message.contains("another app held the lock \(path) for 0.2 s") == true, "\(String(describing: second))")

        first.release()
        #expect(
            FileLock.acquire(path, waitingAtMost: .seconds(10)).value != nil,
            "a forked child of another test may hold the descriptor until its exec")
    }

    @Test func sharedHoldersDoNotWaitForEachOtherButKeepAnExclusiveOneOut() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("erase.lock")
        let first = try #require(FileLock.acquire(path, mode: .shared, waitingAtMost: .zero).value)
        let second = try #require(FileLock.acquire(path, mode: .shared, waitingAtMost: .zero).value)
        #expect(first.identity == second.identity)
        #expect(FileLock.acquire(path, mode: .exclusive, waitingAtMost: .zero).failure?.kind == .timedOut)
        first.release()
        #expect(FileLock.acquire(path, mode: .exclusive, waitingAtMost: .zero).failure?.kind == .timedOut)
        second.release()
        // A process another test forks at this moment holds a copy of the
        // descriptor until it runs exec: wait for the lock rather than assume.
        let exclusive = try #require(FileLock.acquire(path, mode: .exclusive, waitingAtMost: .seconds(10)).value)
        #expect(FileLock.acquire(path, mode: .shared, waitingAtMost: .zero).failure?.kind == .timedOut)
        exclusive.release()
    }

    @Test func aLinkIsNeitherFollowedNorUsedButMovedAside() throws {
        let directory = try TemporaryDirectory()
        let target = directory.appending("target")
        let link = directory.appending("link.lock")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let lock = try #require(FileLock.acquire(link, waitingAtMost: .zero).value)
        defer { lock.release() }
        #expect(!FileManager.default.fileExists(atPath: target), "the link was followed")
        #expect(!isSymbolicLink(link))
        #expect(names(in: directory.path).contains { $0.hasPrefix("link.lock.corrupt-") })
    }

    @Test(arguments: ["directory", "fifo"])
    func aDirectoryOrFIFOAtThePathIsMovedAsideAndTheLockStillExcludes(planted: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("generate.lock")
        if planted == "directory" {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } else {
            #expect(mkfifo(path, 0o600) == 0)
        }
        let first = try #require(FileLock.acquire(path, waitingAtMost: .zero).value)
        defer { first.release() }
        #expect(names(in: directory.path).filter { $0.hasPrefix("generate.lock.corrupt-") }.count == 1)
        // Without the fix a planted directory or FIFO made every caller go on unlocked at once.
        #expect(FileLock.acquire(path, waitingAtMost: .milliseconds(50)).failure?.kind == .timedOut)
    }

    @Test func aLockThatCannotBeMadeIsReportedAsUnusable() throws {
        let directory = try TemporaryDirectory()
        try plant("a file", at: directory.appending("openudid"))
        let path = directory.appending("openudid/generate.lock")
        let failure = FileLock.acquire(path, waitingAtMost: .zero).failure
        #expect(failure?.kind == .unusable)
        #expect(failure?.message.hasPrefix("cannot use the lock \(path): ") == true, "\(String(describing: failure))")
    }

    @Test func aLinkedDirectoryBelowTheRootIsRefused() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.appending("elsewhere"), withIntermediateDirectories: false)
        #expect(symlink(directory.appending("elsewhere"), directory.appending("openudid")) == 0)
        let failure = FileLock.acquire(directory.appending("openudid/generate.lock"), waitingAtMost: .zero, below: directory.path).failure
        #expect(failure?.kind == .unusable)
        #expect(failure?.message.contains("is a symbolic link") == true)
        #expect(names(in: directory.appending("elsewhere")).isEmpty)
    }
}
