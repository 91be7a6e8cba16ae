import OpenUDIDKit
import Testing

/// The vote's security properties (docs/SECURITY.md, "The vote"), checked over
/// many generated ballot sets: random honest apps, file-backed or
/// selection-only, against random hostile X clients that claim any app id
/// (the honest ones' included), any identifier, any `born` from the 2010
/// floor on and any `written` up to the reader's 24-hour limit.
@Suite struct VoteSecurityTests {
    static let trials = 2000
    static let now: Int64 = 1_800_000_000_000

    /// A world of honest apps and hostile clients, generated from a seed.
    struct World {
        var generator: SeededRandom
        let identifiers = (0..<4).map { _ in Identifier.random() }
        var nextClient: UInt32 = 1
        var usedSlots = Set<Int>()

        mutating func client() -> UInt32 {
            defer { nextClient += 1 }
            return nextClient << 21
        }

        mutating func slot() -> Int {
            var slot = Int.random(in: 0..<100, using: &generator)
            while usedSlots.contains(slot) { slot = Int.random(in: 0..<100, using: &generator) }
            usedSlots.insert(slot)
            return slot
        }

        mutating func born() -> Int64 {
            Int64.random(in: SlotRecord.earliestTime...VoteSecurityTests.now, using: &generator)
        }

        func record(_ id: Identifier, app: String, born: Int64, written: Int64 = VoteSecurityTests.now) -> SlotRecord {
            let vendor = app.split(separator: ".").prefix(2).joined(separator: ".")
            return SlotRecord(id: id, app: app, vendor: vendor, born: born, written: written, optOut: id.isOptedOut)
        }

        /// `count` hostile clients, each serving 1 to 4 slots with arbitrary claims.
        mutating func hostile(_ count: Int, claiming names: [String]) -> [Candidate] {
            var candidates: [Candidate] = []
            for _ in 0..<count {
                let client = client()
                for _ in 0..<Int.random(in: 1...4, using: &generator) where usedSlots.count < 100 {
                    let app =
                        Bool.random(using: &generator) && !names.isEmpty
                        ? names.randomElement(using: &generator)! : "com.forge.a\(Int.random(in: 0..<50, using: &generator))"
                    let id =
                        Int.random(in: 0..<10, using: &generator) == 0
                        ? Identifier.optedOut
                        : (Bool.random(using: &generator) ? identifiers.randomElement(using: &generator)! : Identifier.random())
                    let written = VoteSecurityTests.now + Int64.random(in: -1_000_000...86_400_000, using: &generator)
                    candidates.append(
                        Candidate(
                            record(id, app: app, born: born(), written: written),
                            from: .selection(slot: slot(), client: client)))
                }
            }
            return candidates.shuffled(using: &generator)
        }
    }

    private static func resolve(
        _ candidates: [Candidate], local: SlotRecord? = nil, held: SlotRecord? = nil,
        keepsFiles: Bool = true, app: String
    ) -> Resolution {
        Resolution.resolve(candidates: candidates, local: local, held: held, keepsFiles: keepsFiles, app: app) {
            (Identifier.random(), now)
        }
    }

    /// (a) An attacker who reaches only the display never changes the identifier
    /// of an app backed by its own files, nor its birth.
    @Test func displayOnlyAttackersNeverChangeAFileBackedApp() {
        var world = World(generator: SeededRandom.announced("displayOnlyAttackersNeverChangeAFileBackedApp"))
        for _ in 0..<Self.trials {
            world.usedSlots = []
            let apps = (0..<Int.random(in: 1...6, using: &world.generator)).map { "com.honest.app\($0)" }
            let me = apps[0]
            var honest: [Candidate] = []
            var local: SlotRecord?
            for app in apps {
                let id = world.identifiers.randomElement(using: &world.generator)!
                let record = world.record(id, app: app, born: world.born())
                if app == me {
                    local = record
                    honest.append(Candidate(record, from: .localCache))
                    if Bool.random(using: &world.generator) { honest.append(Candidate(record, from: .fileSlot(app: app))) }
                } else {
                    honest.append(Candidate(record, from: .fileSlot(app: app)))
                }
                // Honest apps serve their record in a slot too.
                if Bool.random(using: &world.generator) {
                    honest.append(Candidate(record, from: .selection(slot: world.slot(), client: world.client())))
                }
            }
            let attack = world.hostile(Int.random(in: 0...30, using: &world.generator), claiming: apps)

            let baseline = Self.resolve(honest, local: local, app: me)
            let attacked = Self.resolve(honest + attack, local: local, app: me)
            #expect(attacked.identifier == baseline.identifier)
            #expect(attacked.born == baseline.born)
            #expect(attacked.decidedBy == .durable)
            // The app's own ballot is its own copy, never a record claiming its name.
            let ownBallot = (attacked.agreeing + attacked.disagreeing).filter { $0.record.app == me }
            #expect(ownBallot.count == 1 && ownBallot.allSatisfy { $0.source == .localCache || $0.source == .fileSlot(app: me) })
        }
    }

    /// (b) Selection-only: k hostile clients never beat k + 1 honest apps, and
    /// never win a tie against the value an app holds.
    @Test func inSelectionOnlyModeKHostileClientsNeverBeatKPlusOneHonestApps() {
        var world = World(generator: SeededRandom.announced("inSelectionOnlyModeKHostileClientsNeverBeatKPlusOneHonestApps"))
        for _ in 0..<Self.trials {
            world.usedSlots = []
            let k = Int.random(in: 0...12, using: &world.generator)
            // Ties: as many honest apps as hostile clients, the resolving one included.
            let honestCount = Bool.random(using: &world.generator) ? k + 1 : max(k, 1)
            let apps = (0..<honestCount).map { "com.honest.app\($0)" }
            let me = apps[0]
            let established = world.identifiers[0]
            let born = world.born()
            let held = world.record(established, app: me, born: born)
            var honest: [Candidate] = []
            for app in apps {
                // The resolving app's own slot may or may not be readable.
                if app == me && Bool.random(using: &world.generator) { continue }
                honest.append(
                    Candidate(
                        world.record(established, app: app, born: born),
                        from: .selection(slot: world.slot(), client: world.client())))
            }
            let attack = world.hostile(k, claiming: apps)
            let resolution = Self.resolve(honest + attack, held: held, keepsFiles: false, app: me)
            #expect(
                resolution.identifier == established,
                "k = \(k), honest = \(honestCount): \(resolution.tally.map { ($0.identifier == established, $0.votes) })")

            // An observer with nothing of its own needs the strict majority.
            if honestCount == k + 1 {
                let observer = Self.resolve(
                    honest.filter { $0.record.app != me } + [Candidate(held, from: .selection(slot: world.slot(), client: world.client()))]
                        + attack,
                    keepsFiles: false, app: "org.observer.app")
                #expect(observer.identifier == established)
            }
        }
    }

    /// (c) No record replaces an honest app's ballot: claims on an honest app's
    /// name are extra ballots of their own X clients, reported as conflicts.
    @Test func noRecordReplacesAnHonestAppsBallot() {
        var world = World(generator: SeededRandom.announced("noRecordReplacesAnHonestAppsBallot"))
        for _ in 0..<Self.trials {
            world.usedSlots = []
            let apps = (0..<Int.random(in: 1...5, using: &world.generator)).map { "com.honest.app\($0)" }
            let established = world.identifiers[0]
            let honest = apps.map { app in
                Candidate(
                    world.record(established, app: app, born: world.born()),
                    from: .selection(slot: world.slot(), client: world.client()))
            }
            let attack = world.hostile(Int.random(in: 1...8, using: &world.generator), claiming: apps)
            let resolution = Self.resolve(honest + attack, keepsFiles: false, app: "org.observer.app")
            // Every honest app's record still votes.
            for candidate in honest {
                #expect((resolution.agreeing + resolution.disagreeing).contains(candidate))
            }
            // Every app claimed by more than one X client (by its lowest slot) is reported.
            var lowest: [UInt32: (slot: Int, app: String)] = [:]
            for candidate in honest + attack {
                guard case .selection(let slot, let client) = candidate.source else { continue }
                if let kept = lowest[client], kept.slot < slot { continue }
                lowest[client] = (slot, candidate.record.app)
            }
            let claimants = Dictionary(grouping: lowest.values, by: \.app).filter { $0.value.count > 1 }.keys
            #expect(Set(resolution.conflicts.map(\.app)) == Set(claimants))
        }
    }
}
