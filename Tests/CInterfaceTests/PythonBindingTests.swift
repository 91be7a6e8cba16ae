import Foundation
import TestSupport
import Testing

/// The Python binding, built with `python -m build` and installed from its
/// wheel into a virtual environment (PythonPackage), loading the installed
/// libopenudid, beside Swift apps on one private X server.
@Suite(.requiresXvfb) struct PythonBindingTests {
    static let zeros = String(repeating: "0", count: 40)

    /// The interpreter of the virtual environment the wheel is installed in.
    private var python: URL { get throws { try PythonPackage.shared.get().python } }

    /// The environment of a Python app: the session's and the installed library.
    private func environment(_ session: TestSession, locate: Bool = true) throws -> [String: String] {
        var environment = try Installation.shared.get().environment(session.environment)
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        if !locate { environment["LD_LIBRARY_PATH"] = nil }
        return environment
    }

    private func python(_ code: String, session: TestSession, extra: [String: String] = [:]) throws -> CommandResult {
        var environment = try environment(session)
        environment.merge(extra) { $1 }
        return try runCommand(python, ["-c", code, session.namespace], environment: environment)
    }

    @Test func aPythonAppAgreesWithSwiftAppsAndFollowsItsOptOut() throws {
        let server = try PrivateXServer()
        let session = try TestSession(display: server.display)
        let notes = try ChildProcess(
            Tools.product("acme-notes"), ["--namespace", session.namespace, "--mirror", "file"],
            environment: session.environment)
        let shared = try #require(notes.nextLine(timeout: 15), "acme-notes printed nothing: \(notes.standardError)")
        let serve = try session.serve("org.indie.chess", ["--mirror", "file"])
        #expect(serve.current == shared)

        let client = Installation.programs.appendingPathComponent("client.py")
        let child = try ChildProcess(
            python, [client.path, "org.example.python", session.namespace],
            environment: try environment(session))
        #expect(child.nextLine(timeout: 15) == "value \(shared)", "\(child.standardError)")
        let appLine = try #require(child.nextLine(timeout: 5))
        #expect(appLine.hasPrefix("app ") && appLine.count == 40 && !appLine.contains(shared))
        #expect(child.nextLine(timeout: 5) == "origin consensus")
        #expect(child.nextLine(timeout: 10) == "change \(shared)")

        child.signal(SIGUSR1)
        #expect(child.nextLine(timeout: 10) == "change \(Self.zeros)", "\(child.standardError)")
        #expect(serve.current == shared)
        child.signal(SIGUSR1)
        #expect(child.nextLine(timeout: 10) == "change \(shared)", "\(child.standardError)")
        child.signal(SIGTERM)
        #expect(child.nextLine(timeout: 10) == "closed")
        #expect(child.wait(timeout: 10) == 0, "\(child.standardError)")
        serve.stop()
        notes.signal(SIGTERM)
        notes.wait(timeout: 10)
    }

    @Test func errorsAreExceptionsWithTheLibrarysCodeAndMessage() throws {
        let session = try TestSession(display: nil)
        let result = try python(
            """
            import sys, openudid
            def show(call):
                try:
                    call()
                    print("no error")
                except openudid.Error as error:
                    print(error.code, "|", error)
                except (TypeError, ValueError) as error:
                    print(type(error).__name__, "|", error)
            show(lambda: openudid.OpenUDID("notes"))
            show(lambda: openudid.OpenUDID("org.example.python", namespace="bad ns!"))
            show(lambda: openudid.OpenUDID("org.example.python", mirror="cloud"))
            show(lambda: openudid.remove_app("x"))
            udid = openudid.OpenUDID("org.example.python", namespace=sys.argv[1], selections=False, mirror="file")
            udid.participate()
            show(lambda: udid.participate())
            udid.close()
            show(lambda: udid.value())
            print(openudid.EAPP, openudid.ENAMESPACE, openudid.EINVAL, openudid.EBUSY)
            """, session: session)
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 7, "\(lines)")
        guard lines.count == 7 else { return }
        #expect(lines[0].hasPrefix("-2 | \"notes\" is not a valid app id"))
        #expect(lines[1].hasPrefix("-3 | \"bad ns!\" is not a valid namespace"))
        #expect(lines[2] == "ValueError | mirror must be one of 'automatic', 'secret-service', 'file', 'none', not 'cloud'")
        #expect(lines[3].hasPrefix("-2 | \"x\" is not a valid app id"))
        #expect(lines[4] == "-8 | org.example.python already participates through this OpenUDID; one participation each (close() ends it)")
        #expect(lines[5] == "-1 | the OpenUDID of org.example.python is closed; make a new one")
        #expect(lines[6] == "-2 -3 -1 -8")
        // Python terms: no C function, no pointer.
        for line in lines {
            #expect(!line.contains("openudid_") && !line.contains("NULL") && !line.contains("pointer"), "\(line)")
        }
    }

    @Test func reportRemoveAppAndTheUsersOptOutWorkFromPython() throws {
        let session = try TestSession(display: nil)
        let result = try python(
            """
            import sys, openudid
            ns = sys.argv[1]
            udid = openudid.OpenUDID("org.example.python", namespace=ns, selections=False, mirror="none")
            first = udid.value()
            report = udid.report()
            print(report["id"] == first, report["app"], report["origin"], len(udid.app_value()))
            udid.close()
            openudid.remove_app("org.example.python", namespace=ns)
            print(openudid.OpenUDID("org.example.python", namespace=ns, selections=False, mirror="none").value() != first)
            openudid.opt_out_everywhere()
            print(openudid.is_opted_out_everywhere(), openudid.OpenUDID("org.example.other", namespace=ns, selections=False).value())
            openudid.opt_in_everywhere()
            print(openudid.is_opted_out_everywhere(), openudid.library_version())
            kept = openudid.OpenUDID("org.example.python", namespace=ns, selections=False, mirror="none")
            before = kept.value()
            print(openudid.reset_everywhere(ns), openudid.reset_everywhere(ns))
            fresh = openudid.OpenUDID("org.example.python", namespace=ns, selections=False, mirror="none")
            after = fresh.value()
            print(after != before and len(after) == 40, fresh.report()["generation"])
            """, session: session)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(
            result.standardOutput == """
                True org.example.python generated 36
                True
                True \(Self.zeros)
                False 0.5.0
                1 2
                True 2

                """)
    }

    @Test func theLibraryIsFoundThroughOpenudidLibraryOrTheLoadersPath() throws {
        let session = try TestSession(display: nil)
        let code = "import openudid; print(openudid.library_version())"
        let library = try Installation.shared.get().prefix.appendingPathComponent("lib/libopenudid.so.1").path
        // Through the loader's path (LD_LIBRARY_PATH here, ldconfig's cache after a system install).
        #expect(try python(code, session: session).standardOutput == "0.5.0\n")
        // Through OPENUDID_LIBRARY alone.
        var environment = try environment(session, locate: false)
        environment["OPENUDID_LIBRARY"] = library
        environment["PKG_CONFIG_PATH"] = nil
        #expect(try runCommand(python, ["-c", code], environment: environment).standardOutput == "0.5.0\n")
        // A wrong path says what to do.
        environment["OPENUDID_LIBRARY"] = "/nonexistent/libopenudid.so.1"
        let failed = try runCommand(python, ["-c", code], environment: environment)
        #expect(failed.status != 0)
        #expect(failed.standardError.contains("cannot load libopenudid") && failed.standardError.contains("OPENUDID_LIBRARY"))
    }
}
