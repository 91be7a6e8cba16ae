import Foundation
import Testing
@testable import OpenUDID

@Suite struct FileLockTests {
    @Test func aSecondHolderWaitsAndGivesUpAtItsBound() throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("sub/generate.lock")
        let first = try #require(FileLock.acquire(path, waitingAtMost: .zero))
        #expect(mode(of: directory.appending("sub")) == 0o700)

        let started = ContinuousClock.now
        #expect(FileLock.acquire(path, waitingAtMost: .milliseconds(200)) == nil)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(190) && waited < .seconds(2))

        first.release()
        #expect(FileLock.acquire(path, waitingAtMost: .zero) != nil)
    }

    @Test func aLinkOrFIFOAtThePathIsNeitherFollowedNorUsed() throws {
        let directory = try TemporaryDirectory()
        let target = directory.appending("target")
        let link = directory.appending("link.lock")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(FileLock.acquire(link, waitingAtMost: .zero) == nil)
        #expect(!FileManager.default.fileExists(atPath: target), "the link was followed")

        let fifo = directory.appending("fifo.lock")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(FileLock.acquire(fifo, waitingAtMost: .zero) == nil)
    }
}
