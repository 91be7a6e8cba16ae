import FoundationEssentials
import Glibc

extension Report: Encodable {
    /// The report as docs/PROTOCOL.md §12 describes it: plain values, and a
    /// fixed token wherever a value says *why*.
    ///
    /// `Report` itself holds the vote's own types; its document is what a
    /// program reads back (`openudid get --json` prints it), so it decodes too.
    public struct Document: Codable, Sendable, Hashable {
        /// How the identifier came about: §12 `origin`.
        public enum Origin: String, Codable, Sendable, Hashable {
            /// The app adopted the vote's winner.
            case consensus
            /// Nobody voted; the app generated a new identifier.
            case generated
            /// The app kept its own value against the vote (keep policy).
            case keptLocal = "kept-local"
            /// The app reports the all-zero identifier.
            case optedOut = "opted-out"
        }

        /// A tier of the vote: §6.1.
        public enum Tier: String, Codable, Sendable, Hashable {
            /// File slots, local caches, vendor mirrors, a file-keeping app's held value.
            case durable
            /// Selection records, and a selection-only app's held value.
            case live
        }

        /// The kind of place a ballot came from.
        public enum Kind: String, Codable, Sendable, Hashable {
            /// A selection slot.
            case selection
            /// An app's file slot.
            case fileSlot = "file-slot"
            /// The resolving app's local cache.
            case localCache = "local-cache"
            /// A vendor mirror.
            case mirror
            /// The value the resolving app holds in memory.
            case held
        }

        /// Why a record did not vote: §12 `ignored[].reason`.
        public enum IgnoredReason: String, Codable, Sendable, Hashable {
            /// Its X client's ballot is another of its records.
            case sameClient = "same-client"
            /// Its app's ballot is another record.
            case sameApp = "same-app"
            /// The same vendor's mirror in another store is counted.
            case sameVendor = "same-vendor"
            /// It is an opted-out record.
            case optedOut = "opted-out"
            /// It names another app or vendor than its place.
            case misplaced
            /// It is a selection record while durable ballots decide.
            case outranked
            /// It belongs to a reset generation older than the current one.
            case superseded
            /// It claims a later reset generation than the user's own evidence names.
            case ahead
            /// It claims the current reset generation with an identifier not bound to the user's reset.
            case unbound
        }

        /// What happened to a source.
        public enum SourceState: String, Codable, Sendable, Hashable {
            /// It was read.
            case read
            /// It could not be read: what it holds is unknown.
            case unavailable
            /// It was not used.
            case notUsed = "not-used"
        }

        /// What happened to a place after the vote.
        public enum RepairOutcome: String, Codable, Sendable, Hashable {
            /// The winner was written.
            case written
            /// The place already held the winner.
            case unchanged
            /// Not written, and why.
            case skipped
            /// Writing failed; the old content is intact.
            case failed
        }

        /// One identifier's count: `{id, votes, born}`.
        public struct Vote: Codable, Sendable, Hashable {
            /// The identifier.
            public var id: String
            /// Its ballots.
            public var votes: Int
            /// Its earliest `born` among them.
            public var born: Int64
        }

        /// A record offered to the vote: `{source, kind, app, id, born}`.
        public struct Ballot: Codable, Sendable, Hashable {
            /// The place, for a person: `slot 3 (X client 0x1a00000)`.
            public var source: String
            /// The kind of place.
            public var kind: Kind
            /// The app the record names.
            public var app: String
            /// The identifier it offers.
            public var id: String
            /// Its `born`.
            public var born: Int64
        }

        /// A record that did not vote: `{candidate, reason, counted?}`.
        public struct Ignored: Codable, Sendable, Hashable {
            /// The record.
            public var candidate: Ballot
            /// Why it did not vote.
            public var reason: IgnoredReason
            /// The place of the ballot counted instead, where the reason names one.
            public var counted: String?
        }

        /// An app claimed by more than one X client: `{app, claims}`.
        public struct Conflict: Codable, Sendable, Hashable {
            /// The app claimed.
            public var app: String
            /// Every claim, the app's own value among them where it differs.
            public var claims: [Ballot]
        }

        /// The app's own value kept against the consensus: `{local, consensus}`.
        public struct Disagreement: Codable, Sendable, Hashable {
            /// The value kept.
            public var local: String
            /// The vote's winner.
            public var consensus: String
        }

        /// A source and what happened to it: `{name, state, records?, detail?}`.
        public struct Source: Codable, Sendable, Hashable {
            /// `selections`, `file-slots`, `local-cache` or `mirror`.
            public var name: String
            /// What happened to it.
            public var state: SourceState
            /// The valid records read, when `state` is `read`.
            public var records: Int?
            /// Why, when the source was not read.
            public var detail: String?
        }

        /// A record found but refused: `{place, code, reason}`.
        public struct Rejected: Codable, Sendable, Hashable {
            /// Where it was found.
            public var place: String
            /// A record token of §3 or one of the codes §12 lists.
            public var code: String
            /// The same, for a person.
            public var reason: String
        }

        /// What was written to a place: `{place, outcome, detail?}`.
        public struct Repair: Codable, Sendable, Hashable {
            /// `selection slot`, `file slot`, `local cache` or `mirror`.
            public var place: String
            /// What happened.
            public var outcome: RepairOutcome
            /// Why, when it was skipped or failed.
            public var detail: String?
        }

        /// A record's wire fields (§3).
        public struct Record: Codable, Sendable, Hashable {
            /// The protocol version.
            public var v: Int
            /// The identifier: 40 hex digits.
            public var id: String
            /// The app that wrote it.
            public var app: String
            /// Its vendor.
            public var vendor: String
            /// When the identifier was first generated (ms since 1970).
            public var born: Int64
            /// When the record was written (ms since 1970).
            public var written: Int64
            /// Whether it is an opted-out record.
            public var optOut: Bool
            /// Its reset generation; absent for generation 0, as on the wire.
            public var generation: Int64?
        }

        /// The vendor mirror: `{store, record}`.
        public struct Mirror: Codable, Sendable, Hashable {
            /// `secret-service`, `file`, or nil for none.
            public var store: String?
            /// The mirror's record as read, if it held one.
            public var record: Record?

            /// Writes both keys, `null` where absent.
            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(store, forKey: .store)
                try container.encode(record, forKey: .record)
            }
        }

        /// The shared identifier: 40 hex digits.
        public var id: String
        /// The app-scoped identifier: a lowercase UUID.
        public var appScoped: String
        /// The app that resolved.
        public var app: String
        /// Its vendor.
        public var vendor: String
        /// Why the identifier is all zero, or nil.
        public var optedOut: OptOut?
        /// The identifier's birth (ms since 1970), when known.
        public var born: Int64?
        /// The user reset generation of the identifier (absent in documents of
        /// versions before resets existed, read as 0).
        public var generation: Int64?
        /// The selection slot the app serves, or nil.
        public var slot: Int?
        /// How the identifier came about.
        public var origin: Origin
        /// The tier that decided, or nil when nobody voted.
        public var decidedBy: Tier?
        /// The tally, winner first.
        public var votes: [Vote]
        /// The ballots for the result.
        public var agreeing: [Ballot]
        /// The ballots against it.
        public var disagreeing: [Ballot]
        /// The records that did not vote.
        public var ignored: [Ignored]
        /// Apps claimed by more than one X client.
        public var conflicts: [Conflict]
        /// The app's own value that was given up (follow policy), or nil.
        public var replaced: String?
        /// The app's own value kept against the consensus (keep policy), or nil.
        public var disagreement: Disagreement?
        /// Each source and what happened to it.
        public var sources: [Source]
        /// Records found but refused.
        public var rejected: [Rejected]
        /// What was written afterwards.
        public var repairs: [Repair]
        /// The vendor mirror.
        public var mirror: Mirror
        /// What about the session limits sharing: `sandboxed`, `no-display`,
        /// `wayland-without-x`, `x-unreachable` (empty in an ordinary X11 session;
        /// absent in documents of versions before it, read as empty).
        public var environment: [EnvironmentNote]?

        /// Writes every key, with `null` where a value is absent, so that a
        /// reader finds the same keys in every report.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(appScoped, forKey: .appScoped)
            try container.encode(app, forKey: .app)
            try container.encode(vendor, forKey: .vendor)
            try container.encode(optedOut, forKey: .optedOut)
            try container.encode(born, forKey: .born)
            try container.encode(generation ?? 0, forKey: .generation)
            try container.encode(slot, forKey: .slot)
            try container.encode(origin, forKey: .origin)
            try container.encode(decidedBy, forKey: .decidedBy)
            try container.encode(votes, forKey: .votes)
            try container.encode(agreeing, forKey: .agreeing)
            try container.encode(disagreeing, forKey: .disagreeing)
            try container.encode(ignored, forKey: .ignored)
            try container.encode(conflicts, forKey: .conflicts)
            try container.encode(replaced, forKey: .replaced)
            try container.encode(disagreement, forKey: .disagreement)
            try container.encode(sources, forKey: .sources)
            try container.encode(rejected, forKey: .rejected)
            try container.encode(repairs, forKey: .repairs)
            try container.encode(mirror, forKey: .mirror)
            try container.encode(environment ?? [], forKey: .environment)
        }
    }

    /// This report as its §12 document.
    public var document: Document {
        let resolution = resolution
        return Document(
            id: identifier.hex,
            appScoped: appScoped.uuidString.lowercased(),
            app: app.id,
            vendor: app.vendor,
            optedOut: optOut,
            born: born,
            generation: generation,
            slot: slot,
            origin: resolution.map { Document.Origin($0.origin) } ?? .optedOut,
            decidedBy: resolution?.decidedBy.map(Document.Tier.init),
            votes: resolution?.tally.map { Document.Vote(id: $0.identifier.hex, votes: $0.votes, born: $0.born) } ?? [],
            agreeing: resolution?.agreeing.map(Document.Ballot.init) ?? [],
            disagreeing: resolution?.disagreeing.map(Document.Ballot.init) ?? [],
            ignored: resolution?.ignored.map {
                Document.Ignored(
                    candidate: Document.Ballot($0.candidate), reason: Document.IgnoredReason($0.reason),
                    counted: $0.reason.counted?.description)
            } ?? [],
            conflicts: resolution?.conflicts.map { Document.Conflict(app: $0.app, claims: $0.claims.map(Document.Ballot.init)) } ?? [],
            replaced: resolution?.replaced?.hex,
            disagreement: resolution?.disagreement.map { Document.Disagreement(local: $0.local.hex, consensus: $0.consensus.hex) },
            sources: sources.map(Document.Source.init),
            rejected: rejected.map { Document.Rejected(place: $0.place, code: $0.code, reason: $0.reason) },
            repairs: repairs.map(Document.Repair.init),
            mirror: Document.Mirror(store: mirrorStore, record: mirrorRecord.map(Document.Record.init)),
            environment: environment)
    }

    /// Encodes the report as its document (§12).
    public func encode(to encoder: any Encoder) throws {
        try document.encode(to: encoder)
    }

    /// The JSON text `openudid get --json` prints: the document, keys sorted.
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}

extension Report.Document.Origin {
    /// The token of a vote's origin.
    public init(_ origin: Resolution.Origin) {
        switch origin {
        case .consensus: self = .consensus
        case .generated: self = .generated
        case .keptLocal: self = .keptLocal
        }
    }
}

extension Report.Document.Tier {
    /// The token of a vote's tier.
    public init(_ tier: Resolution.Tier) {
        switch tier {
        case .durable: self = .durable
        case .live: self = .live
        }
    }
}

extension Report.Document.Kind {
    /// The token of a ballot's kind of place.
    public init(_ source: Candidate.Source) {
        switch source {
        case .selection: self = .selection
        case .fileSlot: self = .fileSlot
        case .localCache: self = .localCache
        case .vendorMirror: self = .mirror
        case .held: self = .held
        }
    }
}

extension Report.Document.IgnoredReason {
    /// The token of why a record did not vote.
    public init(_ reason: Resolution.Ignored.Reason) {
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

extension Report.Document.Ballot {
    init(_ candidate: Candidate) {
        self.init(
            source: candidate.source.description, kind: Report.Document.Kind(candidate.source), app: candidate.record.app,
            id: candidate.record.id.hex, born: candidate.record.born)
    }
}

extension Report.Document.Source {
    init(_ status: SourceStatus) {
        switch status.state {
        case .read(let records): self.init(name: status.name, state: .read, records: records, detail: nil)
        case .unavailable(let why): self.init(name: status.name, state: .unavailable, records: nil, detail: why)
        case .notUsed(let why): self.init(name: status.name, state: .notUsed, records: nil, detail: why)
        }
    }
}

extension Report.Document.Repair {
    init(_ repair: Repair) {
        switch repair.outcome {
        case .written: self.init(place: repair.place, outcome: .written, detail: nil)
        case .unchanged: self.init(place: repair.place, outcome: .unchanged, detail: nil)
        case .skipped(let why): self.init(place: repair.place, outcome: .skipped, detail: why)
        case .failed(let why): self.init(place: repair.place, outcome: .failed, detail: why)
        }
    }
}

extension Report.Document.Record {
    init(_ record: SlotRecord) {
        self.init(
            v: record.version, id: record.id.hex, app: record.app, vendor: record.vendor, born: record.born,
            written: record.written, optOut: record.optOut, generation: record.generation == 0 ? nil : record.generation)
    }
}

extension Resolution.Ignored.Reason {
    /// The ballot counted instead, where the reason names one.
    public var counted: Candidate.Source? {
        switch self {
        case .sameClient(let source), .sameApp(let source), .sameVendor(let source): source
        case .optedOut, .misplaced, .outranked, .superseded, .ahead, .unbound: nil
        }
    }
}
