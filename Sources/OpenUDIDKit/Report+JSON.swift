import Foundation

extension Report: Encodable {
    /// The report as docs/PROTOCOL.md §12 describes it: plain values, and a
    /// fixed token wherever a value says *why*.
    ///
    /// `Report` itself holds the vote's own types; its document is what a
    /// program reads back (`openudid get --json` prints it), so it decodes too.
    public struct Document: Codable, Sendable, Hashable {
        /// How the identifier came about: §12 `origin`.
        public enum Origin: String, Codable, Sendable, Hashable {
            case consensus
            case generated
            case keptLocal = "kept-local"
            case optedOut = "opted-out"
        }

        /// A tier of the vote: §6.1.
        public enum Tier: String, Codable, Sendable, Hashable {
            case durable
            case live
        }

        /// The kind of place a ballot came from.
        public enum Kind: String, Codable, Sendable, Hashable {
            case selection
            case fileSlot = "file-slot"
            case localCache = "local-cache"
            case mirror
            case held
        }

        /// Why a record did not vote: §12 `ignored[].reason`.
        public enum IgnoredReason: String, Codable, Sendable, Hashable {
            case sameClient = "same-client"
            case sameApp = "same-app"
            case sameVendor = "same-vendor"
            case optedOut = "opted-out"
            case misplaced
            case outranked
        }

        /// What happened to a source.
        public enum SourceState: String, Codable, Sendable, Hashable {
            case read
            case unavailable
            case notUsed = "not-used"
        }

        /// What happened to a place after the vote.
        public enum RepairOutcome: String, Codable, Sendable, Hashable {
            case written
            case unchanged
            case skipped
            case failed
        }

        /// One identifier's count: `{id, votes, born}`.
        public struct Vote: Codable, Sendable, Hashable {
            public var id: String
            public var votes: Int
            public var born: Int64
        }

        /// A record offered to the vote: `{source, kind, app, id, born}`.
        public struct Ballot: Codable, Sendable, Hashable {
            /// The place, for a person: `slot 3 (X client 0x1a00000)`.
            public var source: String
            public var kind: Kind
            public var app: String
            public var id: String
            public var born: Int64
        }

        /// A record that did not vote: `{candidate, reason, counted?}`.
        public struct Ignored: Codable, Sendable, Hashable {
            public var candidate: Ballot
            public var reason: IgnoredReason
            /// The place of the ballot counted instead, where the reason names one.
            public var counted: String?
        }

        /// An app claimed by more than one X client: `{app, claims}`.
        public struct Conflict: Codable, Sendable, Hashable {
            public var app: String
            public var claims: [Ballot]
        }

        /// The app's own value kept against the consensus: `{local, consensus}`.
        public struct Disagreement: Codable, Sendable, Hashable {
            public var local: String
            public var consensus: String
        }

        /// A source and what happened to it: `{name, state, records?, detail?}`.
        public struct Source: Codable, Sendable, Hashable {
            /// `selections`, `file-slots`, `local-cache` or `mirror`.
            public var name: String
            public var state: SourceState
            /// The valid records read, when `state` is `read`.
            public var records: Int?
            /// Why, when the source was not read.
            public var detail: String?
        }

        /// A record found but refused: `{place, code, reason}`.
        public struct Rejected: Codable, Sendable, Hashable {
            public var place: String
            /// A record token of §3 or one of the codes §12 lists.
            public var code: String
            /// The same, for a person.
            public var reason: String
        }

        /// What was written to a place: `{place, outcome, detail?}`.
        public struct Repair: Codable, Sendable, Hashable {
            public var place: String
            public var outcome: RepairOutcome
            public var detail: String?
        }

        /// A record's wire fields (§3).
        public struct Record: Codable, Sendable, Hashable {
            public var v: Int
            public var id: String
            public var app: String
            public var vendor: String
            public var born: Int64
            public var written: Int64
            public var optOut: Bool
        }

        /// The vendor mirror: `{store, record}`.
        public struct Mirror: Codable, Sendable, Hashable {
            /// `secret-service`, `file`, or nil for none.
            public var store: String?
            /// The mirror's record as read, if it held one.
            public var record: Record?

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
        public var app: String
        public var vendor: String
        /// Why the identifier is all zero, or nil.
        public var optedOut: OptOut?
        /// The identifier's birth (ms since 1970), when known.
        public var born: Int64?
        /// The selection slot the app serves, or nil.
        public var slot: Int?
        public var origin: Origin
        /// The tier that decided, or nil when nobody voted.
        public var decidedBy: Tier?
        /// The tally, winner first.
        public var votes: [Vote]
        public var agreeing: [Ballot]
        public var disagreeing: [Ballot]
        public var ignored: [Ignored]
        public var conflicts: [Conflict]
        /// The app's own value that was given up (follow policy), or nil.
        public var replaced: String?
        /// The app's own value kept against the consensus (keep policy), or nil.
        public var disagreement: Disagreement?
        public var sources: [Source]
        public var rejected: [Rejected]
        public var repairs: [Repair]
        public var mirror: Mirror

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
            slot: slot,
            origin: resolution.map { Document.Origin($0.origin) } ?? .optedOut,
            decidedBy: resolution?.decidedBy.map(Document.Tier.init),
            votes: resolution?.tally.map { Document.Vote(id: $0.identifier.hex, votes: $0.votes, born: $0.born) } ?? [],
            agreeing: resolution?.agreeing.map(Document.Ballot.init) ?? [],
            disagreeing: resolution?.disagreeing.map(Document.Ballot.init) ?? [],
            ignored: resolution?.ignored.map {
                Document.Ignored(candidate: Document.Ballot($0.candidate), reason: Document.IgnoredReason($0.reason),
                                 counted: $0.reason.counted?.description)
            } ?? [],
            conflicts: resolution?.conflicts.map { Document.Conflict(app: $0.app, claims: $0.claims.map(Document.Ballot.init)) } ?? [],
            replaced: resolution?.replaced?.hex,
            disagreement: resolution?.disagreement.map { Document.Disagreement(local: $0.local.hex, consensus: $0.consensus.hex) },
            sources: sources.map(Document.Source.init),
            rejected: rejected.map { Document.Rejected(place: $0.place, code: $0.code, reason: $0.reason) },
            repairs: repairs.map(Document.Repair.init),
            mirror: Document.Mirror(store: mirrorStore, record: mirrorRecord.map(Document.Record.init)))
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
        }
    }
}

extension Report.Document.Ballot {
    init(_ candidate: Candidate) {
        self.init(source: candidate.source.description, kind: Report.Document.Kind(candidate.source), app: candidate.record.app,
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
        self.init(v: record.version, id: record.id.hex, app: record.app, vendor: record.vendor, born: record.born,
                  written: record.written, optOut: record.optOut)
    }
}

extension Resolution.Ignored.Reason {
    /// The ballot counted instead, where the reason names one.
    public var counted: Candidate.Source? {
        switch self {
        case .sameClient(let source), .sameApp(let source), .sameVendor(let source): source
        case .optedOut, .misplaced, .outranked: nil
        }
    }
}
