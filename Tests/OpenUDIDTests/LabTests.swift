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
    let scenarios: [Scenario]

    /// What `app` saw in `column` at `step` of `scenario`; nil if it was not running or the step is missing.
    func look(_ scenario: String, _ step: String, _ column: String, _ app: String) -> Look? {
        scenarios.first { $0.key == scenario }?.steps.first { $0.key == step }?.columns[column]?.apps[app]
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
/// on the lab's own private X server, keyring and homes.
enum QuickLab {
    struct Run: Sendable {
        let result: LabResult
        let table: String
        let picture: String
        let savedJSON: Data
    }

    static let run: Result<Run, HarnessError> = {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("openudid-lab-test-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: output) }
        do {
            let lab = try runCommand(
                Tools.product("openudid-lab"), ["--quick", "--json", "--out", output.path],
                environment: ProcessInfo.processInfo.environment, timeout: 120)
            guard lab.status == 0 else {
                return .failure(HarnessError("openudid-lab failed (status \(lab.status)): \(lab.standardError)"))
            }
            return .success(
                Run(
                    result: try JSONDecoder().decode(LabResult.self, from: Data(lab.standardOutput.utf8)),
                    table: try String(contentsOf: output.appendingPathComponent("lab.md"), encoding: .utf8),
                    picture: try String(contentsOf: output.appendingPathComponent("lab.svg"), encoding: .utf8),
                    savedJSON: try Data(contentsOf: output.appendingPathComponent("lab.json"))))
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
            "fresh UUID per call", "per-app cached UUID", "selection alone", "selection + file slot",
            "+ vendor mirror", "app-scoped machine id"
        ] {
            #expect(run.table.contains(heading))
        }
        // The break's row, column by column: only the mirror and the machine id keep the identifier.
        #expect(run.table.contains("| all removed, then notes reinstalled | **new** | **new** | **new** | **new** | same | same |"))
        #expect(run.picture.hasPrefix("<svg"))
        #expect(run.picture.contains("all removed: notes gets a new id"))
        #expect(run.picture.contains("photos gets notes' id"))
        let saved = try JSONDecoder().decode(LabResult.self, from: run.savedJSON)
        #expect(
            saved.look("break", "all-removed", "selection-file", notes)?.identifier
                == run.result.look("break", "all-removed", "selection-file", notes)?.identifier)
    }
}
