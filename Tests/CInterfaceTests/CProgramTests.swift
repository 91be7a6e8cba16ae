import Foundation
import TestSupport
import Testing

/// A C program and a C++ program, compiled against the installed library
/// with `pkg-config --cflags --libs openudid`, take part in one session with
/// Swift's `openudid serve` on a private Xvfb, and report the same identifier.
@Suite(.requiresXvfb) struct CProgramTests {
    static let zeros = String(repeating: "0", count: 40)

    /// The compiled client for `language` ("c" or "c++").
    private func client(_ language: String) throws -> URL {
        try (language == "c" ? Installation.client : Installation.clientCxx).get()
    }

    /// Starts a client in `session` for `app` and reads its value and app lines.
    private func start(_ language: String, app: String, session: TestSession, once: Bool = false) throws
        -> (child: ChildProcess, value: String, appValue: String)
    {
        let child = try ChildProcess(
            client(language), [app, session.namespace] + (once ? ["--once"] : []),
            environment: try Installation.shared.get().environment(session.environment))
        guard let value = child.nextLine(timeout: 15), let appValue = child.nextLine(timeout: 5),
            value.hasPrefix("value "), appValue.hasPrefix("app ")
        else {
            throw HarnessError("the \(language) client printed no value: \(child.standardError)")
        }
        return (child, String(value.dropFirst(6)), String(appValue.dropFirst(4)))
    }

    @Test(arguments: ["c", "c++"])
    func aCompiledProgramGetsTheIdentifierASwiftAppServes(language: String) throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let swift = try session.serve("com.acme.notes", ["--mirror", "file"])
        let shared = try #require(swift.current)
        #expect(shared.count == 40 && shared != Self.zeros)

        // Another vendor, so no mirror of its own to help: the value comes from the Swift app.
        let (child, value, appValue) = try start(language, app: "org.example.client", session: session)
        #expect(value == shared)
        #expect(appValue.count == 36 && appValue != shared)
        #expect(child.nextLine(timeout: 10) == "change \(shared)")

        // The compiled program serves a selection slot of its own.
        let slots = try session.run(["slots", "--json"]).standardOutput
        let object = try #require(try JSONSerialization.jsonObject(with: Data(slots.utf8)) as? [String: Any])
        let entries = object["slots"] as? [[String: Any]] ?? []
        #expect(
            entries.contains {
                $0["kind"] as? String == "selection" && $0["app"] as? String == "org.example.client" && $0["id"] as? String == shared
            },
            "\(slots)")

        child.signal(SIGTERM)
        #expect(child.nextLine(timeout: 10) == "closed")
        #expect(child.wait(timeout: 10) == 0, "\(child.standardError)")
        #expect(swift.current == shared)
        swift.stop()
    }

    @Test(arguments: ["c", "c++"])
    func aSwiftAppGetsTheIdentifierACompiledProgramServes(language: String) throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let (child, value, _) = try start(language, app: "org.example.client", session: session)
        #expect(value.count == 40 && value != Self.zeros)
        #expect(child.nextLine(timeout: 10) == "change \(value)")
        #expect(try session.get("com.acme.photos", ["--mirror", "file"]) == value)
        let swift = try session.serve("org.indie.chess", ["--mirror", "file"])
        #expect(swift.current == value)
        swift.stop()
        child.signal(SIGTERM)
        #expect(child.wait(timeout: 10) == 0, "\(child.standardError)")
    }

    @Test func theCProgramOptsOutAndBackInWhileTheSwiftAppKeepsSharing() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let swift = try session.serve("com.acme.notes", ["--mirror", "file"])
        let shared = try #require(swift.current)
        let (child, value, _) = try start("c", app: "org.example.client", session: session)
        #expect(value == shared)
        #expect(child.nextLine(timeout: 10) == "change \(shared)")

        child.signal(SIGUSR1)
        #expect(child.nextLine(timeout: 10) == "change \(Self.zeros)")
        // The opt-out is published in the C program's slot; the Swift app still shares.
        #expect(
            eventually(timeout: 10) {
                let slots = (try? session.run(["slots", "--json"]).standardOutput) ?? ""
                let object = (try? JSONSerialization.jsonObject(with: Data(slots.utf8))) as? [String: Any]
                return (object?["slots"] as? [[String: Any]] ?? []).contains {
                    $0["kind"] as? String == "selection" && $0["app"] as? String == "org.example.client" && $0["optOut"] as? Bool == true
                }
            })
        #expect(try session.get("net.example.viewer", ["--mirror", "file"]) == shared)
        #expect(swift.current == shared)

        child.signal(SIGUSR1)
        #expect(child.nextLine(timeout: 10) == "change \(shared)")
        child.signal(SIGTERM)
        #expect(child.wait(timeout: 10) == 0, "\(child.standardError)")
        swift.stop()
    }

    @Test(arguments: ["c", "c++"])
    func withoutADisplayTheProgramWorksFromFiles(language: String) throws {
        let session = try TestSession(display: nil)
        let first = try start(language, app: "org.example.client", session: session, once: true)
        #expect(first.child.wait(timeout: 10) == 0)
        #expect(try session.get("com.acme.notes", ["--mirror", "file"]) == first.value)
    }
}
