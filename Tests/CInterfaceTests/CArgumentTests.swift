import Foundation
import TestSupport
import Testing

/// Bad input through every function of the C interface gives an error code
/// and a message that names the problem, never a crash: Programs/bad-input.c
/// calls each function with NULL pointers, handles that are not open, invalid
/// app ids, namespaces and enum values, and buffers that are too small.
@Suite struct CArgumentTests {
    static let (einval, eapp, enamespace, enohome, estore, edisplay, erange, ebusy) = ("-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8")

    /// What each call of bad-input must give: its code, and words its message contains.
    static let expected: [String: (code: String, words: [String])] = [
        "openudid_open(app NULL)": (einval, ["app is NULL"]),
        "openudid_open(out NULL)": (einval, ["out is NULL"]),
        "openudid_open(app \"notes\")": (eapp, ["\"notes\"", "not a valid app id"]),
        "openudid_open(app \"\")": (eapp, ["empty"]),
        "openudid_open(app 299 bytes)": (eapp, ["299 bytes", "224"]),
        "openudid_open(app \"org..x\")": (eapp, ["element 2 is empty"]),
        "openudid_open(app not UTF-8)": (einval, ["not valid UTF-8"]),
        "openudid_open(vendor \"acme\")": (eapp, ["not a valid vendor"]),
        "openudid_open(out set to NULL on failure)": ("0", []),
        "openudid_options_new(out NULL)": (einval, ["out is NULL"]),
        "openudid_options_new": ("0", []),
        "openudid_options_set_display(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_display(options freed)": (einval, ["not made by openudid_options_new, or were freed"]),
        "openudid_options_set_selections(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_selections(options forged)": (einval, ["not made by openudid_options_new"]),
        "openudid_options_set_namespace(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_mirror(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_policy(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_consent_required(options NULL)": (einval, ["options is NULL"]),
        "openudid_options_set_namespace(ns \"bad ns!\")": (enamespace, ["\"bad ns!\" is not a valid namespace"]),
        "openudid_options_set_namespace(ns \"\")": (enamespace, ["not a valid namespace"]),
        "openudid_options_set_mirror(mirror 42)": (einval, ["42 is not an openudid_mirror"]),
        "openudid_options_set_policy(policy -3)": (einval, ["-3 is not an openudid_policy"]),
        "openudid_open_with(options forged)": (einval, ["not made by openudid_options_new"]),
        "openudid_open_with(app NULL)": (einval, ["app is NULL"]),
        "openudid_open_with(out NULL)": (einval, ["out is NULL"]),
        "openudid_open_with(display \":4093\")": (edisplay, ["openudid_open_with", "cannot open X display \":4093\""]),
        "openudid_open_with(out set to NULL without a display)": ("0", []),
        "openudid_open_with": ("0", []),
        "openudid_options_free(twice, NULL)": ("0", ["survived"]),
        "openudid_value(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_value(out NULL)": (einval, ["out is NULL"]),
        "openudid_value(handle forged)": (einval, ["is not open"]),
        "openudid_value_n(size 40)": (erange, ["holds 40 bytes", "needs 41"]),
        "openudid_value_n(size 0)": (erange, ["holds 0 bytes"]),
        "openudid_value_n(out NULL)": (einval, ["out is NULL"]),
        "openudid_value_n(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_app_value(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_app_value(out NULL)": (einval, ["out is NULL"]),
        "openudid_app_value_n(size 36)": (erange, ["holds 36 bytes", "needs 37"]),
        "openudid_app_value_n(out NULL)": (einval, ["out is NULL"]),
        "openudid_app_value_n(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_refresh(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_report_json(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_free(NULL)": ("0", ["survived"]),
        "openudid_participate(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_participate": ("0", []),
        "openudid_participate(twice)": (ebusy, ["already participates"]),
        "openudid_participate_async(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_participate_async(already participating)": (ebusy, ["openudid_participate_async", "already participates"]),
        "openudid_participate_full(handle NULL)": (einval, ["openudid_participate_full", "handle is NULL"]),
        "openudid_participate_full(already participating)": (ebusy, ["openudid_participate_full", "already participates"]),
        "openudid_participate_async_full(handle NULL)": (einval, ["openudid_participate_async_full", "handle is NULL"]),
        "openudid_participate_async_full(already participating)": (
            ebusy, ["openudid_participate_async_full", "already participates"]
        ),
        "openudid_open(starting)": ("0", []),
        "openudid_participate_async": ("0", []),
        "openudid_participate_async(twice)": (ebusy, ["already participates"]),
        "openudid_close(while starting)": ("0", ["survived"]),
        "openudid_opt_out(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_opt_in(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_grant_consent(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_withdraw_consent(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_has_consent(handle NULL)": (einval, ["handle is NULL"]),
        "openudid_has_consent": ("0", []),
        "openudid_value(handle closed)": (einval, ["is not open"]),
        "openudid_opt_out(handle closed)": (einval, ["is not open"]),
        "openudid_report_json(handle closed)": (einval, ["is not open"]),
        "openudid_close(twice, NULL, forged)": ("0", ["survived"]),
        "openudid_remove_app(app NULL)": (einval, ["app is NULL"]),
        "openudid_remove_app(app \"x\")": (eapp, ["\"x\" is not a valid app id"]),
        "openudid_remove_app_in(app NULL)": (einval, ["app is NULL"]),
        "openudid_remove_app_in(ns \"bad ns!\")": (enamespace, ["not a valid namespace"]),
        "openudid_reset_everywhere(ns \"bad ns!\")": (enamespace, ["not a valid namespace"]),
        "openudid_forget_everything(flags 0x6)": (einval, ["flags 0x6", "unknown flag", "OPENUDID_FORGET_DRY_RUN"]),
        "openudid_forget_everything(listing NULL on failure)": ("0", []),
        "openudid_forget_everything(listing NULL)": ("0", []),
        "openudid_strerror(12345)": ("0", ["unknown error"]),
        "openudid_strerror(OPENUDID_OK)": ("0", ["success"]),
        "openudid_strerror(-1)": ("0", ["invalid argument"]),
        "openudid_strerror(-2)": ("0", ["invalid app id"]),
        "openudid_strerror(-3)": ("0", ["invalid namespace"]),
        "openudid_strerror(-4)": ("0", ["home directory"]),
        "openudid_strerror(-5)": ("0", ["store"]),
        "openudid_strerror(-6)": ("0", ["X display cannot be opened"]),
        "openudid_strerror(-7)": ("0", ["too small"]),
        "openudid_strerror(-8)": ("0", ["already participates"]),
        "openudid_strerror(-9)": ("0", ["memory"]),
        "openudid_version": ("0", ["0.5.0"]),
        "openudid_last_error": ("0", ["\"x\" is not a valid app id"]),
        "openudid_open(no home)": (enohome, ["HOME is not set"]),
        "openudid_opt_out_everywhere(no home)": (enohome, ["HOME is not set"]),
        "openudid_opt_in_everywhere(no home)": (enohome, ["HOME is not set"]),
        "openudid_remove_app(no home)": (enohome, ["HOME is not set"]),
        "openudid_remove_app_in(no home)": (enohome, ["HOME is not set"]),
        "openudid_reset_everywhere(no home)": (enohome, ["HOME is not set"]),
        "openudid_forget_everything(no home)": (enohome, ["HOME is not set"]),
        "openudid_is_opted_out_everywhere(no home)": ("0", ["0"]),
        "openudid_open_with(no store)": ("0", []),
        "openudid_opt_out(no store)": (estore, ["cannot use", "not a directory"]),
        "openudid_opt_out_everywhere(no store)": (estore, ["cannot use", "not a directory"]),
        "openudid_reset_everywhere(no store)": (estore, ["not a directory"])
    ]

    /// Runs bad-input in `mode` with `environment` and returns its lines as call -> (code, message).
    private func run(_ mode: String, environment: [String: String]) throws -> [String: (code: String, message: String)] {
        let program = try Installation.badInput.get()
        let result = try runCommand(program, [mode], environment: try Installation.shared.get().environment(environment))
        #expect(result.status == 0, "bad-input \(mode) did not survive (\(result.status)): \(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.last == "done", "bad-input \(mode) stopped early: \(result.standardOutput)")
        var calls: [String: (code: String, message: String)] = [:]
        for line in lines.dropLast() {
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else {
                Issue.record("unreadable line: \(line)")
                continue
            }
            calls[fields[0]] = (fields[1], fields[2])
        }
        return calls
    }

    private func check(_ calls: [String: (code: String, message: String)]) {
        #expect(!calls.isEmpty)
        for (call, outcome) in calls {
            guard let expected = Self.expected[call] else {
                Issue.record("bad-input printed a call the test does not know: \(call)")
                continue
            }
            #expect(outcome.code == expected.code, "\(call) gave \(outcome.code): \(outcome.message)")
            if expected.code != "0" { #expect(!outcome.message.isEmpty, "\(call) gave no message") }
            for word in expected.words {
                #expect(outcome.message.contains(word), "\(call): \"\(outcome.message)\" does not say \(word)")
            }
        }
    }

    @Test func everyFunctionAnswersBadArgumentsWithACodeAndAMessage() throws {
        let home = try PrivateHome()
        var environment = home.environment()
        environment["DISPLAY"] = nil
        let calls = try run("arguments", environment: environment)
        check(calls)
        #expect(calls.count >= 60)
    }

    @Test func withoutAHomeEveryFunctionThatKeepsFilesSaysSo() throws {
        let calls = try run("no-home", environment: ["PATH": "/usr/bin:/bin"])
        check(calls)
        #expect(calls.count == 8)
    }

    @Test func aStoreThatCannotBeWrittenIsReportedNotHidden() throws {
        let home = try PrivateHome()
        let file = home.root.appendingPathComponent("a-file")
        try Data("not a directory".utf8).write(to: file)
        let calls = try run(
            "no-store",
            environment: [
                "PATH": "/usr/bin:/bin", "HOME": file.appendingPathComponent("home").path,
                "XDG_DATA_HOME": file.appendingPathComponent("data").path, "XDG_CONFIG_HOME": file.appendingPathComponent("config").path
            ])
        check(calls)
        #expect(calls.count == 4)
    }

    @Test func everyFunctionOfTheHeaderIsFedBadInput() throws {
        let home = try PrivateHome()
        var environment = home.environment()
        environment["DISPLAY"] = nil
        let calls = Set(try run("arguments", environment: environment).keys)
            .union(try run("no-home", environment: ["PATH": "/usr/bin:/bin"]).keys)
        let tried = Set(calls.map { String($0.prefix { $0 != "(" }) })
        let untried = Installation.declaredFunctions.filter { function in
            // openudid_strerror(12345) tries openudid_strerror; "twice, NULL" lines try openudid_close and the frees.
            !tried.contains(function)
        }
        #expect(untried == [], "bad-input never calls \(untried)")
    }
}
