import Foundation
import TestSupport
import Testing

/// `openudid-lab population`, run as a person runs it, and the transitions it takes from the lab.
enum PopulationRun {
    /// The transitions scripts/lab measured and the population reads by default.
    static let committedTransitions = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/lab/transitions.json")

    /// Every rate set to 0: a test turns on the ones it needs.
    static let still = [
        "install", "remove", "reinstall", "restart", "relaunch", "reboot", "reset", "opt-out", "keyring-lost", "new-machine",
        "sandboxed"
    ].flatMap { ["--\($0)", "0"] }

    /// What `--json` prints, as far as these tests read it.
    struct Figures: Decodable, Equatable {
        struct Shares: Decodable, Equatable {
            let stable: [String: Double]
            let linkable: [String: Double]
        }
        let users: Int
        let schemes: [String: Shares]

        func stable(_ scheme: String, day: Int) throws -> Double { try #require(schemes[scheme]?.stable["day\(day)"], "\(scheme)") }
        func linkable(_ scheme: String, day: Int) throws -> Double {
            try #require(schemes[scheme]?.linkable["day\(day)"], "\(scheme)")
        }
    }

    /// Runs `openudid-lab population` with `arguments`.
    static func run(_ arguments: [String]) throws -> CommandResult {
        try runCommand(
            Tools.product("openudid-lab"), ["population", "--transitions", committedTransitions.path] + arguments,
            environment: ProcessInfo.processInfo.environment, timeout: 600)
    }

    /// Runs it with `--json` and reads the figures.
    static func figures(_ arguments: [String]) throws -> Figures {
        let result = try run(arguments + ["--json"])
        guard result.status == 0 else { throw HarnessError("openudid-lab population failed: \(result.standardError)") }
        return try JSONDecoder().decode(Figures.self, from: Data(result.standardOutput.utf8))
    }
}

/// The transitions as `transitions.json` holds them.
private struct Transitions: Decodable {
    struct Cell: Decodable {
        let step: String
        let actor: String
        let bystander: String?
    }
    struct Pair: Decodable, Equatable {
        let actor: String
        let bystander: String
    }
    let mirrorStore: String
    let scenarios: [String: String]
    let cells: [String: Cell]
    let effects: [String: [String: [String: Pair]]]

    init(_ data: Data) throws { self = try JSONDecoder().decode(Transitions.self, from: data) }

    func effect(_ environment: String, _ situation: String, _ scheme: String) throws -> Pair {
        try #require(effects[environment]?[situation]?[scheme], "\(environment)/\(situation)/\(scheme)")
    }
}

@Suite struct PopulationTests {
    /// The lab's judgement of a look that each effect stands for.
    static func outcome(of effect: String) -> String {
        switch effect {
        case "fresh", "fresh-shared": "new"
        case "zero", "unavailable": effect
        default: "same"
        }
    }

    @Test func everyTransitionIsWhatTheLabMeasuredAtItsStep() throws {
        let run = try QuickLab.run.get()
        let measured = try Transitions(run.transitions)
        #expect(measured.cells.count == 15)
        var checked = 0
        for (environment, situations) in measured.effects {
            let scenario = try #require(measured.scenarios[environment])
            for (situation, schemes) in situations {
                let cell = try #require(measured.cells[situation])
                for (scheme, pair) in schemes {
                    let actor = try #require(run.result.look(scenario, cell.step, scheme, cell.actor), "\(scenario)/\(cell.step)")
                    #expect(actor.outcome == Self.outcome(of: pair.actor), "\(environment)/\(situation)/\(scheme)")
                    if let bystander = cell.bystander {
                        let look = try #require(run.result.look(scenario, cell.step, scheme, bystander))
                        #expect(look.outcome == Self.outcome(of: pair.bystander), "\(environment)/\(situation)/\(scheme) onlookers")
                    }
                    checked += 1
                }
            }
        }
        #expect(checked == 2 * 15 * 12)
    }

    @Test func theTransitionsThePopulationReadsAreTheOnesTheLabMeasuresNow() throws {
        let run = try QuickLab.run.get()
        let committed = try Data(contentsOf: PopulationRun.committedTransitions)
        let measured = try Transitions(run.transitions)
        let kept = try Transitions(committed)
        if measured.mirrorStore == kept.mirrorStore {
            // Byte for byte: scripts/lab rewrites the file, and an unchanged library leaves it unchanged.
            #expect(run.transitions == committed, "docs/lab/transitions.json differs from what the lab measures: run scripts/lab")
        } else {
            // A run without a keyring measures the file mirror; every other column must still agree.
            for (environment, situations) in measured.effects {
                for (situation, schemes) in situations {
                    for (scheme, pair) in schemes where scheme != "vendor-mirror" {
                        #expect(try kept.effect(environment, situation, scheme) == pair, "\(environment)/\(situation)/\(scheme)")
                    }
                }
            }
        }
    }

    @Test func theTransitionsTellTheBreaksTheLabShows() throws {
        let table = try Transitions(Data(contentsOf: PopulationRun.committedTransitions))
        // The original OpenUDID's break: the file slot is new once every app is gone, the mirror is not.
        #expect(try table.effect("plain", "reinstall-alone", "selection-file").actor == "fresh")
        #expect(try table.effect("plain", "reinstall-alone", "vendor-mirror").actor == "vendor-memory")
        #expect(try table.effect("plain", "reinstall-alone", "machine-scoped").actor == "own")
        // Beside apps of other vendors the shared schemes join them; in a sandbox without X11 they cannot.
        #expect(try table.effect("plain", "install-beside-other-vendor", "selection-file").actor == "peer")
        #expect(try table.effect("sandboxed", "install-beside-other-vendor", "selection-file").actor == "fresh")
        // A lost keyring with no app left takes the mirror's value; the user's opt-out does not reach a sandbox.
        #expect(try table.effect("plain", "keyring-lost-alone", "vendor-mirror").actor == "fresh")
        #expect(try table.effect("plain", "opt-out", "selection-file").actor == "zero")
        #expect(try table.effect("sandboxed", "opt-out", "selection-file").actor == "keep")
        #expect(try table.effect("plain", "reboot", "mac-randomised").actor == "fresh-shared")
    }

    @Test func withNoRemovalsEverySchemeButTheFreshUUIDKeepsItsIdentifier() throws {
        // Apps restart, nothing else happens: every look of every app but the fresh UUID's sees what it saw on day 0.
        let figures = try PopulationRun.figures(PopulationRun.still + ["--restart", "365", "--users", "4000"])
        #expect(figures.users == 4000)
        #expect(figures.schemes["push-token"] == nil, "no value at all offline")
        for scheme in figures.schemes.keys where scheme != "fresh-uuid" {
            for day in [30, 90, 365] {
                #expect(try figures.stable(scheme, day: day) == 1, "\(scheme) day \(day)")
            }
        }
        #expect(try figures.stable("fresh-uuid", day: 30) < 0.001)
        // Three apps of four vendors with two apps each: every user has apps of two vendors at least,
        // and the shared schemes join them all; the per-app and per-vendor ones never do.
        for scheme in ["hardware-id", "advertising-id", "selection-file", "vendor-mirror", "selection"] {
            #expect(try figures.linkable(scheme, day: 365) == 1, "\(scheme)")
        }
        for scheme in ["cached-uuid", "vendor-id", "machine-scoped", "fresh-uuid"] {
            #expect(try figures.linkable(scheme, day: 365) == 0, "\(scheme)")
        }
    }

    @Test func newMachinesAtOneAYearLeaveEToTheMinusTOfTheUsersOnTheirIdentifier() throws {
        let users = 20000
        let figures = try PopulationRun.figures(PopulationRun.still + ["--new-machine", "1", "--users", "\(users)"])
        for day in [30, 90, 365] {
            let expected = exp(-Double(day) / 365)
            // Four standard deviations of a binomial share.
            let tolerance = 4 * (expected * (1 - expected) / Double(users)).squareRoot()
            for scheme in ["hardware-id", "mac-address", "selection-file", "vendor-mirror", "machine-scoped", "cached-uuid"] {
                let share = try figures.stable(scheme, day: day)
                #expect(abs(share - expected) < tolerance, "\(scheme) day \(day): \(share), expected \(expected)")
            }
        }
    }

    @Test func removalsWithoutReinstallsLeaveEToTheMinusRTOfTheApps() throws {
        // Nothing but removals at 2 per app per year: the first app is still there with probability e^(-2t),
        // and while it is there, nothing changes its identifier.
        let users = 20000
        let figures = try PopulationRun.figures(PopulationRun.still + ["--remove", "2", "--users", "\(users)"])
        let expected = exp(-2 * 90.0 / 365)
        let tolerance = 4 * (expected * (1 - expected) / Double(users)).squareRoot()
        for scheme in ["hardware-id", "selection-file", "vendor-mirror", "cached-uuid"] {
            let share = try figures.stable(scheme, day: 90)
            #expect(abs(share - expected) < tolerance, "\(scheme): \(share), expected \(expected)")
        }
    }

    @Test func theSameSeedGivesTheSameFiguresAndAnotherSeedOthers() throws {
        let arguments = ["--users", "3000", "--remove", "3"]
        let first = try PopulationRun.figures(arguments + ["--seed", "7"])
        let again = try PopulationRun.figures(arguments + ["--seed", "7"])
        let other = try PopulationRun.figures(arguments + ["--seed", "8"])
        #expect(first == again)
        #expect(first != other)
    }

    @Test func theFilesItWritesAreTheSameFromRunToRun() throws {
        let directories = (0..<2).map { _ in
            FileManager.default.temporaryDirectory.appendingPathComponent("openudid-population-\(UUID().uuidString.prefix(8))")
        }
        defer { for directory in directories { try? FileManager.default.removeItem(at: directory) } }
        for directory in directories {
            let result = try PopulationRun.run(["--users", "2000", "--sweep", "remove=0,1,4", "--out", directory.path])
            #expect(result.status == 0, "\(result.standardError)")
        }
        for name in ["population.md", "population.svg", "population-sweep.svg"] {
            let first = try Data(contentsOf: directories[0].appendingPathComponent(name))
            let second = try Data(contentsOf: directories[1].appendingPathComponent(name))
            #expect(first == second, "\(name)")
            #expect(!first.isEmpty)
        }
        let page = try String(contentsOf: directories[0].appendingPathComponent("population.md"), encoding: .utf8)
        #expect(page.contains("| + vendor mirror |"))
        #expect(page.contains("--remove 4"))
        #expect(page.contains("illustrative"))
    }

    @Test func aMissingTableOrAnUnknownRateIsNamedWithTheRemedy() throws {
        let missing = try runCommand(
            Tools.product("openudid-lab"), ["population", "--transitions", "/nonexistent/transitions.json"],
            environment: ProcessInfo.processInfo.environment)
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("/nonexistent/transitions.json"))
        #expect(missing.standardError.contains("scripts/lab"))
        let unknown = try PopulationRun.run(["--sweep", "removals"])
        #expect(unknown.status == 2)
        #expect(unknown.standardError.contains("--sweep must name a rate"))
    }
}
