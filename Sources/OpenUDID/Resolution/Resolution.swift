/// What an app does when its own stored value and the consensus differ.
public enum ResolutionPolicy: Sendable, Hashable {
    /// Adopt the consensus and report what was replaced, so that apps converge.
    case followConsensus
    /// Keep the local value and report the disagreement (the original
    /// OpenUDID's behaviour, under which groups of apps can disagree forever).
    case keepLocal
}

/// The outcome of the vote: which identifier an app uses, and why.
///
/// The rule, which every participating app evaluates the same way so that
/// they converge on one value:
///
/// 1. Among selections, each X client has one ballot: the record in its
///    lowest-numbered slot. A client that fills fifty slots still votes once.
/// 2. Each app id has one ballot across selections, file slots and the local
///    cache: its live selection if it has one (the latest `written` among
///    several, then the lowest slot), otherwise its latest-written record,
///    the local cache winning a tie.
/// 3. The vendor mirror is not a ballot of its own: only the app that reads
///    it sees it, and a vote that some apps count and others cannot see would
///    split apps of different vendors for good. It speaks through the app
///    that reads it instead: that app votes the mirror's identifier when it has
///    no record of its own, or when the mirror's identifier was born earlier
///    than its own (an older identifier kept in the durable store beats one
///    the app came to hold later, for example while the store was locked).
///    The app then publishes what it resolved, so the others see that ballot.
/// 4. A ballot that is opted out does not vote.
/// 5. The identifier with the most votes wins; a tie goes to the one born
///    first (an identifier's birth is the earliest `born` among its ballots),
///    then to the smallest identifier.
///
/// Ties left after that are broken by the candidates' content alone, so any
/// two apps given the same candidates, in any order, reach the same result.
public struct Resolution: Sendable, Hashable {
    /// How the resulting identifier was chosen.
    public enum Origin: Sendable, Hashable {
        /// It won the vote.
        case consensus
        /// Nobody voted, so it was newly generated.
        case generated
        /// It is the app's local value, kept by `ResolutionPolicy.keepLocal`
        /// or because nobody voted.
        case keptLocal
    }

    /// The votes one identifier received.
    public struct Tally: Sendable, Hashable {
        /// The identifier voted for.
        public let identifier: Identifier
        /// How many ballots named it.
        public let votes: Int
        /// The earliest `born` among those ballots.
        public let born: Int64
    }

    /// A candidate that did not vote, and why.
    public struct Ignored: Sendable, Hashable {
        /// Why a candidate did not vote.
        public enum Reason: Sendable, Hashable {
            /// Its X client's ballot is the record at `counted` (a lower slot).
            case sameClient(counted: Candidate.Source)
            /// Its app's ballot is the record at `counted`.
            case sameApp(counted: Candidate.Source)
            /// Its vendor is already represented by the ballot at `counted`: the
            /// mirror's copy in another store, or an app of the vendor that
            /// votes for the same identifier.
            case sameVendor(counted: Candidate.Source)
            /// The ballot is opted out.
            case optedOut
            /// The record names a different app (file slot) or vendor (mirror)
            /// than the place it was found in, so it is not that place's to cast.
            case misplaced
        }

        /// The candidate.
        public let candidate: Candidate
        /// Why it did not vote.
        public let reason: Reason
    }

    /// The app's local value and the consensus differ.
    public struct Disagreement: Sendable, Hashable {
        /// The app's local value.
        public let local: Identifier
        /// The winner of the vote.
        public let consensus: Identifier

        /// Describes a disagreement between `local` and `consensus`.
        public init(local: Identifier, consensus: Identifier) {
            self.local = local
            self.consensus = consensus
        }
    }

    /// The identifier to use.
    public let identifier: Identifier
    /// When `identifier` was first generated, in milliseconds since the epoch.
    public let born: Int64
    /// How `identifier` was chosen.
    public let origin: Origin
    /// Every identifier that received votes, the winner first, in the order the rule ranks them.
    public let tally: [Tally]
    /// The ballots that named `identifier`.
    public let agreeing: [Candidate]
    /// The ballots that named another identifier.
    public let disagreeing: [Candidate]
    /// The candidates that did not vote, and why.
    public let ignored: [Ignored]
    /// The local value given up for the consensus, under `ResolutionPolicy.followConsensus`.
    public let replaced: Identifier?
    /// Set when the app's local value differs from the winner of the vote, under either policy.
    public let disagreement: Disagreement?

    /// The winner of the vote, whether or not the app adopted it; `nil` when nobody voted.
    public var consensus: Identifier? { tally.first?.identifier }

    /// The number of votes per identifier.
    public var votes: [Identifier: Int] {
        Dictionary(uniqueKeysWithValues: tally.map { ($0.identifier, $0.votes) })
    }

    /// Runs the vote. A pure function: no I/O, no clock, no randomness of its own.
    ///
    /// - Parameters:
    ///   - candidates: Every validated record found, with where it was found.
    ///     Include the app's own local cache here as a `.localCache` candidate
    ///     for it to vote.
    ///   - local: The app's own stored value, which `policy` weighs against
    ///     the consensus. An opted-out record counts as no value: whether the
    ///     app itself opted out is decided before resolving.
    ///   - policy: What to do when `local` and the consensus differ.
    ///   - app: The app that resolves, for whom the vendor mirror speaks; nil
    ///     means the app of `local`, or else the app named in the mirror's record.
    ///   - fresh: Makes a new identifier and its birth time; called only when
    ///     nobody votes and there is no local value.
    /// - Returns: The identifier to use, with the full account of the vote.
    public static func resolve(
        candidates: [Candidate],
        local: SlotRecord?,
        policy: ResolutionPolicy = .followConsensus,
        app: String? = nil,
        fresh: () -> (identifier: Identifier, born: Int64)
    ) -> Resolution {
        let ballots = Ballots(candidates, app: app ?? local?.app)
        let tally = ballots.tally()
        let local = local.flatMap { $0.optOut ? nil : $0 }

        let identifier: Identifier
        let born: Int64
        let origin: Origin
        var replaced: Identifier?
        var disagreement: Disagreement?

        switch (tally.first, local) {
        case (let winner?, let local?):
            if local.id != winner.identifier {
                disagreement = Disagreement(local: local.id, consensus: winner.identifier)
            }
            if policy == .keepLocal {
                (identifier, born, origin) = (local.id, local.born, .keptLocal)
            } else {
                (identifier, born, origin) = (winner.identifier, winner.born, .consensus)
                replaced = disagreement?.local
            }
        case (let winner?, nil):
            (identifier, born, origin) = (winner.identifier, winner.born, .consensus)
        case (nil, let local?):
            // Nothing to follow: never trade a value the app already has for a new one.
            (identifier, born, origin) = (local.id, local.born, .keptLocal)
        case (nil, nil):
            let made = fresh()
            (identifier, born, origin) = (made.identifier, made.born, .generated)
        }

        return Resolution(
            identifier: identifier, born: born, origin: origin, tally: tally,
            agreeing: ballots.voting.filter { $0.record.id == identifier },
            disagreeing: ballots.voting.filter { $0.record.id != identifier },
            ignored: ballots.ignored, replaced: replaced, disagreement: disagreement)
    }
}

/// The voting rule's steps 1 to 4: who gets a ballot.
private struct Ballots {
    /// The candidates that vote, in canonical order.
    private(set) var voting: [Candidate] = []
    /// The rest, in canonical order.
    private(set) var ignored: [Resolution.Ignored] = []

    private struct Entry {
        let candidate: Candidate
        /// Position in the canonical order: the last resort of every tie-break.
        let rank: Int
        var record: SlotRecord { candidate.record }
    }

    init(_ candidates: [Candidate], app: String?) {
        let entries = candidates.map { ($0, $0.sourceKey()) }
            .sorted { $0.0.precedes($1.0, sourceKeys: ($0.1, $1.1)) }
            .enumerated().map { Entry(candidate: $0.element.0, rank: $0.offset) }
        var ignored: [(Entry, Resolution.Ignored.Reason)] = []

        var selectionsByClient: [UInt32: [Entry]] = [:]
        var byApp: [String: [Entry]] = [:]
        var mirrorsByVendor: [String: [Entry]] = [:]
        for entry in entries {
            switch entry.candidate.source {
            case .selection(_, let client):
                selectionsByClient[client, default: []].append(entry)
            case .fileSlot(let app) where app != entry.record.app:
                ignored.append((entry, .misplaced))
            case .fileSlot, .localCache:
                byApp[entry.record.app, default: []].append(entry)
            case .vendorMirror(_, let vendor) where vendor != entry.record.vendor:
                ignored.append((entry, .misplaced))
            case .vendorMirror(_, let vendor):
                mirrorsByVendor[vendor, default: []].append(entry)
            }
        }

        // Step 1: one ballot per X client, from its lowest slot.
        for group in selectionsByClient.values {
            let kept = Self.best(group) { Self.sourcePreference($0) < Self.sourcePreference($1) }
            for entry in group where entry.rank != kept.rank {
                ignored.append((entry, .sameClient(counted: kept.candidate.source)))
            }
            byApp[kept.record.app, default: []].append(kept)
        }

        // Step 2: one ballot per app; a live selection speaks for its app.
        var representatives: [String: Entry] = [:]
        for group in byApp.values {
            let kept = Self.best(group) { a, b in
                let aLive = Self.slot(a) != nil
                let bLive = Self.slot(b) != nil
                if aLive != bLive { return aLive }
                if a.record.written != b.record.written { return a.record.written > b.record.written }
                return Self.sourcePreference(a) < Self.sourcePreference(b)
            }
            for entry in group where entry.rank != kept.rank {
                ignored.append((entry, .sameApp(counted: kept.candidate.source)))
            }
            representatives[kept.record.app] = kept
        }

        // Step 3: the mirror speaks through the app that reads it.
        // In canonical order, so that several mirrors speaking for one reader
        // (never the case for an app, which reads its own vendor's) settle alike.
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
            let older = !mirror.record.optOut && !own.record.optOut && mirror.record.born < own.record.born
            if older {
                ignored.append((own, .sameApp(counted: mirror.candidate.source)))
                representatives[reader] = mirror
            } else {
                ignored.append((mirror, .sameApp(counted: own.candidate.source)))
            }
        }

        // Step 4: an opted-out ballot abstains.
        var voting: [Entry] = []
        for entry in representatives.values {
            if entry.record.optOut {
                ignored.append((entry, .optedOut))
            } else {
                voting.append(entry)
            }
        }

        self.voting = voting.sorted { $0.rank < $1.rank }.map(\.candidate)
        self.ignored = ignored.sorted { $0.0.rank < $1.0.rank }
            .map { Resolution.Ignored(candidate: $0.0.candidate, reason: $0.1) }
    }

    /// Step 5: counts the ballots and ranks the identifiers.
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
                if a.born != b.born { return a.born < b.born }
                return a.identifier < b.identifier
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

    private static func slot(_ entry: Entry) -> Int? {
        if case .selection(let slot, _) = entry.candidate.source { return slot }
        return nil
    }

    /// Among equally fresh records of one app: the lowest slot, then the local cache, then the file slot.
    private static func sourcePreference(_ entry: Entry) -> (Int, Int) {
        switch entry.candidate.source {
        case .selection(let slot, _): (0, slot)
        case .localCache: (1, 0)
        case .fileSlot: (2, 0)
        case .vendorMirror: (3, 0)
        }
    }
}
