/// The voting rule's ballots: who votes in which tier, and the count.
///
/// Every grouping below falls back to the candidates' canonical order
/// (`Candidate.precedes`), so the outcome never depends on the order the
/// candidates were gathered in.
struct Ballots {
    /// The candidates that vote, in canonical order.
    private(set) var voting: [Candidate] = []
    /// The rest, in canonical order.
    private(set) var ignored: [Resolution.Ignored] = []
    /// Apps claimed by more than one X client.
    private(set) var conflicts: [Resolution.Conflict] = []
    /// The tier that decided, or nil when nobody votes.
    private(set) var tier: Resolution.Tier?
    /// The identifier that wins a tie in the live tier: the one the app holds.
    private(set) var preferred: Identifier?
    /// The app's own ballot in the live tier: its held value, or with private
    /// files the record that stands for all its own evidence.
    private(set) var ownLive: Candidate?
    /// The earliest `born` per identifier among the deciding tier's records.
    private var births: [Identifier: Int64] = [:]
    /// Whether the app's files are its own alone (see `init`).
    private let privateFiles: Bool
    /// The current user reset generation: the reset marker's, or a higher one
    /// that a durable record or the held value carries. Records of older
    /// generations are superseded.
    private(set) var generation: Int64 = 0

    private struct Entry {
        let candidate: Candidate
        /// Position in the canonical order: the last resort of every tie-break.
        let rank: Int
        var record: SlotRecord { candidate.record }
        var isHeld: Bool { candidate.source == .held }
    }

    /// - Parameters:
    ///   - candidates: Every candidate, the held value (source `.held`) among them.
    ///   - app: The resolving app, for whom the mirror and the held value speak.
    ///   - heldTier: The tier the held value belongs to.
    ///   - privateFiles: Whether the places the app reads its files from are
    ///     its own alone (a sandbox's data directory): what they hold is then the
    ///     app's own evidence, voting with its held value in the live tier,
    ///     not shared evidence that outranks the apps it can see (§6.1).
    ///   - reset: What the user's reset marker and key say.
    init(
        _ candidates: [Candidate], app: String?, heldTier: Resolution.Tier, privateFiles: Bool = false,
        reset: ResetEvidence = ResetEvidence()
    ) {
        self.privateFiles = privateFiles
        let sorted = candidates.map { ($0, $0.sourceKey()) }
            .sorted { $0.0.precedes($1.0, sourceKeys: ($0.1, $1.1)) }
            .enumerated().map { Entry(candidate: $0.element.0, rank: $0.offset) }
        var ignored: [(Entry, Resolution.Ignored.Reason)] = []

        // The user's resets come first: a record of an older generation than the
        // current one casts no ballot, wherever it is found. Only the user's own
        // evidence can make a generation current: the marker, and durable records
        // or the held value, which may raise it by one past a marker (an app that
        // read the marker before a reset wrote it) or freely where there is no
        // marker to go by. A selection can never raise it.
        var generation = reset.generation
        var ahead: Set<Int> = []
        for entry in sorted where entry.isHeld || Self.tier(of: entry, heldTier: heldTier, privateFiles: false) == .durable {
            if case .fileSlot(let owner) = entry.candidate.source, owner != entry.record.app { continue }
            if case .vendorMirror(_, let vendor) = entry.candidate.source, vendor != entry.record.vendor { continue }
            if case .localCache = entry.candidate.source, let app, app != entry.record.app { continue }
            if case .present(let marked) = reset.marker, entry.record.generation > marked + 1 {
                ahead.insert(entry.rank)
                continue
            }
            generation = max(generation, entry.record.generation)
        }
        self.generation = generation
        // The reset key binds the identifiers of its generation; selections of
        // that generation must bind to count (durable records were written by the
        // user's own processes, those of earlier versions among them). Where the
        // key is unknown, none of them can be checked, and none counts. A later
        // generation's selection, counted where the marker names none, needs the
        // key of its own generation: claiming one more than the key's evades nothing.
        let entries = sorted.filter { entry in
            let record = entry.record
            let isSelection: Bool = if case .selection = entry.candidate.source { true } else { false }
            let reason: Resolution.Ignored.Reason? =
                if ahead.contains(entry.rank) {
                    .ahead
                } else if record.generation < generation {
                    .superseded
                } else if isSelection, record.generation > generation, reset.marker != .unreadable {
                    // An app that cannot read the marker cannot know the generation;
                    // it counts such a selection as one of the generation it knows.
                    .ahead
                } else if isSelection, !Self.binds(record, reset.binding(of: record.generation)) {
                    .unbound
                } else {
                    nil
                }
            if let reason { ignored.append((entry, reason)) }
            return reason == nil
        }

        var durableByApp: [String: [Entry]] = [:]
        var mirrorsByVendor: [String: [Entry]] = [:]
        var selectionsByClient: [UInt32: [Entry]] = [:]
        var liveHeld: Entry?
        for entry in entries {
            switch entry.candidate.source {
            case .selection(_, let client):
                selectionsByClient[client, default: []].append(entry)
            case .fileSlot(let owner) where owner != entry.record.app:
                ignored.append((entry, .misplaced))
            case .localCache where app.map({ $0 != entry.record.app }) ?? false:
                // The app's own place holding another app's record: not its ballot,
                // nor that app's, which did not put it there.
                ignored.append((entry, .misplaced))
            case .fileSlot, .localCache:
                durableByApp[entry.record.app, default: []].append(entry)
            case .vendorMirror(_, let vendor) where vendor != entry.record.vendor:
                ignored.append((entry, .misplaced))
            case .vendorMirror(_, let vendor):
                mirrorsByVendor[vendor, default: []].append(entry)
            case .held where heldTier == .live && !privateFiles:
                liveHeld = entry
            case .held:
                durableByApp[entry.record.app, default: []].append(entry)
            }
        }

        // Durable tier, one ballot per app: its latest-written stored copy; the
        // held value only where no stored copy of the app's own was found.
        var representatives: [String: Entry] = [:]
        for group in durableByApp.values {
            let kept = Self.best(group) { a, b in
                if a.isHeld != b.isHeld { return !a.isHeld }
                if a.record.written != b.record.written { return a.record.written > b.record.written }
                return Self.sourcePreference(a) < Self.sourcePreference(b)
            }
            for entry in group where entry.rank != kept.rank {
                ignored.append((entry, .sameApp(counted: kept.candidate.source)))
            }
            representatives[kept.record.app] = kept
        }

        // The mirror speaks through the app that reads it: for an app with no
        // identifier of its own (none, or an opted-out leftover), or whose own
        // identifier is younger than the mirror's.
        let mirrors = mirrorsByVendor.values.map { group in
            let mirror = Self.best(group) { $0.record.written > $1.record.written }
            for entry in group where entry.rank != mirror.rank {
                ignored.append((entry, .sameVendor(counted: mirror.candidate.source)))
            }
            return mirror
        }.sorted { $0.rank < $1.rank }
        for mirror in mirrors {
            let reader = app ?? mirror.record.app
            guard let own = representatives[reader] else {
                representatives[reader] = mirror
                continue
            }
            let speaks = !mirror.record.optOut && (own.record.optOut || mirror.record.born < own.record.born)
            if speaks {
                ignored.append((own, .sameApp(counted: mirror.candidate.source)))
                representatives[reader] = mirror
            } else {
                ignored.append((mirror, .sameApp(counted: own.candidate.source)))
            }
        }

        // Private files are the app's own evidence, not shared: its representative
        // is its held value in the live tier, and any other app's a live ballot.
        var privateBallots: [Entry] = []
        if privateFiles {
            if let app, let own = representatives[app], !own.record.optOut {
                liveHeld = representatives.removeValue(forKey: app)
            }
            privateBallots = Array(representatives.values)
            representatives.removeAll()
        }
        var durable: [Entry] = []
        for entry in representatives.values {
            if entry.record.optOut { ignored.append((entry, .optedOut)) } else { durable.append(entry) }
        }

        // Live tier: one ballot per X client, from its lowest slot, whatever app
        // it claims to be. Claims on the resolving app's own name do not vote
        // where the app holds a value of its own.
        var live: [Entry] = []
        var claims: [String: [Entry]] = [:]
        for group in selectionsByClient.values {
            let kept = Self.best(group) { Self.sourcePreference($0) < Self.sourcePreference($1) }
            for entry in group where entry.rank != kept.rank {
                ignored.append((entry, .sameClient(counted: kept.candidate.source)))
            }
            claims[kept.record.app, default: []].append(kept)
            if let liveHeld, kept.record.app == liveHeld.record.app {
                ignored.append((kept, .sameApp(counted: .held)))
            } else {
                live.append(kept)
            }
        }
        if let liveHeld { live.append(liveHeld) }
        live += privateBallots
        live = live.filter { entry in
            if entry.record.optOut { ignored.append((entry, .optedOut)) }
            return !entry.record.optOut
        }

        // Conflicts: two X clients claiming one app, or a client claiming the
        // resolving app with another identifier than the app's own evidence: its
        // own live ballot, else its durable ballot, the mirror speaking for it
        // included (whose record names another app of the vendor).
        let own = liveHeld ?? representatives[app ?? ""]
        var conflicts: [Resolution.Conflict] = []
        for (claimed, group) in claims {
            var parties = group
            if let own, claimed == app, group.contains(where: { $0.record.id != own.record.id }) {
                parties.append(own)
            }
            guard parties.count > 1 else { continue }
            conflicts.append(Resolution.Conflict(app: claimed, claims: parties.sorted { $0.rank < $1.rank }.map(\.candidate)))
        }
        self.conflicts = conflicts.sorted { $0.app.utf8.lexicographicallyPrecedes($1.app.utf8) }

        // Which tier decides.
        let deciding: [Entry]
        if !durable.isEmpty {
            tier = .durable
            deciding = durable
            for entry in live { ignored.append((entry, .outranked)) }
        } else if !live.isEmpty {
            tier = .live
            deciding = live
            // Ties go to the value the app holds, except for an app whose files
            // are private: equal groups of apps that see each other only on the
            // display then converge on the identifier born first (§6.3 item 5).
            if !privateFiles { preferred = liveHeld?.record.id }
            ownLive = liveHeld?.candidate
        } else {
            deciding = []
        }

        // An identifier is as old as its oldest record in the deciding tier,
        // counted or not: copying never makes it younger.
        for entry in entries where !entry.record.optOut && Self.tier(of: entry, heldTier: heldTier, privateFiles: privateFiles) == tier {
            if case .fileSlot(let owner) = entry.candidate.source, owner != entry.record.app { continue }
            if case .vendorMirror(_, let vendor) = entry.candidate.source, vendor != entry.record.vendor { continue }
            if case .localCache = entry.candidate.source, let app, app != entry.record.app { continue }
            births[entry.record.id] = min(births[entry.record.id] ?? .max, entry.record.born)
        }

        self.voting = deciding.sorted { $0.rank < $1.rank }.map(\.candidate)
        self.ignored = ignored.sorted { $0.0.rank < $1.0.rank }
            .map { Resolution.Ignored(candidate: $0.0.candidate, reason: $0.1) }
    }

    /// Counts the ballots and ranks the identifiers: most votes, then (live
    /// tier) the value the app holds, then the earliest birth, then the smallest.
    func tally() -> [Resolution.Tally] {
        var counts: [Identifier: (votes: Int, born: Int64)] = [:]
        for candidate in voting {
            let record = candidate.record
            let current = counts[record.id] ?? (0, .max)
            counts[record.id] = (current.votes + 1, min(current.born, record.born))
        }
        return counts.map { Resolution.Tally(identifier: $0.key, votes: $0.value.votes, born: $0.value.born) }
            .sorted { a, b in
                if a.votes != b.votes { return a.votes > b.votes }
                if (a.identifier == preferred) != (b.identifier == preferred) { return a.identifier == preferred }
                if a.born != b.born { return a.born < b.born }
                return a.identifier < b.identifier
            }
    }

    /// The earliest `born` of `identifier` in the deciding tier.
    func birth(of identifier: Identifier) -> Int64? { births[identifier] }

    private static func tier(of entry: Entry, heldTier: Resolution.Tier, privateFiles: Bool) -> Resolution.Tier {
        switch entry.candidate.source {
        case .selection: .live
        case .held: privateFiles ? .live : heldTier
        case .fileSlot, .localCache, .vendorMirror: privateFiles ? .live : .durable
        }
    }

    /// Whether `record` counts under `binding`: an opted-out record binds
    /// nothing and needs no binding.
    private static func binds(_ record: SlotRecord, _ binding: ResetEvidence.Binding) -> Bool {
        switch binding {
        case .none: true
        case .key(let key): key.binds(record)
        case .unknown: record.optOut
        }
    }

    /// The first entry of `group` by `preferred`, falling back to canonical order.
    private static func best(_ group: [Entry], by preferred: (Entry, Entry) -> Bool) -> Entry {
        // Groups are built by appending, so they are never empty.
        var best = group[0]
        for entry in group.dropFirst() {
            if preferred(entry, best) || (!preferred(best, entry) && entry.rank < best.rank) {
                best = entry
            }
        }
        return best
    }

    /// Among equally fresh records of one app: the lowest slot, then the local cache, then the file slot.
    private static func sourcePreference(_ entry: Entry) -> (Int, Int) {
        switch entry.candidate.source {
        case .selection(let slot, _): (0, slot)
        case .localCache: (1, 0)
        case .fileSlot: (2, 0)
        case .vendorMirror: (3, 0)
        case .held: (4, 0)
        }
    }
}
