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
/// The rule (docs/PROTOCOL.md section 6), which every participating app
/// evaluates the same way:
///
/// 1. **Two tiers.** Durable ballots come from places only the user's own
///    processes can write: the file slots, the app's local cache, its
///    vendor's mirror, and (for an app that keeps files) the value it holds
///    in memory. Live ballots come from selection slots, which any client of
///    the X display can serve. When any durable ballot votes, the durable
///    tier alone decides and every live ballot is `outranked`; an attacker
///    who reaches only the display can then change nothing.
/// 2. **Durable tier**: one ballot per app (its local cache or its file slot,
///    the latest written); the vendor mirror speaks through the app that reads
///    it (when the app has no identifier of its own, or the mirror's was born
///    earlier). The most ballots win; a tie goes to the identifier born first,
///    then to the smallest.
/// 3. **Live tier** (only when no durable ballot votes): one ballot per X
///    client (its lowest slot), whatever app ids it claims; the app's own held
///    value is its ballot, and selections claiming its name do not replace it.
///    The most ballots win; a tie goes to the value the app already holds,
///    then to the identifier born first, then to the smallest. So k hostile
///    clients never beat k + 1 honest apps and never win a tie against the
///    value an app holds.
/// 4. Opted-out ballots abstain. Two X clients claiming one app are reported
///    as a `Conflict`; each still has its one ballot as an X client.
/// 5. Before all of this, the user's resets: a record of an older reset
///    generation than the current one is `superseded` and casts no ballot.
///    The current generation is the highest of the user's reset marker, the
///    durable records and the held value; selections cannot raise it.
///
/// Ties left after that are broken by the candidates' content alone, so any
/// two apps given the same candidates, in any order, reach the same result.
package struct Resolution: Sendable, Hashable {
    /// How the resulting identifier was chosen (`consensus`, `generated` or `kept-local`).
    package typealias Origin = Report.Origin

    /// Which kind of evidence decided.
    package typealias Tier = Report.Tier

    /// The votes one identifier received.
    package struct Tally: Sendable, Hashable {
        /// The identifier voted for.
        package let identifier: Identifier
        /// How many ballots named it.
        package let votes: Int
        /// The earliest `born` among those ballots.
        package let born: Int64
    }

    /// A candidate that did not vote, and why.
    package struct Ignored: Sendable, Hashable {
        /// Why a candidate did not vote.
        package enum Reason: Sendable, Hashable {
            /// Its X client's ballot is the record at `counted` (a lower slot).
            case sameClient(counted: Candidate.Source)
            /// Its app's ballot is the record at `counted`.
            case sameApp(counted: Candidate.Source)
            /// Its vendor's mirror is already represented by the copy at
            /// `counted` (the same mirror in another store).
            case sameVendor(counted: Candidate.Source)
            /// The ballot is opted out.
            case optedOut
            /// The record names a different app (file slot) or vendor (mirror)
            /// than the place it was found in, so it is not that place's to cast.
            case misplaced
            /// A live ballot while durable ballots decide: it arrived over the
            /// display alone, where anyone could have served it.
            case outranked
            /// The record belongs to an older reset generation than the current
            /// one: the user has reset the identifier since it was written.
            case superseded
            /// The record claims a later reset generation than the user's own
            /// evidence names: a selection above the current generation, or a
            /// durable record more than one above the reset marker. Only the
            /// user's reset raises the generation.
            case ahead
            /// The record is a selection of the current reset generation whose
            /// identifier is not bound to the user's reset key: whoever served
            /// it did not make it under the user's reset (docs/PROTOCOL.md §9).
            case unbound
        }

        /// The candidate.
        package let candidate: Candidate
        /// Why it did not vote.
        package let reason: Reason
    }

    /// Several X clients claim to be one app (or a client claims to be the
    /// resolving app with another identifier than the app holds): at most one
    /// of them is that app.
    package struct Conflict: Sendable, Hashable {
        /// The app id claimed.
        package let app: String
        /// The records that claim it, in canonical order.
        package let claims: [Candidate]
    }

    /// The app's local value and the consensus differ.
    package struct Disagreement: Sendable, Hashable {
        /// The app's local value.
        package let local: Identifier
        /// The winner of the vote.
        package let consensus: Identifier

        /// Describes a disagreement between `local` and `consensus`.
        package init(local: Identifier, consensus: Identifier) {
            self.local = local
            self.consensus = consensus
        }
    }

    /// The identifier to use.
    package let identifier: Identifier
    /// When `identifier` was first generated, in milliseconds since the epoch:
    /// the earliest `born` for it among the deciding tier's records, so that
    /// copying never makes an identifier younger.
    package let born: Int64
    /// How `identifier` was chosen.
    package let origin: Origin
    /// The user reset generation `identifier` belongs to (0 before any reset).
    package let generation: Int64
    /// The tier whose ballots decided, or nil when nobody voted.
    package let decidedBy: Tier?
    /// Every identifier that received votes, the winner first, in the order the rule ranks them.
    package let tally: [Tally]
    /// The ballots that named `identifier`.
    package let agreeing: [Candidate]
    /// The ballots that named another identifier.
    package let disagreeing: [Candidate]
    /// The candidates that did not vote, and why.
    package let ignored: [Ignored]
    /// Apps claimed by more than one X client.
    package let conflicts: [Conflict]
    /// The local value given up for the consensus, under `ResolutionPolicy.followConsensus`.
    package let replaced: Identifier?
    /// Set when the app's local value differs from the winner of the vote, under either policy.
    package let disagreement: Disagreement?
    /// Whether the live tier would have decided but X clients whose answers
    /// were spoiled could have outvoted its winner, so the selections cast no
    /// ballot (docs/PROTOCOL.md §6.3 item 6).
    package let undecided: Bool
    /// Whether `identifier` is only a guess until others confirm it: generated
    /// while the live tier was undecided, or such a value the app still holds
    /// with no ballot but its own for it (§6.4). A provisional identifier is
    /// written to no durable place, so it never outranks a later decided majority.
    package let provisional: Bool
    /// The identifier the live tier gives its ties to: the value the app holds
    /// (not for an app whose files are private), when the live tier decided.
    let liveTiesGoTo: Identifier?

    /// The winner of the vote, whether or not the app adopted it; `nil` when nobody voted.
    package var consensus: Identifier? { tally.first?.identifier }

    /// The number of votes per identifier.
    package var votes: [Identifier: Int] {
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
    ///   - held: The value the app holds in memory from its last resolution
    ///     (a running participant, or a handle that resolved before). It is
    ///     the app's own ballot where no stored copy of its own answers, so an
    ///     app that cannot read its own slot or files keeps what it has:
    ///     absence of ballots is not evidence of absence.
    ///   - keepsFiles: Whether the app keeps file copies; its held value then
    ///     stands for them in the durable tier, otherwise for its selection
    ///     slot in the live tier.
    ///   - policy: What to do when `local` and the consensus differ.
    ///   - app: The app that resolves, for whom the vendor mirror and the held
    ///     value speak; nil means the app of `local` or `held`, or else the app
    ///     named in the mirror's record.
    ///   - resetGeneration: The generation the user's reset marker names, 0
    ///     when there is none: records of older generations are superseded.
    ///   - fresh: Makes a new identifier and its birth time; called only when
    ///     nobody votes and there is no local value of the current generation.
    /// - Returns: The identifier to use, with the full account of the vote.
    package static func resolve(
        candidates: [Candidate],
        local: SlotRecord?,
        held: SlotRecord? = nil,
        keepsFiles: Bool = true,
        policy: ResolutionPolicy = .followConsensus,
        app: String? = nil,
        resetGeneration: Int64 = 0,
        fresh: () -> (identifier: Identifier, born: Int64)
    ) -> Resolution {
        resolve(
            candidates: candidates, local: local, held: held, keepsFiles: keepsFiles, policy: policy, app: app,
            reset: ResetEvidence(marker: resetGeneration > 0 ? .present(resetGeneration) : .absent), fresh: { _ in fresh() })
    }

    /// Runs the vote with all the user's reset evidence: the marker and its key.
    ///
    /// - Parameters:
    ///   - heldIsProvisional: Whether `held` is a provisional identifier (§6.4):
    ///     it then stands for no stored copy and is a live ballot, whether or not
    ///     the app keeps files.
    ///   - reset: What the reset marker and key say.
    ///   - unknownClients: The X clients whose answers were spoiled (§5): each
    ///     may have a ballot no one could read. The live tier decides only if
    ///     its winner wins whatever they vote.
    ///   - fresh: Makes a new identifier of the generation it is given, and its birth time.
    package static func resolve(
        candidates: [Candidate],
        local: SlotRecord?,
        held: SlotRecord? = nil,
        heldIsProvisional: Bool = false,
        keepsFiles: Bool = true,
        privateFiles: Bool = false,
        policy: ResolutionPolicy = .followConsensus,
        app: String? = nil,
        reset: ResetEvidence,
        unknownClients: Set<UInt32> = [],
        fresh: (_ generation: Int64) -> (identifier: Identifier, born: Int64)
    ) -> Resolution {
        let held = held.flatMap { $0.optOut ? nil : $0 }
        var all = candidates
        if let held { all.append(Candidate(held, from: .held)) }
        let resolvingApp = app ?? local?.app ?? held?.app
        let heldTier: Tier = keepsFiles && !heldIsProvisional ? .durable : .live
        var ballots = Ballots(all, app: resolvingApp, heldTier: heldTier, privateFiles: privateFiles, reset: reset)
        // A spoiled answer is an unknown ballot, not a lost one: without the
        // selections the app keeps its own value or generates one.
        let undecided = ballots.tier == .live && !isSettled(ballots, outstanding: unknownClients)
        if undecided {
            all.removeAll { if case .selection = $0.source { true } else { false } }
            ballots = Ballots(all, app: resolvingApp, heldTier: heldTier, privateFiles: privateFiles, reset: reset)
        }
        let tally = ballots.tally()
        // A value of an older generation is no value of the app's any more: the user reset it.
        let current = ballots.generation
        // Nor is one the user's evidence does not vouch for (`ahead`).
        // Nor is a cache holding another app's record (`misplaced`).
        let cached = local.flatMap { $0.optOut || $0.generation != current || $0.app != resolvingApp ? nil : $0 }
        let local = cached ?? held.flatMap { $0.generation != current ? nil : $0 }
        // A provisional held value is a guess, not a value of the app's own that
        // the policy keeps: a winner replaces it under either policy.
        let keeps = policy == .keepLocal && (cached != nil || !heldIsProvisional)

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
            if keeps {
                (identifier, born, origin) = (local.id, ballots.birth(of: local.id) ?? local.born, .keptLocal)
            } else {
                (identifier, born, origin) = (winner.identifier, ballots.birth(of: winner.identifier) ?? winner.born, .consensus)
                replaced = disagreement?.local
            }
        case (let winner?, nil):
            (identifier, born, origin) = (winner.identifier, ballots.birth(of: winner.identifier) ?? winner.born, .consensus)
        case (nil, let local?):
            // Nothing to follow: never trade a value the app already has for a new one.
            (identifier, born, origin) = (local.id, local.born, .keptLocal)
        case (nil, nil):
            let made = fresh(current)
            (identifier, born, origin) = (made.identifier, made.born, .generated)
        }

        let agreeing = ballots.voting.filter { $0.record.id == identifier }
        // Provisional until a ballot other than its own holder's is cast for it.
        let provisional =
            (origin == .generated && undecided)
            || (heldIsProvisional && identifier == held?.id && !agreeing.contains { $0 != ballots.ownLive && $0.source != .held })
        return Resolution(
            identifier: identifier, born: born, origin: origin, generation: current, decidedBy: ballots.tier, tally: tally,
            agreeing: agreeing, disagreeing: ballots.voting.filter { $0.record.id != identifier },
            ignored: ballots.ignored, conflicts: ballots.conflicts, replaced: replaced, disagreement: disagreement,
            undecided: undecided, provisional: provisional, liveTiesGoTo: ballots.preferred)
    }
}
