import OpenUDIDKit
import Testing

// Identifiers whose hex order is A < B < C < F.
private let idA = hexID("a")
private let idB = hexID("b")
private let idC = hexID("c")
private let idH = hexID("d")
private let idF = hexID("f")
private let idL = hexID("e")

private func hexID(_ digit: Character) -> Identifier {
    // Only ever called with hex digits, so parsing cannot fail.
    (try? Identifier(parsing: String(repeating: digit, count: 40))) ?? .optedOut
}

private let year2018: Int64 = 1_514_764_800_000
private let year2019: Int64 = 1_546_300_800_000
private let year2020: Int64 = 1_577_836_800_000
private let year2021: Int64 = 1_609_459_200_000

private func record(_ id: Identifier, app: String, born: Int64 = year2020, written: Int64 = year2021) -> SlotRecord {
    let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
    return SlotRecord(id: id, app: app, vendor: vendor, born: born, written: written, optOut: id.isOptedOut)
}

private func selection(
    _ slot: Int, client: UInt32, _ id: Identifier, app: String,
    born: Int64 = year2020, written: Int64 = year2021
) -> Candidate {
    Candidate(record(id, app: app, born: born, written: written), from: .selection(slot: slot, client: client))
}

private func fileSlot(_ id: Identifier, app: String, born: Int64 = year2020, written: Int64 = year2021) -> Candidate {
    Candidate(record(id, app: app, born: born, written: written), from: .fileSlot(app: app))
}

private func localCache(
    _ id: Identifier, app: String = "com.me.app", born: Int64 = year2020,
    written: Int64 = year2021
) -> Candidate {
    Candidate(record(id, app: app, born: born, written: written), from: .localCache)
}

private func mirror(
    _ id: Identifier, vendor: String = "com.acme", store: String = "file",
    born: Int64 = year2020, written: Int64 = year2021
) -> Candidate {
    let record = SlotRecord(id: id, app: vendor + ".mirror", vendor: vendor, born: born, written: written, optOut: id.isOptedOut)
    return Candidate(record, from: .vendorMirror(store: store, vendor: vendor))
}

private let freshValue = (identifier: idF, born: Int64(1_700_000_000_000))

/// One table row: the candidates, the policy, and what must come out.
struct Scenario: Sendable, CustomTestStringConvertible {
    let name: String
    let candidates: [Candidate]
    var local: SlotRecord? = nil
    var held: SlotRecord? = nil
    var keepsFiles = true
    var policy: ResolutionPolicy = .followConsensus
    let identifier: Identifier
    let origin: Resolution.Origin
    var votes: [Identifier: Int]? = nil
    var born: Int64? = nil
    var replaced: Identifier? = nil
    var disagreement: Resolution.Disagreement? = nil
    var ignoredReasons: [Resolution.Ignored.Reason]? = nil
    var conflicts: [String] = []
    var app: String? = nil

    var testDescription: String { name }

    func run(_ candidates: [Candidate]? = nil) -> Resolution {
        Resolution.resolve(
            candidates: candidates ?? self.candidates, local: local, held: held, keepsFiles: keepsFiles,
            policy: policy, app: app
        ) { freshValue }
    }
}

private let hostileSlots = (0..<50).map { selection($0, client: 0x0660_0000, idH, app: "evil.app\($0)", born: year2018) }
private let honestApps = [
    selection(50, client: 0x0100_0000, idA, app: "com.acme.notes"),
    selection(51, client: 0x0200_0000, idA, app: "com.acme.draw"),
    selection(52, client: 0x0300_0000, idA, app: "org.other.mail")
]

private let honestFiles = [
    fileSlot(idA, app: "com.acme.notes"),
    fileSlot(idA, app: "com.acme.draw"),
    fileSlot(idA, app: "org.other.mail")
]

let scenarios: [Scenario] = [
    Scenario(
        name: "no candidates: a fresh identifier", candidates: [],
        identifier: idF, origin: .generated, votes: [:], born: freshValue.born),
    Scenario(
        name: "a tie goes to the earlier born",
        candidates: [
            selection(0, client: 1, idA, app: "com.a.one", born: year2020),
            selection(1, client: 2, idB, app: "com.b.two", born: year2019)
        ],
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 1], born: year2019),
    Scenario(
        name: "a tie with equal births goes to the smaller identifier",
        candidates: [selection(0, client: 1, idB, app: "com.a.one"), selection(1, client: 2, idA, app: "com.b.two")],
        identifier: idA, origin: .consensus, votes: [idA: 1, idB: 1]),
    Scenario(
        name: "an identifier is as old as its oldest ballot",
        candidates: [
            selection(0, client: 1, idA, app: "com.a.one", born: year2021),
            selection(1, client: 2, idA, app: "com.a.two", born: year2018),
            selection(2, client: 3, idB, app: "com.b.one", born: year2019),
            selection(3, client: 4, idB, app: "com.b.two", born: year2019)
        ],
        identifier: idA, origin: .consensus, votes: [idA: 2, idB: 2], born: year2018),
    Scenario(
        name: "durable ballots decide; selections are outranked",
        candidates: [
            selection(0, client: 1, idA, app: "com.a.one", born: year2018),
            selection(1, client: 2, idA, app: "com.a.two", born: year2018),
            fileSlot(idB, app: "com.b.one", born: year2021)
        ],
        identifier: idB, origin: .consensus, votes: [idB: 1], born: year2021,
        ignoredReasons: [.outranked, .outranked]),
    Scenario(
        name: "the winner's birth is its earliest in the durable tier, counted or not",
        candidates: [
            localCache(idL, app: "com.acme.photos", born: year2018), mirror(idB, born: year2019),
            fileSlot(idB, app: "org.b.one", born: year2021), fileSlot(idB, app: "org.b.two", born: year2021)
        ],
        local: record(idL, app: "com.acme.photos", born: year2018),
        identifier: idB, origin: .consensus, votes: [idB: 2, idL: 1], born: year2019, replaced: idL,
        disagreement: .init(local: idL, consensus: idB),
        ignoredReasons: [.sameApp(counted: .localCache)], app: "com.acme.photos"),
    Scenario(
        name: "the majority beats an older identifier",
        candidates: [
            selection(0, client: 1, idA, app: "com.a.one", born: year2021),
            selection(1, client: 2, idA, app: "com.a.two", born: year2021),
            selection(2, client: 3, idB, app: "com.b.one", born: year2018)
        ],
        identifier: idA, origin: .consensus, votes: [idA: 2, idB: 1], born: year2021),
    Scenario(
        name: "opted-out apps do not vote",
        candidates: [
            selection(0, client: 1, .optedOut, app: "com.o.one"),
            selection(1, client: 2, .optedOut, app: "com.o.two"),
            fileSlot(.optedOut, app: "com.o.three"),
            selection(3, client: 4, idB, app: "com.b.one")
        ],
        identifier: idB, origin: .consensus, votes: [idB: 1],
        ignoredReasons: [.optedOut, .optedOut, .optedOut]),
    Scenario(
        name: "only opted-out records: a fresh identifier",
        candidates: [selection(0, client: 1, .optedOut, app: "com.o.one"), mirror(.optedOut)],
        identifier: idF, origin: .generated, votes: [:], ignoredReasons: [.optedOut, .optedOut]),
    Scenario(
        name: "one client holding 50 slots votes once; three honest apps win",
        candidates: hostileSlots + honestApps,
        identifier: idA, origin: .consensus, votes: [idA: 3, idH: 1],
        ignoredReasons: Array(repeating: .sameClient(counted: .selection(slot: 0, client: 0x0660_0000)), count: 49)),
    Scenario(
        name: "followConsensus adopts the consensus over a dissenting local cache",
        candidates: honestFiles + [localCache(idL)], local: record(idL, app: "com.me.app"),
        identifier: idA, origin: .consensus, votes: [idA: 3, idL: 1], replaced: idL,
        disagreement: .init(local: idL, consensus: idA)),
    Scenario(
        name: "a local cache outranks any number of selections",
        candidates: honestApps + [localCache(idL)], local: record(idL, app: "com.me.app"),
        identifier: idL, origin: .consensus, votes: [idL: 1],
        ignoredReasons: [.outranked, .outranked, .outranked]),
    Scenario(
        name: "keepLocal keeps a dissenting local cache and reports it",
        candidates: honestFiles + [localCache(idL)], local: record(idL, app: "com.me.app"), policy: .keepLocal,
        identifier: idL, origin: .keptLocal, votes: [idA: 3, idL: 1], born: year2020,
        disagreement: .init(local: idL, consensus: idA)),
    Scenario(
        name: "keepLocal with an agreeing local value reports nothing",
        candidates: honestFiles + [localCache(idA)], local: record(idA, app: "com.me.app"), policy: .keepLocal,
        identifier: idA, origin: .keptLocal, votes: [idA: 4]),
    Scenario(
        name: "an opted-out local value is no local value",
        candidates: honestApps, local: record(.optedOut, app: "com.me.app"), policy: .keepLocal,
        identifier: idA, origin: .consensus, votes: [idA: 3]),
    Scenario(
        name: "nobody votes but the app has a value: it is kept, not regenerated",
        candidates: [], local: record(idL, app: "com.me.app", born: year2019),
        identifier: idL, origin: .keptLocal, votes: [:], born: year2019),
    Scenario(
        name: "a vendor's mirror speaks once however many stores hold it",
        candidates: [
            mirror(idB, store: "secret-service", born: year2019), mirror(idB, store: "file", born: year2019),
            fileSlot(idA, app: "com.a.one", born: year2021)
        ],
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 1],
        ignoredReasons: [.sameVendor(counted: .vendorMirror(store: "file", vendor: "com.acme"))]),
    Scenario(
        name: "without a reading app, each vendor's mirror speaks for the app that wrote it",
        candidates: [
            mirror(idB, vendor: "com.acme"), mirror(idB, vendor: "org.other"),
            fileSlot(idA, app: "com.a.one", born: year2018)
        ],
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 2]),
    Scenario(
        name: "the mirror speaks for the app that reads it, not as a voter of its own",
        candidates: [
            localCache(idA, app: "com.acme.photos"), mirror(idA),
            fileSlot(idB, app: "org.b.one"), fileSlot(idB, app: "org.b.two")
        ],
        local: record(idA, app: "com.acme.photos"),
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 2], replaced: idA,
        disagreement: .init(local: idA, consensus: idB),
        ignoredReasons: [.sameApp(counted: .localCache)], app: "com.acme.photos"),
    Scenario(
        name: "an older identifier in the mirror replaces the app's younger one",
        candidates: [
            localCache(idL, app: "com.acme.photos", born: year2021), mirror(idB, born: year2019),
            fileSlot(idA, app: "org.b.one", born: year2020)
        ],
        local: record(idL, app: "com.acme.photos", born: year2021),
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 1], born: year2019, replaced: idL,
        disagreement: .init(local: idL, consensus: idB),
        ignoredReasons: [.sameApp(counted: .vendorMirror(store: "file", vendor: "com.acme"))], app: "com.acme.photos"),
    Scenario(
        name: "a younger mirror does not override the app's own value",
        candidates: [localCache(idA, app: "com.acme.photos", born: year2019), mirror(idB, born: year2021)],
        local: record(idA, app: "com.acme.photos", born: year2019),
        identifier: idA, origin: .consensus, votes: [idA: 1], born: year2019,
        ignoredReasons: [.sameApp(counted: .localCache)], app: "com.acme.photos"),
    Scenario(
        name: "with nothing of its own, the app votes the mirror's identifier",
        candidates: [mirror(idB, born: year2019)],
        identifier: idB, origin: .consensus, votes: [idB: 1], born: year2019, app: "com.acme.photos"),
    Scenario(
        name: "an app's file slot outranks a selection claiming that app",
        candidates: [
            selection(0, client: 1, idA, app: "com.a.one", born: year2018, written: year2021),
            fileSlot(idB, app: "com.a.one", written: year2019)
        ],
        identifier: idB, origin: .consensus, votes: [idB: 1], ignoredReasons: [.outranked]),
    Scenario(
        name: "without a selection the latest-written record speaks for the app",
        candidates: [
            fileSlot(idA, app: "com.me.app", written: year2021),
            localCache(idB, app: "com.me.app", born: year2018, written: year2020)
        ],
        identifier: idA, origin: .consensus, votes: [idA: 1],
        ignoredReasons: [.sameApp(counted: .fileSlot(app: "com.me.app"))]),
    Scenario(
        name: "equally fresh: the local cache speaks for the app",
        candidates: [fileSlot(idA, app: "com.me.app", born: year2018), localCache(idB, app: "com.me.app")],
        identifier: idB, origin: .consensus, votes: [idB: 1],
        ignoredReasons: [.sameApp(counted: .localCache)]),
    Scenario(
        name: "an app claimed by two clients is a conflict, not a choice by written",
        candidates: [
            selection(4, client: 1, idA, app: "com.a.one", written: year2020),
            selection(7, client: 2, idB, app: "com.a.one", born: year2018, written: year2021 + 80_000_000)
        ],
        identifier: idB, origin: .consensus, votes: [idA: 1, idB: 1], born: year2018, conflicts: ["com.a.one"]),
    Scenario(
        name: "an opted-out selection does not silence a file slot",
        candidates: [
            selection(0, client: 1, .optedOut, app: "com.a.one"), fileSlot(idA, app: "com.a.one"),
            selection(1, client: 2, idB, app: "com.b.one")
        ],
        identifier: idA, origin: .consensus, votes: [idA: 1],
        ignoredReasons: [.optedOut, .outranked]),
    Scenario(
        name: "an opted-out file slot of its own does not block the mirror",
        candidates: [fileSlot(.optedOut, app: "com.acme.photos"), mirror(idB, born: year2019)],
        identifier: idB, origin: .consensus, votes: [idB: 1], born: year2019,
        ignoredReasons: [.sameApp(counted: .vendorMirror(store: "file", vendor: "com.acme"))], app: "com.acme.photos"),
    Scenario(
        name: "selection-only: the held value is the app's ballot and wins a tie",
        candidates: [selection(0, client: 9, idA, app: "com.evil.one", born: SlotRecord.earliestTime)],
        held: record(idL, app: "com.me.app"), keepsFiles: false,
        identifier: idL, origin: .consensus, votes: [idA: 1, idL: 1], born: year2020, app: "com.me.app"),
    Scenario(
        name: "selection-only: a client claiming the app's own name does not replace its held value",
        candidates: [
            selection(0, client: 9, idA, app: "com.me.app", born: SlotRecord.earliestTime),
            selection(1, client: 3, idL, app: "com.b.one")
        ],
        held: record(idL, app: "com.me.app"), keepsFiles: false,
        identifier: idL, origin: .consensus, votes: [idL: 2],
        ignoredReasons: [.sameApp(counted: .held)], conflicts: ["com.me.app"], app: "com.me.app"),
    Scenario(
        name: "selection-only: two forgers tie two honest ballots, and the held value wins the tie",
        candidates: [
            selection(0, client: 9, idA, app: "com.evil.one", born: SlotRecord.earliestTime),
            selection(1, client: 8, idA, app: "com.evil.two", born: SlotRecord.earliestTime),
            selection(2, client: 3, idL, app: "com.b.one")
        ],
        held: record(idL, app: "com.me.app"), keepsFiles: false,
        identifier: idL, origin: .consensus, votes: [idA: 2, idL: 2], born: year2020, app: "com.me.app"),
    Scenario(
        name: "selection-only: more ballots win, and a live winner's birth comes with it",
        candidates: [
            selection(0, client: 9, idA, app: "com.a.one", born: year2019),
            selection(1, client: 8, idA, app: "com.a.two", born: year2019),
            selection(4, client: 7, idA, app: "com.a.three", born: year2021),
            selection(2, client: 3, idL, app: "com.b.one")
        ],
        held: record(idL, app: "com.me.app"), keepsFiles: false,
        identifier: idA, origin: .consensus, votes: [idA: 3, idL: 2], born: year2019,
        replaced: idL, disagreement: .init(local: idL, consensus: idA), app: "com.me.app"),
    Scenario(
        name: "a held value stands for unreadable files and outranks selections",
        candidates: [
            selection(0, client: 9, idA, app: "com.evil.one", born: SlotRecord.earliestTime),
            selection(1, client: 8, idA, app: "com.evil.two", born: SlotRecord.earliestTime)
        ],
        held: record(idL, app: "com.me.app"),
        identifier: idL, origin: .consensus, votes: [idL: 1], ignoredReasons: [.outranked, .outranked], app: "com.me.app"),
    Scenario(
        name: "a record found in another app's file slot or vendor's mirror does not vote",
        candidates: [
            Candidate(record(idA, app: "com.a.one"), from: .fileSlot(app: "com.b.two")),
            Candidate(record(idA, app: "com.a.one"), from: .vendorMirror(store: "file", vendor: "org.x")),
            selection(0, client: 1, idB, app: "com.b.one")
        ],
        identifier: idB, origin: .consensus, votes: [idB: 1], ignoredReasons: [.misplaced, .misplaced])
]

@Suite struct ResolutionTests {
    @Test(arguments: scenarios)
    func followsTheRule(_ scenario: Scenario) {
        let resolution = scenario.run()
        #expect(resolution.identifier == scenario.identifier)
        #expect(resolution.origin == scenario.origin)
        if let votes = scenario.votes { #expect(resolution.votes == votes) }
        if let born = scenario.born { #expect(resolution.born == born) }
        #expect(resolution.replaced == scenario.replaced)
        #expect(resolution.disagreement == scenario.disagreement)
        if let reasons = scenario.ignoredReasons {
            #expect(resolution.ignored.map(\.reason).sorted { "\($0)" < "\($1)" } == reasons.sorted { "\($0)" < "\($1)" })
        }
        #expect(resolution.conflicts.map(\.app) == scenario.conflicts)
        // Every candidate (and the held value) is accounted for exactly once.
        let accounted = resolution.agreeing.count + resolution.disagreeing.count + resolution.ignored.count
        #expect(accounted == scenario.candidates.count + (scenario.held == nil ? 0 : 1))
        #expect(resolution.agreeing.allSatisfy { $0.record.id == resolution.identifier })
        #expect(resolution.disagreeing.allSatisfy { $0.record.id != resolution.identifier })
        #expect(resolution.tally.map(\.votes).reduce(0, +) == resolution.agreeing.count + resolution.disagreeing.count)
    }

    @Test(arguments: scenarios)
    func givesTheSameResultInAnyOrder(_ scenario: Scenario) {
        let reference = scenario.run()
        var generator = SeededRandom.announced("givesTheSameResultInAnyOrder")
        for _ in 0..<30 {
            #expect(scenario.run(scenario.candidates.shuffled(using: &generator)) == reference)
        }
    }

    @Test func randomElectionsAreOrderIndependent() {
        var generator = SeededRandom.announced("randomElectionsAreOrderIndependent")
        let ids = [idA, idB, idC, .optedOut]
        let apps = ["com.a.one", "com.a.two", "com.b.one", "org.c.x", "com.me.app"]
        for _ in 0..<300 {
            var candidates: [Candidate] = []
            for _ in 0..<Int.random(in: 0...25, using: &generator) {
                let id = ids.randomElement(using: &generator) ?? idA
                let app = apps.randomElement(using: &generator) ?? "com.a.one"
                let born = [year2018, year2019, year2020].randomElement(using: &generator) ?? year2020
                let written = [year2020, year2021].randomElement(using: &generator) ?? year2021
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    candidates.append(
                        selection(
                            Int.random(in: 0..<100, using: &generator),
                            client: UInt32.random(in: 1...4, using: &generator),
                            id, app: app, born: born, written: written))
                case 1: candidates.append(fileSlot(id, app: app, born: born, written: written))
                case 2: candidates.append(localCache(id, app: app, born: born, written: written))
                default:
                    candidates.append(
                        mirror(
                            id, vendor: ["com.acme", "org.c"].randomElement(using: &generator) ?? "com.acme",
                            store: ["file", "secret-service"].randomElement(using: &generator) ?? "file",
                            born: born, written: written))
                }
            }
            let local = candidates.first { $0.source == .localCache }?.record
            let reference = Resolution.resolve(candidates: candidates, local: local) { freshValue }
            for _ in 0..<5 {
                let shuffled = Resolution.resolve(candidates: candidates.shuffled(using: &generator), local: local) { freshValue }
                #expect(shuffled == reference)
            }
            // One tier decides; each X client (live) or each app (durable) casts at most one ballot.
            let voters = reference.agreeing + reference.disagreeing
            let clients = voters.compactMap { if case .selection(_, let client) = $0.source { client } else { nil } }
            #expect(Set(clients).count == clients.count)
            let durableVoters = voters.filter { if case .selection = $0.source { false } else { true } }
            #expect(clients.isEmpty || durableVoters.isEmpty)
            let appVoters = durableVoters.filter { if case .vendorMirror = $0.source { false } else { true } }.map(\.record.app)
            #expect(Set(appVoters).count == appVoters.count)
        }
    }

    @Test func appsOfDifferentVendorsAgreeThoughEachSeesOnlyItsOwnMirror() {
        // Started at the same moment, each app generated its own identifier and
        // wrote it to its vendor's mirror; the selections and file slots are
        // visible to both, each vendor's mirror only to that vendor's app.
        let shared = [
            selection(0, client: 1, idA, app: "com.acme.notes", born: year2021),
            fileSlot(idA, app: "com.acme.notes", born: year2021),
            selection(1, client: 2, idB, app: "org.other.mail", born: year2021),
            fileSlot(idB, app: "org.other.mail", born: year2021)
        ]
        let notes = Resolution.resolve(
            candidates: shared + [
                localCache(idA, app: "com.acme.notes", born: year2021),
                mirror(idA, vendor: "com.acme", born: year2021)
            ],
            local: record(idA, app: "com.acme.notes", born: year2021)
        ) { freshValue }
        let mail = Resolution.resolve(
            candidates: shared + [
                localCache(idB, app: "org.other.mail", born: year2021),
                mirror(idB, vendor: "org.other", born: year2021)
            ],
            local: record(idB, app: "org.other.mail", born: year2021)
        ) { freshValue }
        #expect(notes.identifier == mail.identifier)
        #expect(notes.identifier == idA, "a tie of equal births goes to the smaller identifier")
    }

    @Test func generatesOnlyWhenNobodyVotes() {
        var calls = 0
        _ = Resolution.resolve(candidates: honestApps, local: nil) {
            calls += 1
            return freshValue
        }
        #expect(calls == 0)
        let generated = Resolution.resolve(candidates: [], local: nil) {
            calls += 1
            return freshValue
        }
        #expect(calls == 1)
        #expect(generated.identifier == idF)
        #expect(generated.consensus == nil)
        #expect(generated.agreeing.isEmpty && generated.disagreeing.isEmpty)
    }

    @Test func reportsWhoAgreedAndWhoDid() {
        let dissenter = selection(9, client: 9, idB, app: "com.b.one")
        let resolution = Resolution.resolve(candidates: honestApps + [dissenter], local: nil) { freshValue }
        #expect(resolution.identifier == idA)
        #expect(resolution.agreeing == honestApps)
        #expect(resolution.disagreeing == [dissenter])
        #expect(resolution.tally.map(\.identifier) == [idA, idB])
        #expect(resolution.consensus == idA)
    }

    @Test func describesSourcesForReports() {
        #expect(Candidate.Source.selection(slot: 3, client: 0x1a0_0000).description == "slot 3 (X client 0x1a00000)")
        #expect(Candidate.Source.fileSlot(app: "com.acme.notes").description == "file slot of \"com.acme.notes\"")
        #expect(Candidate.Source.vendorMirror(store: "file", vendor: "com.acme").description == "file mirror of \"com.acme\"")
    }
}
