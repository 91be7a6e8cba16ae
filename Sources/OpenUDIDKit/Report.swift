import FoundationEssentials
import Glibc

/// Why an app reports the all-zero identifier: a token of docs/PROTOCOL.md
/// §12 (`optedOut`). New reasons may come in later versions.
public struct OptOut: RawRepresentable, Sendable, Hashable, Codable {
    /// The token, such as `app`.
    public let rawValue: String

    /// The reason spelled `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// This app opted out.
    public static let app = OptOut(rawValue: "app")
    /// The user opted out for every app.
    public static let user = OptOut(rawValue: "user")
    /// The app requires the user's consent (`Configuration.requiresConsent`) and
    /// has none recorded: nothing was read, generated, written or published.
    public static let noConsent = OptOut(rawValue: "no-consent")
}

/// What happened to one source during a resolution: `{name, state, records?, detail?}`.
/// Closed: a source was read, could not be, or was not asked; there is no fourth.
public enum SourceStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    /// It was read; this many valid records came from it.
    case read(Report.Place, records: Int)
    /// It could not be read: what it holds is unknown, and nothing is written to it.
    case unavailable(Report.Place, String)
    /// It was not used (no display configured, no mirror chosen), and why.
    case notUsed(Report.Place, String)

    /// The source.
    public var place: Report.Place {
        switch self {
        case .read(let place, _), .unavailable(let place, _), .notUsed(let place, _): place
        }
    }

    /// Whether the source answered.
    public var isAvailable: Bool { if case .read = self { true } else { false } }

    /// A description for people: `selections: 3 record(s)`.
    public var description: String {
        switch self {
        case .read(let place, let count): "\(place.sourceName): \(count) record(s)"
        case .unavailable(let place, let why): "\(place.sourceName): unavailable: \(why)"
        case .notUsed(let place, let why): "\(place.sourceName): not used: \(why)"
        }
    }

    private enum CodingKeys: String, CodingKey { case name, state, records, detail }

    /// Decodes `{name, state, records?, detail?}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        guard let place = Report.Place(sourceName: name) else {
            throw DecodingError.dataCorruptedError(forKey: .name, in: container, debugDescription: "unknown source \(name)")
        }
        let detail = try container.decodeIfPresent(String.self, forKey: .detail) ?? ""
        switch try container.decode(String.self, forKey: .state) {
        case "read": self = .read(place, records: try container.decodeIfPresent(Int.self, forKey: .records) ?? 0)
        case "unavailable": self = .unavailable(place, detail)
        case "not-used": self = .notUsed(place, detail)
        case let state: throw DecodingError.dataCorruptedError(forKey: .state, in: container, debugDescription: "unknown state \(state)")
        }
    }

    /// Encodes `{name, state, records?, detail?}`: `records` when read, `detail` otherwise.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(place.sourceName, forKey: .name)
        switch self {
        case .read(_, let records):
            try container.encode("read", forKey: .state)
            try container.encode(records, forKey: .records)
        case .unavailable(_, let why):
            try container.encode("unavailable", forKey: .state)
            try container.encode(why, forKey: .detail)
        case .notUsed(_, let why):
            try container.encode("not-used", forKey: .state)
            try container.encode(why, forKey: .detail)
        }
    }
}

/// What an app did to one place it owns after resolving: `{place, outcome, detail?}`.
/// Closed: a place was written, held the winner already, was left alone, or
/// the write failed; there is no fifth.
public enum Repair: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The winner was written.
    case written(Report.Place)
    /// The place already held the winner.
    case unchanged(Report.Place)
    /// Not written, and why (for example: the store could not be read, so it is left alone).
    case skipped(Report.Place, String)
    /// Writing failed, and why; the old content is intact.
    case failed(Report.Place, String)

    /// The place.
    public var place: Report.Place {
        switch self {
        case .written(let place), .unchanged(let place), .skipped(let place, _), .failed(let place, _): place
        }
    }

    /// A description for people: `file slot: written`.
    public var description: String {
        switch self {
        case .written(let place): "\(place.repairName): written"
        case .unchanged(let place): "\(place.repairName): unchanged"
        case .skipped(let place, let why): "\(place.repairName): skipped: \(why)"
        case .failed(let place, let why): "\(place.repairName): failed: \(why)"
        }
    }

    private enum CodingKeys: String, CodingKey { case place, outcome, detail }

    /// Decodes `{place, outcome, detail?}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .place)
        guard let place = Report.Place(repairName: name) else {
            throw DecodingError.dataCorruptedError(forKey: .place, in: container, debugDescription: "unknown place \(name)")
        }
        let detail = try container.decodeIfPresent(String.self, forKey: .detail) ?? ""
        switch try container.decode(String.self, forKey: .outcome) {
        case "written": self = .written(place)
        case "unchanged": self = .unchanged(place)
        case "skipped": self = .skipped(place, detail)
        case "failed": self = .failed(place, detail)
        case let outcome:
            throw DecodingError.dataCorruptedError(forKey: .outcome, in: container, debugDescription: "unknown outcome \(outcome)")
        }
    }

    /// Encodes `{place, outcome, detail?}`: `detail` when skipped or failed.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(place.repairName, forKey: .place)
        switch self {
        case .written: try container.encode("written", forKey: .outcome)
        case .unchanged: try container.encode("unchanged", forKey: .outcome)
        case .skipped(_, let why):
            try container.encode("skipped", forKey: .outcome)
            try container.encode(why, forKey: .detail)
        case .failed(_, let why):
            try container.encode("failed", forKey: .outcome)
            try container.encode(why, forKey: .detail)
        }
    }
}

/// The outcome of one resolution, with its provenance: what `openudid get --json`
/// prints, key for key (docs/PROTOCOL.md §12), and what it decodes back to.
///
/// Every value that says *why* is typed: an enum, or an open struct
/// (`Rejection.Code`) where later versions may add tokens. Free text sits in
/// `Rejection.reason` and the payloads of `SourceStatus` and `Repair` only.
public struct Report: Sendable, Hashable {
    /// A kind of place that holds the identifier; its raw value is a ballot's
    /// `kind`. New places may come in later versions.
    public struct Place: RawRepresentable, Sendable, Hashable, Codable {
        /// The token, such as `file-slot`.
        public let rawValue: String

        /// The place spelled `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The selection slots (`selections` as a source, `selection slot` as a repair).
        public static let selection = Place(rawValue: "selection")
        /// The apps' file slots (`file-slots` as a source, `file slot` as a repair).
        public static let fileSlot = Place(rawValue: "file-slot")
        /// The resolving app's local cache (`local-cache`, `local cache`).
        public static let localCache = Place(rawValue: "local-cache")
        /// The vendor mirror (`mirror`).
        public static let mirror = Place(rawValue: "mirror")
        /// The value the resolving app holds in memory: a ballot only.
        public static let held = Place(rawValue: "held")
        /// Every place this version knows.
        static let known: [Place] = [.selection, .fileSlot, .localCache, .mirror, .held]
    }

    /// How the identifier came about: `origin`. New origins may come in later versions.
    public struct Origin: RawRepresentable, Sendable, Hashable, Codable {
        /// The token, such as `kept-local`.
        public let rawValue: String

        /// The origin spelled `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The app adopted the vote's winner.
        public static let consensus = Origin(rawValue: "consensus")
        /// Nobody voted; the app generated a new identifier.
        public static let generated = Origin(rawValue: "generated")
        /// The app kept its own value, against the vote (keep policy) or because nobody voted.
        public static let keptLocal = Origin(rawValue: "kept-local")
        /// The app reports the all-zero identifier (`optOut` says why).
        public static let optedOut = Origin(rawValue: "opted-out")
    }

    /// A tier of the vote (§6.1): `decidedBy`. Closed: the protocol has two
    /// tiers, by who can write a ballot, and a third would be another protocol.
    public enum Tier: String, Sendable, Hashable, Codable {
        /// File slots, local caches, vendor mirrors, a file-keeping app's held value:
        /// places only the user's own processes can write.
        case durable
        /// Selection records, and a selection-only app's held value: any client of the display can serve them.
        case live
    }

    /// One identifier's count in the tally: `{id, votes, born}`.
    public struct Vote: Sendable, Hashable, Codable {
        /// The identifier voted for.
        public let identifier: Identifier
        /// How many ballots named it.
        public let votes: Int
        /// The earliest `born` among those ballots.
        public let born: Int64

        private enum CodingKeys: String, CodingKey {
            case identifier = "id"
            case votes, born
        }
    }

    /// A record offered to the vote: `{source, kind, app, id, born}`.
    public struct Ballot: Sendable, Hashable, Codable {
        /// Where it was found, for a person: `slot 3 (X client 0x1a00000)`, `file slot of "com.acme.notes"`.
        public let source: String
        /// The kind of place it was found in.
        public let kind: Place
        /// The app the record names.
        public let app: String
        /// The identifier it offers.
        public let identifier: Identifier
        /// When that identifier was first generated (ms since 1970).
        public let born: Int64

        private enum CodingKeys: String, CodingKey {
            case identifier = "id"
            case source, kind, app, born
        }
    }

    /// A record that did not vote: `{candidate, reason, counted?}`.
    public struct Ignored: Sendable, Hashable, Codable {
        /// Why a record did not vote: `ignored[].reason`. New reasons may
        /// come in later versions (three did in 0.3.0).
        public struct Reason: RawRepresentable, Sendable, Hashable, Codable {
            /// The token, such as `same-client`.
            public let rawValue: String

            /// The reason spelled `rawValue`.
            public init(rawValue: String) { self.rawValue = rawValue }

            /// Its X client's ballot is its record in a lower slot (`counted`).
            public static let sameClient = Reason(rawValue: "same-client")
            /// Its app's ballot is another record (`counted`).
            public static let sameApp = Reason(rawValue: "same-app")
            /// The same vendor's mirror in another store is counted (`counted`).
            public static let sameVendor = Reason(rawValue: "same-vendor")
            /// It is an opted-out record.
            public static let optedOut = Reason(rawValue: "opted-out")
            /// It names another app (file slot) or vendor (mirror) than its place.
            public static let misplaced = Reason(rawValue: "misplaced")
            /// It is a live ballot while durable ballots decide.
            public static let outranked = Reason(rawValue: "outranked")
            /// It belongs to an older reset generation than the current one.
            public static let superseded = Reason(rawValue: "superseded")
            /// It claims a later reset generation than the user's own evidence names.
            public static let ahead = Reason(rawValue: "ahead")
            /// It is a selection of the current generation not bound to the user's reset key, or whose key is unknown.
            public static let unbound = Reason(rawValue: "unbound")
        }

        /// The record.
        public let ballot: Ballot
        /// Why it did not vote.
        public let reason: Reason
        /// Where the ballot counted instead is, for the reasons that name one.
        public let counted: String?

        private enum CodingKeys: String, CodingKey {
            case ballot = "candidate"
            case reason, counted
        }
    }

    /// An app claimed by more than one X client: `{app, claims}`.
    public struct Conflict: Sendable, Hashable, Codable {
        /// The app id claimed.
        public let app: String
        /// Every claim, the app's own value among them where it differs.
        public let claims: [Ballot]
    }

    /// The app that resolved (`app` and `vendor`).
    public let app: AppIdentity
    /// The shared identifier (`id`; all zero when opted out).
    public let identifier: Identifier
    /// When the identifier was first generated (ms since 1970), when known.
    public let born: Int64?
    /// The user reset generation of the identifier: 0 until the user first
    /// resets it (`OpenUDID.User.reset()`), then one more with each reset.
    public let generation: Int64
    /// Why the app reports the all-zero identifier (`optedOut`), or nil.
    public let optOut: OptOut?
    /// The selection slot this app serves, when it participates.
    public internal(set) var slot: Int?
    /// How the identifier came about.
    public let origin: Origin
    /// Whether the identifier is only a guess until other apps confirm it: it
    /// was generated while spoiled answers left the live vote undecided, and is
    /// kept out of every durable place until a decided vote takes it or
    /// replaces it (docs/PROTOCOL.md §6.4).
    public let provisional: Bool
    /// The tier whose ballots decided, or nil when nobody voted.
    public let decidedBy: Tier?
    /// Every identifier that received votes, the winner first.
    public let votes: [Vote]
    /// The ballots that named `identifier`.
    public let agreeing: [Ballot]
    /// The ballots that named another identifier.
    public let disagreeing: [Ballot]
    /// The records that did not vote, and why.
    public let ignored: [Ignored]
    /// Apps claimed by more than one X client.
    public let conflicts: [Conflict]
    /// The app's own value given up for the consensus (follow policy), or nil.
    public let replaced: Identifier?
    /// Each source and what happened to it.
    public let sources: [SourceStatus]
    /// Records found but not counted.
    public let rejected: [Rejection]
    /// What was written where afterwards.
    public let repairs: [Repair]
    /// The mirror store used (`.secretService` or `.file`), or nil for none (`mirror.store`).
    public let mirrorStore: MirrorChoice?
    /// The mirror's record for this app's vendor as read, if it held one (`mirror.record`).
    public let mirrorRecord: SlotRecord?
    /// Why the automatic choice used the file store rather than the Secret
    /// Service, as the bus or the service answered (`mirror.detail`); nil when it did not pass one over.
    public let mirrorDetail: String?
    /// What about the session limits sharing (a sandbox, no X server), one
    /// note each; empty in an ordinary X11 session.
    public let environment: [EnvironmentNote]

    /// The identifier derived for this app alone (docs/PROTOCOL.md §11);
    /// all zero when opted out.
    public var appScoped: UUID {
        if identifier.isOptedOut { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
        return AppScopedIdentifier(shared: identifier.bytes, appID: app.id).uuid
    }

    /// The app's own value and the vote's winner, when they differ: under the
    /// follow policy the value given up, under the keep policy the value kept.
    public var disagreement: (local: Identifier, consensus: Identifier)? {
        if let replaced { return (replaced, identifier) }
        if origin == .keptLocal, let winner = votes.first?.identifier, winner != identifier { return (identifier, winner) }
        return nil
    }
}

extension Report {
    /// A report from the vote's full account, as the engine makes one.
    ///
    /// - Parameters:
    ///   - resolution: The vote, or nil when none was held (opted out).
    ///   - mirrorStore: The mirror store's name (`secret-service`, `file`), or nil.
    ///   - mirrorDetail: Why the Secret Service was passed over for the file store, or nil.
    package init(
        app: AppIdentity, identifier: Identifier, born: Int64?, optOut: OptOut?, resolution: Resolution?,
        sources: [SourceStatus], rejected: [Rejection], repairs: [Repair], mirrorStore: String?, mirrorRecord: SlotRecord?,
        mirrorDetail: String? = nil, slot: Int?, environment: [EnvironmentNote] = [], generation: Int64 = 0
    ) {
        self.init(
            app: app, identifier: identifier, born: born, generation: generation, optOut: optOut, slot: slot,
            origin: resolution?.origin ?? .optedOut, provisional: resolution?.provisional ?? false,
            decidedBy: resolution?.decidedBy,
            votes: resolution?.tally.map { Vote(identifier: $0.identifier, votes: $0.votes, born: $0.born) } ?? [],
            agreeing: resolution?.agreeing.map(Ballot.init) ?? [], disagreeing: resolution?.disagreeing.map(Ballot.init) ?? [],
            ignored: resolution?.ignored.map {
                Ignored(ballot: Ballot($0.candidate), reason: Ignored.Reason($0.reason), counted: $0.reason.counted?.description)
            } ?? [],
            conflicts: resolution?.conflicts.map { Conflict(app: $0.app, claims: $0.claims.map(Ballot.init)) } ?? [],
            replaced: resolution?.replaced, sources: sources, rejected: rejected, repairs: repairs,
            mirrorStore: mirrorStore.flatMap(MirrorChoice.init(name:)), mirrorRecord: mirrorRecord, mirrorDetail: mirrorDetail,
            environment: environment)
    }
}

extension Report.Place {
    /// The place's name as a source: `selections`, `file-slots`, `local-cache`, `mirror`.
    package var sourceName: String {
        switch self {
        case .selection: "selections"
        case .fileSlot: "file-slots"
        default: rawValue
        }
    }

    /// The place's name in a repair: `selection slot`, `file slot`, `local cache`, `mirror`.
    package var repairName: String {
        switch self {
        case .selection: "selection slot"
        case .fileSlot: "file slot"
        case .localCache: "local cache"
        default: rawValue
        }
    }

    /// The place whose source name is `sourceName`.
    package init?(sourceName: String) {
        guard let place = Self.known.first(where: { $0.sourceName == sourceName }) else { return nil }
        self = place
    }

    /// The place whose repair name is `repairName`.
    package init?(repairName: String) {
        guard let place = Self.known.first(where: { $0.repairName == repairName }) else { return nil }
        self = place
    }

    /// The kind of place a candidate's source is.
    init(_ source: Candidate.Source) {
        switch source {
        case .selection: self = .selection
        case .fileSlot: self = .fileSlot
        case .localCache: self = .localCache
        case .vendorMirror: self = .mirror
        case .held: self = .held
        }
    }
}

extension Report.Ballot {
    /// The ballot of a candidate.
    init(_ candidate: Candidate) {
        self.init(
            source: candidate.source.description, kind: Report.Place(candidate.source), app: candidate.record.app,
            identifier: candidate.record.id, born: candidate.record.born)
    }
}

extension Report.Ignored.Reason {
    /// The reason a candidate did not vote.
    package init(_ reason: Resolution.Ignored.Reason) {
        switch reason {
        case .sameClient: self = .sameClient
        case .sameApp: self = .sameApp
        case .sameVendor: self = .sameVendor
        case .optedOut: self = .optedOut
        case .misplaced: self = .misplaced
        case .outranked: self = .outranked
        case .superseded: self = .superseded
        case .ahead: self = .ahead
        case .unbound: self = .unbound
        }
    }
}

extension Resolution.Ignored.Reason {
    /// The ballot counted instead, where the reason names one.
    package var counted: Candidate.Source? {
        switch self {
        case .sameClient(let source), .sameApp(let source), .sameVendor(let source): source
        case .optedOut, .misplaced, .outranked, .superseded, .ahead, .unbound: nil
        }
    }
}

extension Report {
    /// The identifier this report settled on, as the app's held value for the
    /// next resolution; nil when opted out.
    var heldRecord: SlotRecord? {
        guard optOut == nil, let born, !identifier.isOptedOut else { return nil }
        return SlotRecord(
            id: identifier, app: app.id, vendor: app.vendor, born: born, written: born, optOut: false, generation: generation)
    }

    /// The selection slots whose owner did not answer in this pass: not waited
    /// for (the vote settled without them) or silent until the deadline.
    /// Slots read again later: silent ones, and spoiled ones, whose owner may be
    /// heard once the client that writes into its answers stops.
    var silentSlots: [Rejection] {
        rejected.filter { [.notAwaited, .noAnswer, .spoiled].contains($0.code) }
    }

    /// The same report, naming `slot` as the app's selection slot.
    func with(slot: Int?) -> Report {
        var report = self
        report.slot = slot
        return report
    }
}
