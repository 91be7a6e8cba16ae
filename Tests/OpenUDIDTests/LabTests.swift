import Foundation
import TestSupport
import Testing

/// What `openudid-lab --json` says, as far as these tests read it.
struct LabResult: Decodable, Sendable {
    struct Scenario: Decodable, Sendable {
        let key: String
        let steps: [Step]
    }
    struct Step: Decodable, Sendable {
        let key: String
        let columns: [String: Column]
    }
    struct Column: Decodable, Sendable {
        let outcome: String
        let apps: [String: Look]
    }
    struct Look: Decodable, Sendable {
        let identifier: String
        let outcome: String
    }

    let mirrorStore: String
    let seconds: Double?
    let scenarios: [Scenario]

    /// What `app` saw in `column` at `step` of `scenario`; nil if it was not running or the step is missing.
    func look(_ scenario: String, _ step: String, _ column: String, _ app: String) -> Look? {
        scenarios.first { $0.key == scenario }?.steps.first { $0.key == step }?.columns[column]?.apps[app]
    }

    /// What every app that looked saw in `column` at `step` of `scenario`, by app id.
    func looks(_ scenario: String, _ step: String, _ column: String) -> [String: Look] {
        scenarios.first { $0.key == scenario }?.steps.first { $0.key == step }?.columns[column]?.apps ?? [:]
    }

    /// How many different identifiers the apps that looked saw in `column` at `step` of `scenario`.
    func distinct(_ scenario: String, _ step: String, _ column: String) -> Int {
        Set(looks(scenario, step, column).values.map(\.identifier)).count
    }

    /// Every look in `column`, across every scenario and step.
    func looks(in column: String) -> [(scenario: String, step: String, app: String, look: Look)] {
        scenarios.flatMap { scenario in
            scenario.steps.flatMap { step in
                (step.columns[column]?.apps ?? [:]).sorted { $0.key < $1.key }.map { (scenario.key, step.key, $0.key, $0.value) }
            }
        }
    }
}

/// One quick run of the lab, shared by the tests below: real `openudid` processes
/// on the lab's own private X server, keyring and homes. It runs as a person
/// runs it, without `--json`: what it prints is the terminal's summary, and the
/// result is read from the JSON file it wrote (the very data `--json` prints).
enum QuickLab {
    struct Run: Sendable {
        let result: LabResult
        /// What the run printed on standard output.
        let summary: String
        /// Where it wrote its files.
        let directory: String
        /// Every file it wrote, by name.
        let files: [String: Data]

        var table: String { String(decoding: files["lab.md"] ?? Data(), as: UTF8.self) }
        var picture: String { String(decoding: files["lab.svg"] ?? Data(), as: UTF8.self) }
        var savedJSON: Data { files["lab.json"] ?? Data() }
        /// The transitions the population took from this run (`transitions.json`).
        var transitions: Data { files["transitions.json"] ?? Data() }
    }

    static let run: Result<Run, HarnessError> = {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("openudid-lab-test-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: output) }
        do {
            let lab = try runCommand(
                Tools.product("openudid-lab"), ["--quick", "--out", output.path],
                environment: ProcessInfo.processInfo.environment, timeout: 600)
            guard lab.status == 0 else {
                return .failure(HarnessError("openudid-lab failed (status \(lab.status)): \(lab.standardError)"))
            }
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: output.path) {
                files[name] = try Data(contentsOf: output.appendingPathComponent(name))
            }
            return .success(
                Run(
                    result: try JSONDecoder().decode(LabResult.self, from: files["lab.json"] ?? Data()),
                    summary: lab.standardOutput, directory: output.path, files: files))
        } catch let error as HarnessError {
            return .failure(error)
        } catch {
            return .failure(HarnessError("cannot read what the lab wrote: \(error)"))
        }
    }()

    static func get() throws -> LabResult { try run.get().result }
}

@Suite struct LabTests {
    let notes = "com.acme.notes", photos = "com.acme.photos", chess = "org.indie.chess"

    @Test func withFileSlotsTheNextAppAfterEveryAppIsRemovedGetsANewIdentifier() throws {
        let lab = try QuickLab.get()
        let before = try #require(lab.look("break", "apps-start", "selection-file", notes))
        let after = try #require(lab.look("break", "all-removed", "selection-file", notes))
        #expect(after.outcome == "new")
        #expect(after.identifier != before.identifier)
        #expect(after.identifier.count == 40)
        // The apps that come back follow the new identifier, not the old one.
        let photosBack = try #require(lab.look("break", "others-return", "selection-file", photos))
        #expect(photosBack.identifier == after.identifier)
    }

    @Test func theVendorMirrorKeepsTheIdentifierForTheSameVendorOnly() throws {
        let lab = try QuickLab.get()
        // The break does not break it: notes comes back with its identifier.
        let before = try #require(lab.look("break", "apps-start", "vendor-mirror", notes))
        let after = try #require(lab.look("break", "all-removed", "vendor-mirror", notes))
        #expect(after.outcome == "same")
        #expect(after.identifier == before.identifier)

        // Notes alone, then removed: another vendor's app starts from nothing,
        // and notes' vendor's new app gets notes' identifier back.
        let original = try #require(lab.look("mirror", "notes-starts", "vendor-mirror", notes))
        let otherVendor = try #require(lab.look("mirror", "other-vendor", "vendor-mirror", chess))
        #expect(otherVendor.outcome == "new")
        #expect(otherVendor.identifier != original.identifier)
        let sameVendor = try #require(lab.look("mirror", "same-vendor", "vendor-mirror", photos))
        #expect(sameVendor.outcome == "same")
        #expect(sameVendor.identifier == original.identifier)

        // Without the mirror the same app gets a new one.
        let withoutMirror = try #require(lab.look("mirror", "same-vendor", "selection-file", photos))
        #expect(withoutMirror.outcome == "new")
        #expect(withoutMirror.identifier != lab.look("mirror", "notes-starts", "selection-file", notes)?.identifier)
    }

    @Test func aFreshUUIDPerCallIsNewAtEveryStep() throws {
        let lab = try QuickLab.get()
        let looks = lab.looks(in: "fresh-uuid")
        #expect(looks.count >= 20)
        for look in looks {
            #expect(look.look.outcome == "new", "\(look.scenario)/\(look.step)/\(look.app)")
        }
        #expect(Set(looks.map(\.look.identifier)).count == looks.count)
    }

    @Test func theAppScopedMachineIdentifierSurvivesReinstallAndRebootButNotADeviceReset() throws {
        let lab = try QuickLab.get()
        for step in ["app-restart", "reboot", "reinstall"] {
            for app in [notes, photos, chess] {
                let look = try #require(lab.look("everyday", step, "machine-scoped", app))
                #expect(look.outcome == "same", "everyday/\(step)/\(app)")
            }
        }
        #expect(lab.look("break", "all-removed", "machine-scoped", notes)?.outcome == "same")
        for app in [notes, photos, chess] {
            let before = try #require(lab.look("reset", "apps-start", "machine-scoped", app))
            let after = try #require(lab.look("reset", "reset", "machine-scoped", app))
            #expect(after.outcome == "new")
            #expect(after.identifier != before.identifier)
            // systemd's construction gives a version-4 UUID.
            #expect(after.identifier.count == 36 && after.identifier.dropFirst(14).first == "4")
        }
        // Per app, not per machine: no two apps share one.
        let everyApp = [notes, photos, chess].compactMap { lab.look("reset", "reset", "machine-scoped", $0)?.identifier }
        #expect(Set(everyApp).count == 3)
    }

    @Test func aSelectionAloneDiesWithItsProcessesAndTheXServer() throws {
        let lab = try QuickLab.get()
        let first = try #require(lab.look("everyday", "others-start", "selection", chess))
        #expect(first.outcome == "same")
        #expect(lab.look("everyday", "app-restart", "selection", notes)?.outcome == "same")
        #expect(lab.look("everyday", "second-run", "selection", notes)?.outcome == "new")
        #expect(lab.look("everyday", "reboot", "selection", notes)?.outcome == "new")
        #expect(lab.look("everyday", "reboot", "selection-file", notes)?.outcome == "same")
    }

    @Test func theLabWritesTheTableThePictureAndTheJSON() throws {
        let run = try QuickLab.run.get()
        #expect(["secret-service", "file"].contains(run.result.mirrorStore))
        for heading in [
            "hardware id", "MAC address", "MAC, randomised", "fresh UUID per call", "per-app cached UUID", "advertising id",
            "per-vendor id", "push-token hash", "selection alone", "selection + file slot", "+ vendor mirror", "app-scoped machine id"
        ] {
            #expect(run.table.contains(heading))
        }
        // The break's row, column by column: what the system holds for the machine and the user stays, the
        // per-vendor id goes with the vendor's last app, and of the app's own only the mirror and the machine id remain.
        #expect(
            run.table.contains(
                "| all removed, then notes reinstalled | same | same | same | **new** | **new** | same | **new** | *unavailable* "
                    + "| **new** | **new** | same | same |"))
        // The four events, as their own table: a header of exactly those events, one row per column.
        #expect(run.table.contains("| | first run | second run | uninstall and reinstall | reboot |"))
        #expect(run.table.contains("| hardware id <sub>UDID-style, the banned one</sub> | **new** | same | same | same |"))
        #expect(run.table.contains("| MAC, randomised <sub>iOS 7 on: no longer the device's</sub> | **new** | same | same | **new** |"))
        #expect(run.table.contains("| per-vendor id <sub>IDFV-style, held by the system</sub> | **new** | same | **new** | same |"))
        #expect(!run.table.contains("took"), "the table goes into tracked files: no duration")
        #expect((run.result.seconds ?? 0) > 0)
        #expect(run.summary.contains(" openudid processes in "), "the terminal says how long it took: \(run.summary)")
        #expect(run.picture.contains("unavailable"))
        #expect(run.picture.hasPrefix("<svg"))
        #expect(run.picture.contains("all removed: notes gets a new id"))
        #expect(run.picture.contains("photos gets notes' id"))
    }

    @Test func theTerminalGetsAShortSummaryThatNamesTheFilesAndWhatBroke() throws {
        let run = try QuickLab.run.get()
        let lines = run.summary.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(!lines.isEmpty && lines.count <= 15, "\(run.summary)")
        for line in lines { #expect(line.count <= 100, "\(line.count) characters: \(line)") }
        #expect(!run.summary.contains("|---"), "a table was printed")
        for file in ["lab.md", "lab.svg", "lab.json"] { #expect(run.summary.contains(run.directory + "/" + file), "\(file)") }
        #expect(run.summary.contains("\(run.result.scenarios.count) scenarios"))
        // The headline: where each shared approach broke. The file slot loses the
        // identifier when every app is removed; the vendor mirror does not.
        func entry(_ column: String) -> String? {
            guard let start = lines.firstIndex(where: { $0.hasPrefix("  \(column) (") }) else { return nil }
            return lines[start...].prefix { $0 == lines[start] || $0.hasPrefix("      ") }.joined(separator: " ")
        }
        let fileSlot = try #require(entry("selection + file slot"), "\(run.summary)")
        #expect(fileSlot.contains("Every app removed"))
        let mirror = try #require(entry("+ vendor mirror"), "\(run.summary)")
        #expect(!mirror.contains("Every app removed"))
        // A new identifier after the user reset it is what the user asked for.
        #expect(!mirror.contains("The user resets"), "\(mirror)")
    }

    /// scripts/lab writes into docs/lab and the README, which a checkout tracks:
    /// every file it writes there but lab.json (which git ignores) carries nothing
    /// of one run, no duration, no date, no path, so a run changes those files only
    /// when an outcome changes, and `git status` stays clean.
    @Test func theTrackedFilesCarryNothingOfTheRun() throws {
        let run = try QuickLab.run.get()
        #expect(
            Set(run.files.keys)
                == ["lab.md", "lab.svg", "lab.json", "transitions.json", "population.md", "population.svg", "population-sweep.svg"])
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        for (name, data) in run.files where name != "lab.json" {
            let text = String(decoding: data, as: UTF8.self)
            #expect(text.range(of: #"[0-9] s\b"#, options: .regularExpression) == nil, "\(name) names a duration")
            #expect(!text.contains("\(year)-") && !text.contains("\(year - 1)-"), "\(name) names a date")
            #expect(!text.contains(run.directory), "\(name) names where it was written")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        #expect(try String(contentsOf: root.appendingPathComponent(".gitignore"), encoding: .utf8).contains("/docs/lab/lab.json\n"))
    }

    @Test func theFourEventsAreExactlyTheClassicOnes() throws {
        let lab = try QuickLab.get()
        let seed = try #require(lab.scenarios.first { $0.key == "seed" })
        #expect(seed.steps.map(\.key) == ["first-run", "second-run", "reinstall", "reboot"])
        // One app, and every column measured at every event.
        for step in seed.steps {
            #expect(step.columns.count == 12, "\(step.key)")
            for (column, cells) in step.columns {
                #expect(Array(cells.apps.keys) == [notes], "\(step.key)/\(column)")
            }
        }
    }
}

/// The cells that define each scheme the lab adds to the story: the hardware and
/// network identifiers, the system's advertising and vendor identifiers, the push
/// token, and the selections in sandboxes and sessions without an X server.
@Suite struct LabSchemeTests {
    let notes = "com.acme.notes", photos = "com.acme.photos", chess = "org.indie.chess"
    let groupOne = ["com.acme.notes", "com.acme.photos", "org.indie.chess"]

    @Test func theHardwareIdentifierSurvivesErasingTheHomeAndIsTheSameForEveryApp() throws {
        let lab = try QuickLab.get()
        let before = lab.looks("reset", "apps-start", "hardware-id")
        let erased = lab.looks("reset", "erase", "hardware-id")
        #expect(before.count == 3 && erased.count == 3)
        #expect(lab.distinct("reset", "apps-start", "hardware-id") == 1)
        for app in groupOne {
            let look = try #require(erased[app])
            #expect(look.outcome == "same", "\(app)")
            #expect(look.identifier == before[app]?.identifier)
            // The machine id read raw: 32 hex digits, as /etc/machine-id holds them.
            #expect(look.identifier.count == 32 && look.identifier.allSatisfy(\.isHexDigit))
        }
        // The erase took the app's own and the user's values with it.
        #expect(lab.look("reset", "erase", "cached-uuid", notes)?.outcome == "new")
        #expect(lab.look("reset", "erase", "advertising-id", notes)?.outcome == "new")
        #expect(lab.look("reset", "erase", "vendor-id", notes)?.outcome == "new")
        #expect(lab.look("reset", "erase", "selection-file", notes)?.outcome == "new")
        // A system installed afresh writes a new machine id; the burned-in MAC address outlives even that.
        #expect(lab.look("reset", "reset", "hardware-id", notes)?.outcome == "new")
        #expect(lab.look("reset", "reset", "mac-address", notes)?.outcome == "same")
        let address = try #require(lab.look("reset", "apps-start", "mac-address", notes))
        #expect(lab.look("reset", "reset", "mac-address", notes)?.identifier == address.identifier)
    }

    @Test func aRandomisedMACAddressChangesAtEveryBootAndAPermanentOneNever() throws {
        let lab = try QuickLab.get()
        let permanent = try #require(lab.look("everyday", "reboot", "mac-address", notes))
        let randomised = try #require(lab.look("everyday", "reboot", "mac-randomised", notes))
        #expect(permanent.outcome == "same")
        #expect(randomised.outcome == "new")
        #expect(lab.look("everyday", "second-run", "mac-randomised", notes)?.outcome == "same")
        // Unicast both; the randomised one locally administered, the burned-in one not.
        let permanentFirst = try #require(UInt8(permanent.identifier.prefix(2), radix: 16))
        let randomisedFirst = try #require(UInt8(randomised.identifier.prefix(2), radix: 16))
        #expect(permanentFirst & 0b11 == 0)
        #expect(randomisedFirst & 0b11 == 0b10)
    }

    @Test func thePerVendorIdentifierIsNewOnceTheVendorsLastAppIsRemoved() throws {
        let lab = try QuickLab.get()
        // One value per vendor: notes and photos share one, chess has another.
        let start = lab.looks("everyday", "others-start", "vendor-id")
        #expect(start[notes]?.identifier == start[photos]?.identifier)
        #expect(start[notes]?.identifier != start[chess]?.identifier)
        // Kept while notes, of the same vendor, stays installed.
        let reinstalled = try #require(lab.look("everyday", "reinstall", "vendor-id", photos))
        #expect(reinstalled.outcome == "same")
        #expect(reinstalled.identifier == lab.look("everyday", "reinstall", "vendor-id", notes)?.identifier)
        // Notes was its vendor's last app: photos, of the same vendor, gets a new one,
        // where the keychain-style mirror gives it notes' back.
        let original = try #require(lab.look("mirror", "notes-starts", "vendor-id", notes))
        let after = try #require(lab.look("mirror", "same-vendor", "vendor-id", photos))
        #expect(after.outcome == "new")
        #expect(after.identifier != original.identifier)
        if lab.mirrorStore == "secret-service" {
            #expect(lab.look("mirror", "same-vendor", "vendor-mirror", photos)?.outcome == "same")
        }
        // The app-scoped machine id, derived from the machine alone, does not care.
        #expect(lab.look("break", "all-removed", "machine-scoped", notes)?.outcome == "same")
        #expect(lab.look("break", "all-removed", "vendor-id", notes)?.outcome == "new")
    }

    @Test func theAdvertisingIdentifierIsNewAfterTheUserResetsItAndZeroWhileTrackingIsLimited() throws {
        let lab = try QuickLab.get()
        let before = lab.looks("user-resets", "apps-start", "advertising-id")
        let reset = lab.looks("user-resets", "ad-reset", "advertising-id")
        #expect(before.count == 3 && reset.count == 3)
        // One per user: every app sees the same one, before and after.
        #expect(lab.distinct("user-resets", "apps-start", "advertising-id") == 1)
        #expect(lab.distinct("user-resets", "ad-reset", "advertising-id") == 1)
        for app in groupOne {
            #expect(reset[app]?.outcome == "new", "\(app)")
            #expect(reset[app]?.identifier != before[app]?.identifier)
            // Nothing else moved: the reset is the advertising identifier's alone.
            #expect(lab.look("user-resets", "ad-reset", "hardware-id", app)?.outcome == "same")
            #expect(lab.look("user-resets", "ad-reset", "selection-file", app)?.outcome == "same")
        }
        for app in groupOne {
            let limited = try #require(lab.look("user-resets", "limit-tracking", "advertising-id", app))
            #expect(limited.outcome == "zero")
            #expect(limited.identifier == "00000000-0000-0000-0000-000000000000")
            // Limiting ad tracking is not opting out of OpenUDID.
            #expect(lab.look("user-resets", "limit-tracking", "selection-file", app)?.outcome == "same")
            // Opting out of OpenUDID for every app zeroes its columns, and not the hardware id.
            #expect(lab.look("user-resets", "opt-out-all", "selection-file", app)?.outcome == "zero")
            #expect(lab.look("user-resets", "opt-out-all", "vendor-mirror", app)?.outcome == "zero")
            #expect(lab.look("user-resets", "opt-out-all", "hardware-id", app)?.outcome == "same")
        }
    }

    @Test func theUsersResetGivesEveryOpenUDIDColumnOneNewIdentifierAndMovesNothingElse() throws {
        let lab = try QuickLab.get()
        let columns = ["selection", "selection-file", "vendor-mirror"]
        for column in columns {
            // The running apps follow the reset and agree on one new identifier.
            #expect(lab.distinct("user-resets", "openudid-reset", column) == 1, "\(column)")
            for app in groupOne {
                let before = try #require(lab.look("user-resets", "limit-tracking", column, app))
                let after = try #require(lab.look("user-resets", "openudid-reset", column, app))
                #expect(after.outcome == "new", "\(column) \(app)")
                #expect(after.identifier != before.identifier)
            }
        }
        for app in groupOne {
            #expect(lab.look("user-resets", "openudid-reset", "advertising-id", app)?.outcome == "zero", "tracking stays limited")
            #expect(lab.look("user-resets", "openudid-reset", "hardware-id", app)?.outcome == "same")
            // The user's opt-out reaches an app that keeps no files as well.
            #expect(lab.look("user-resets", "opt-out-all", "selection", app)?.outcome == "zero")
        }
    }

    @Test func thePushTokenIsUnavailableOffline() throws {
        let lab = try QuickLab.get()
        let looks = lab.looks(in: "push-token").filter { $0.look.outcome != "zero" }
        #expect(looks.count >= 20)
        for look in looks {
            #expect(look.look.outcome == "unavailable", "\(look.scenario)/\(look.step)/\(look.app)")
            #expect(look.look.identifier == "unavailable")
        }
    }

    @Test func theSelectionsShareInASandboxWithTheX11SocketAndBreakWithoutIt() throws {
        let lab = try QuickLab.get()
        // With the X11 socket, sandboxed apps still meet on the display.
        #expect(lab.distinct("sandbox", "with-x11", "selection") == 1)
        #expect(lab.distinct("sandbox", "with-x11", "selection-file") == 1)
        // Without it the selections are gone: each app makes its own.
        #expect(lab.looks("sandbox", "without-x11", "selection").count == 3)
        #expect(lab.distinct("sandbox", "without-x11", "selection") == 3)
        // Each app's own file slot still holds what it had ...
        #expect(lab.distinct("sandbox", "without-x11", "selection-file") == 1)
        // ... but an app installed afresh finds no one: its data directory is its own.
        let newcomer = try #require(lab.look("sandbox", "reinstall", "selection-file", photos))
        #expect(newcomer.outcome == "new")
        #expect(newcomer.identifier != lab.look("sandbox", "reinstall", "selection-file", notes)?.identifier)
        // What the system holds reaches the sandbox as it reaches anyone.
        #expect(lab.distinct("sandbox", "reinstall", "hardware-id") == 1)
        #expect(lab.look("sandbox", "reinstall", "vendor-id", photos)?.outcome == "same")
        // The Secret Service is the user's, not the sandbox's: the mirror brings the vendor's value back.
        if lab.mirrorStore == "secret-service" {
            #expect(lab.look("sandbox", "reinstall", "vendor-mirror", photos)?.outcome == "same")
        } else {
            #expect(lab.look("sandbox", "reinstall", "vendor-mirror", photos)?.outcome == "new")
        }
        // The user's opt-out lives in the user's config directory, which a sandbox does not see:
        // the sandboxed apps keep reporting their identifier, where the same apps outside report zeros.
        for app in groupOne {
            #expect(lab.look("sandbox", "opt-out-all", "selection-file", app)?.outcome == "same", "\(app)")
            #expect(lab.look("user-resets", "opt-out-all", "selection-file", app)?.outcome == "zero", "\(app)")
        }
    }

    @Test func withoutAnXServerTheSelectionsAreGoneAndTheFilesStillShare() throws {
        let lab = try QuickLab.get()
        for step in ["first-run", "second-run"] {
            let selections = lab.looks("no-x-server", step, "selection")
            #expect(selections.count == 3)
            #expect(Set(selections.values.map(\.identifier)).count == 3, "\(step)")
            #expect(selections.values.allSatisfy { $0.outcome == "new" }, "\(step)")
        }
        // The apps start one after another, in one home: the file slots carry the identifier.
        #expect(lab.distinct("no-x-server", "first-run", "selection-file") == 1)
        #expect(lab.look("no-x-server", "second-run", "selection-file", notes)?.outcome == "same")
        // And they break as OpenUDID did, with the mirror surviving it.
        #expect(lab.look("no-x-server", "all-removed", "selection-file", notes)?.outcome == "new")
        #expect(lab.look("no-x-server", "all-removed", "vendor-mirror", notes)?.outcome == "same")
    }

    @Test func noValueOfTheRealMachineIsShown() throws {
        let run = try QuickLab.run.get()
        let json = String(decoding: run.savedJSON, as: UTF8.self)
        // Read only to check that the lab's output does not hold them; never printed.
        var hostValues: [String] = []
        if let machineID = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) {
            hostValues.append(machineID.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        for interface in (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/net")) ?? [] {
            if let address = try? String(contentsOfFile: "/sys/class/net/\(interface)/address", encoding: .utf8) {
                let value = address.trimmingCharacters(in: .whitespacesAndNewlines)
                if value.count == 17, value != "00:00:00:00:00:00" { hostValues.append(value) }
            }
        }
        let leaked = hostValues.filter { !$0.isEmpty && (json.contains($0) || run.table.contains($0)) }.count
        #expect(leaked == 0)
        // The lab's own values are there instead: a machine id and addresses it made up.
        #expect(!run.result.looks(in: "hardware-id").isEmpty)
        #expect(!run.result.looks(in: "mac-address").isEmpty)
    }
}
