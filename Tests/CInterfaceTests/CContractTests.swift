import Foundation
import TestSupport
import Testing

/// What include/openudid.h promises beyond single calls, checked by C
/// programs compiled against the installed library: handles that cannot be
/// confused, the version macros, a last error that only failures touch,
/// destroy functions called once, forgetting with a dry run, and a close
/// that lets go of the slot while a callback blocks.
@Suite struct CContractTests {
    /// Runs `program` with `arguments` in `environment` and returns its lines, which must end in "done".
    private func lines(of program: URL, _ arguments: [String] = [], environment: [String: String]) throws -> [String] {
        let result = try runCommand(program, arguments, environment: try Installation.shared.get().environment(environment))
        #expect(result.status == 0, "\(program.lastPathComponent) exited \(result.status): \(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.last == "done", "\(program.lastPathComponent) stopped early: \(result.standardOutput)\(result.standardError)")
        return lines
    }

    /// A private home without a display.
    private func environment(_ home: PrivateHome) -> [String: String] {
        var environment = home.environment()
        environment["DISPLAY"] = nil
        return environment
    }

    @Test(arguments: [false, true])
    func closingAHandleTwiceNeverClosesOneOpenedSince(underAddressSanitizer: Bool) throws {
        let home = try PrivateHome()
        let program = try (underAddressSanitizer ? Installation.handlesUnderASan : Installation.handles).get()
        var environment = environment(home)
        // Leak checking stays on: the library must not leak a handle either.
        if underAddressSanitizer { environment["ASAN_OPTIONS"] = "abort_on_error=0:halt_on_error=1" }
        let lines = try lines(of: program, environment: environment)
        #expect(lines == ["rounds 500", "reused 0", "closed-live 0", "done"])
    }

    @Test(arguments: ["header-c99", "header-c11", "header-c++11"])
    func theHeaderKeepsItsPromisesFromCAndCxx(build: String) throws {
        let home = try PrivateHome()
        let program = try #require(try Installation.header.get().first { $0.lastPathComponent == build })
        let lines = try lines(of: program, environment: environment(home))
        let failed = lines.filter { $0.contains("\tFAILED") }
        #expect(failed == [])
        #expect(lines.count >= 29, "\(lines)")
    }

    @Test func forgettingRemovesWhatTheDryRunListed() throws {
        let home = try PrivateHome()
        let program = try #require(try Installation.header.get().first)
        let lines = try lines(of: program, ["forget"], environment: environment(home))
        #expect(lines.filter { $0.contains("\tFAILED") } == [])
        #expect(lines.contains("forget: nothing is left\tok"), "\(lines)")
        let data = home.dataHome.appendingPathComponent("openudid")
        #expect(!FileManager.default.fileExists(atPath: data.path))
    }

    @Test(.requiresXvfb) func closeReleasesTheSlotBeforeItWaitsForABlockedCallback() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let app = "org.example.blocking"
        let child = try ChildProcess(
            try Installation.blockingClose.get(), [app, session.namespace],
            environment: try Installation.shared.get().environment(session.environment), input: .pipe)
        let change = try #require(child.nextLine(timeout: 15), "no change: \(child.standardError)")
        #expect(change.hasPrefix("change ") && change.count == 47)
        #expect(child.nextLine(timeout: 10) == "blocking")
        #expect(child.nextLine(timeout: 10) == "closing")

        func servesASlot() -> Bool {
            let slots = (try? session.run(["slots", "--json"]).standardOutput) ?? ""
            let object = (try? JSONSerialization.jsonObject(with: Data(slots.utf8))) as? [String: Any]
            return (object?["slots"] as? [[String: Any]] ?? []).contains {
                $0["kind"] as? String == "selection" && $0["app"] as? String == app
            }
        }
        // The slot goes while the callback still blocks, and openudid_close has not returned.
        #expect(eventually(timeout: 15) { !servesASlot() })
        _ = child.drain()
        #expect(child.takeLines() == [], "openudid_close returned before the callback did")
        #expect(child.isRunning)

        child.writeInput(Data("go on\n".utf8))
        #expect(child.nextLine(timeout: 10) == "returned")
        #expect(child.nextLine(timeout: 10) == "closed")
        #expect(child.nextLine(timeout: 10) == "destroyed 1")
        #expect(child.wait(timeout: 10) == 0, "\(child.standardError)")
    }

    /// A host with a participating handle per slot (100): each costs what the
    /// header says, one more fails at once with OPENUDID_EBUSY, not another
    /// thread, and every thread the handles had is gone after they close.
    @Test(.requiresXvfb) func aHandlePerSlotCostsWhatTheHeaderSaysAndOneMoreFailsAtOnce() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let environment = try Installation.shared.get().environment(session.environment)
        let child = try ChildProcess(try Installation.manyHandles.get(), [session.namespace, "100"], environment: environment)
        var figures: [String: [Int]] = [:]
        var extra = ""
        while let line = child.nextLine(timeout: 120), line != "done" {
            let words = line.split(separator: " ", maxSplits: 2).map(String.init)
            if words.first == "extra" { extra = line } else { figures[words[0]] = words.dropFirst().compactMap { Int($0) } }
        }
        #expect(child.wait(timeout: 30) == 0, "\(child.standardError)")
        let base = try #require(figures["base"])
        let participating = try #require(figures["participating"])
        // openudid.h: per participating handle two threads and eight descriptors,
        // one thread and two descriptors more with a callback; a few for the process.
        #expect(participating[0] - base[0] <= 50 * 3 + 50 * 2 + 4, "threads: \(base[0]) before, \(participating[0]) with 100 handles")
        #expect(participating[1] - base[1] <= 50 * 10 + 50 * 8 + 4, "descriptors: \(base[1]) before, \(participating[1]) with 100 handles")
        #expect(extra.hasPrefix("extra -8 ") && extra.contains("100 participations"), "\(extra)")
        let closed = figures["closed-us"]?.first ?? -1
        let cost = "\(participating[0] - base[0]) threads, \(participating[1] - base[1]) descriptors"
        print("100 participating handles: \(cost); closed in \(closed) µs")
    }
}
