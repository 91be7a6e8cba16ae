import Foundation
import TestSupport
import Testing

/// The Python binding does what the C interface does, and refuses what C
/// would misread: each test runs a script in the virtual environment the
/// wheel is installed in (PythonPackage), in a private home without a display.
@Suite struct PythonParityTests {
    static let zeros = String(repeating: "0", count: 40)

    /// Runs `code` with the namespace as its argument and returns what it printed.
    private func python(_ code: String, home: PrivateHome, namespace: String = "pyparity") throws -> String {
        var environment = try Installation.shared.get().environment(home.environment())
        environment["DISPLAY"] = nil
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let result = try runCommand(try PythonPackage.shared.get().python, ["-c", code, namespace], environment: environment)
        #expect(result.status == 0, "\(result.standardError)")
        return result.standardOutput
    }

    @Test func everyFunctionOfTheHeaderIsReachableFromPython() throws {
        let binding = try String(
            contentsOf: Installation.packageRoot.appendingPathComponent("bindings/python/openudid/__init__.py"), encoding: .utf8)
        // These reach C through their fuller forms: open_with, the _n buffers,
        // the _full participations, remove_app_in.
        let throughAnother: Set = [
            "openudid_open", "openudid_value", "openudid_app_value", "openudid_participate", "openudid_participate_async",
            "openudid_remove_app"
        ]
        let unreached = Installation.declaredFunctions.filter { !throughAnother.contains($0) && !binding.contains("\"\($0)\"") }
        #expect(unreached == [], "the Python binding never calls \(unreached)")
    }

    @Test func consentAsyncParticipationForgettingAndResetWorkFromPython() throws {
        let home = try PrivateHome()
        let output = try python(
            """
            import queue, sys, openudid
            ns = sys.argv[1]
            udid = openudid.OpenUDID("org.example.consent", namespace=ns, selections=False, mirror="file", consent_required=True)
            print("before", udid.has_consent(), udid.value())
            udid.grant_consent()
            first = udid.value(refresh=True)
            print("granted", udid.has_consent(), first != "0" * 40)
            changes = queue.Queue()
            udid.participate_async(changes.put)
            print("async", changes.get(timeout=20) == first)
            udid.withdraw_consent()
            print("withdrawn", udid.has_consent(), changes.get(timeout=20))
            udid.close()
            print("opted out everywhere", openudid.is_opted_out_everywhere())
            kept = openudid.OpenUDID("org.example.kept", selections=False, mirror="file")
            kept_value = kept.value()
            generation = openudid.reset_everywhere()
            print("reset", generation, kept.value(refresh=True) != kept_value)
            listed = openudid.forget_everything(dry_run=True)
            again = openudid.forget_everything(dry_run=True)
            print("dry run", listed["dryRun"], listed == again, any("org.example.kept" in f for f in listed["files"]))
            gone = openudid.forget_everything()
            print("forgot", gone["dryRun"], gone["files"] == listed["files"], openudid.forget_everything(dry_run=True)["files"])
            """, home: home)
        #expect(
            output == """
                before False \(Self.zeros)
                granted True True
                async True
                withdrawn False \(Self.zeros)
                opted out everywhere False
                reset 1 True
                dry run True True True
                forgot False True []

                """)
    }

    @Test func badArgumentsAreRefusedWithClearErrorsAndChangeNothing() throws {
        let home = try PrivateHome()
        let output = try python(
            """
            import os, sys, openudid
            def show(call):
                try:
                    call()
                    print("no error")
                except (TypeError, ValueError) as error:
                    print(type(error).__name__, "|", error)
            show(lambda: openudid.OpenUDID("com.victim\\x00.attacker.notes", selections=False))
            show(lambda: openudid.remove_app("com.victim\\x00.attacker.notes"))
            show(lambda: openudid.reset_everywhere("ns\\x00evil"))
            show(lambda: openudid.OpenUDID("org.example.bad", selections=False, consent_required="yes"))
            show(lambda: openudid.forget_everything(dry_run=1))
            show(lambda: openudid.OpenUDID("org.example.bad", selections=False, mirror="keyring"))
            show(lambda: openudid.OpenUDID("org.example.bad", selections=False, policy=1))
            show(lambda: openudid.remove_app(None))
            udid = openudid.OpenUDID("org.example.bad", selections=False, mirror="file")
            value = udid.value()
            show(lambda: udid.participate("not a function"))
            show(lambda: udid.participate_async(42))
            show(lambda: udid.value(refresh="yes"))
            show(lambda: udid.value(refresh=None))
            # Nothing changed: the handle participates, the files and the generation are there.
            udid.participate()
            print("participates", udid.value() == value)
            udid.close()
            data = os.environ["XDG_DATA_HOME"]
            print("victim", os.path.exists(os.path.join(data, "com.victim")), os.path.exists(os.path.join(data, "openudid", "reset")))
            print("kept", any("org.example.bad" in f for f in openudid.forget_everything(dry_run=True)["files"]))
            """, home: home)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.count == 15, "\(lines)")
        guard lines.count == 15 else { return }
        #expect(lines[0].hasPrefix("ValueError | app 'com.victim\\x00.attacker.notes' contains a NUL character (at index 10)"))
        #expect(lines[1].hasPrefix("ValueError | app 'com.victim\\x00.attacker.notes' contains a NUL character"))
        #expect(lines[2].hasPrefix("ValueError | namespace 'ns\\x00evil' contains a NUL character"))
        #expect(lines[3] == "TypeError | consent_required must be True or False, not 'yes'")
        #expect(lines[4] == "TypeError | dry_run must be True or False, not 1")
        #expect(lines[5] == "ValueError | mirror must be one of 'automatic', 'secret-service', 'file', 'none', not 'keyring'")
        #expect(lines[6] == "TypeError | policy must be a str, one of 'follow', 'keep'; not 1")
        #expect(lines[7] == "TypeError | app must be a str such as 'org.example.app', not None")
        #expect(lines[8].hasPrefix("TypeError | callback must be callable") && lines[8].contains("'not a function'"))
        #expect(lines[9].hasPrefix("TypeError | callback must be callable") && lines[9].contains("42"))
        #expect(lines[10] == "TypeError | refresh must be True or False, not 'yes'")
        #expect(lines[11] == "TypeError | refresh must be True or False, not None")
        #expect(lines[12] == "participates True")
        #expect(lines[13] == "victim False False")
        #expect(lines[14] == "kept True")
    }

    /// What help() says of the vendor is what the library does under a hosting prefix.
    @Test func theDocstringsVendorRuleIsTheLibrarys() throws {
        let output = try python(
            """
            import sys, openudid
            udid = openudid.OpenUDID("io.github.alice.App", namespace=sys.argv[1], selections=False, mirror="none")
            print(udid.report()["vendor"], "``io.github.alice`` for ``io.github.alice.App``" in openudid.OpenUDID.__doc__)
            """, home: try PrivateHome())
        #expect(output == "io.github.alice True\n")
    }

    @Test func errorCodesAreTheHeadersAndNamedAsInIt() throws {
        let home = try PrivateHome()
        let output = try python(
            """
            import openudid
            try:
                openudid.OpenUDID("org.example.bad", display=":4093")
            except openudid.Error as error:
                print(error.code == openudid.EDISPLAY, error.name, str(error).startswith("cannot open X display \\":4093\\""))
            print(openudid.VERSION == openudid.__version__, openudid.library_version())
            """, home: home)
        // The library reports the version the header declares, which its docstring does not pin.
        let header = try String(contentsOf: Installation.packageRoot.appendingPathComponent("include/openudid.h"), encoding: .utf8)
        let declared = try #require(
            header.split(separator: "\n").first { $0.hasPrefix("#define OPENUDID_VERSION \"") }?.split(separator: "\"").dropFirst().first)
        #expect(output == "True OPENUDID_EDISPLAY True\nTrue \(declared)\n")
        // The binding's table is what generate_constants.py makes of the header now.
        let check = try runCommand(
            try Tools.find("python3"),
            [Installation.packageRoot.appendingPathComponent("bindings/python/generate_constants.py").path, "--check"],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"])
        #expect(check.status == 0, "\(check.standardError)")
    }
}
