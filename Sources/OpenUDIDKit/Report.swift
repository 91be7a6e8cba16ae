import FoundationEssentials
import Glibc

/// A record that was found but not counted, and why.
public struct Rejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where it was found: "selection _OPENUDID_SLOT_3 (window 0x... of client 0x...)", a file path, a store.
    public let place: String
    /// Why it was not counted, for a person to read.
    public let reason: String
    /// Why it was not counted, as a stable token for programs: a record
    /// rejection's token (`duplicate-key`, `in-future`, … docs/PROTOCOL.md §3),
    /// or `wrong-type`, `refused`, `no-answer`, `owner-changed`, `not-awaited`,
    /// `unreadable`, `too-many-files`, `generation-lock` (§12).
    public let code: String

    /// Creates a rejection.
    ///
    /// - Parameters:
    ///   - place: Where the record was found.
    ///   - reason: Why it was not counted, for a person.
    ///   - code: The same as a stable token.
    public init(_ place: String, _ reason: String, code: String = "unreadable") {
        self.place = place
        self.reason = reason
        self.code = code
    }

    /// A description for people.
    public var description: String { "\(place): \(reason)" }
}

/// The state of one source during a resolution.
public struct SourceStatus: Sendable, Hashable, CustomStringConvertible {
    /// What happened to the source.
    public enum State: Sendable, Hashable {
        /// It was read; this many valid records came from it.
        case read(records: Int)
        /// It could not be read: what it holds is unknown, and nothing is written to it.
        case unavailable(String)
        /// It was not used (no display configured, no mirror chosen).
        case notUsed(String)
    }

    /// The source: `selections`, `file-slots`, `local-cache` or `mirror`.
    public let name: String
    /// What happened.
    public let state: State

    /// Creates a status.
    public init(_ name: String, _ state: State) {
        self.name = name
        self.state = state
    }

    /// Whether the source answered.
    public var isAvailable: Bool { if case .read = state { true } else { false } }

    /// A description for people.
    public var description: String {
        switch state {
        case .read(let count): "\(name): \(count) record(s)"
        case .unavailable(let why): "\(name): unavailable: \(why)"
        case .notUsed(let why): "\(name): not used: \(why)"
        }
    }
}

/// What an app did to one place it owns after resolving.
public struct Repair: Sendable, Hashable, CustomStringConvertible {
    /// The outcome.
    public enum Outcome: Sendable, Hashable {
        /// The winner was written.
        case written
        /// The place already held the winner.
        case unchanged
        /// Not written, and why (for example: the store could not be read, so it is left alone).
        case skipped(String)
        /// Writing failed; the old content is intact.
        case failed(String)
    }

    /// The place: `selection slot`, `file slot`, `local cache`, `mirror`.
    public let place: String
    /// What happened.
    public let outcome: Outcome

    /// Creates a repair report.
    public init(_ place: String, _ outcome: Outcome) {
        self.place = place
        self.outcome = outcome
    }

    /// A description for people.
    public var description: String {
        switch outcome {
        case .written: "\(place): written"
        case .unchanged: "\(place): unchanged"
        case .skipped(let why): "\(place): skipped: \(why)"
        case .failed(let why): "\(place): failed: \(why)"
        }
    }
}

/// Why an app reports the all-zero identifier.
public enum OptOut: String, Sendable, Hashable, Codable {
    /// This app opted out.
    case app
    /// The user opted out for every app.
    case user
    /// The app requires the user's consent (`ConsentPolicy.required`) and
    /// has none recorded: nothing was read, generated, written or published.
    case noConsent = "no-consent"
}

/// The outcome of one resolution, with its provenance.
public struct Report: Sendable {
    /// The app that resolved.
    public let app: AppIdentity
    /// The shared identifier (all zero when opted out).
    public let identifier: Identifier
    /// When the identifier was first generated (ms since 1970), when known.
    public let born: Int64?
    /// Set when the app reports the opted-out value.
    public let optOut: OptOut?
    /// The vote, when one was held (not when opted out).
    public let resolution: Resolution?
    /// Each source and whether it answered.
    public let sources: [SourceStatus]
    /// Records found but not counted.
    public let rejected: [Rejection]

    /// The selection slots the vote did not wait for: their owners had not
    /// answered when the answers in hand settled it (docs/PROTOCOL.md,
    /// "Settling early"). They are among `rejected`, with the code `not-awaited`.
    public var notAwaited: [Rejection] { rejected.filter { $0.code == "not-awaited" } }
    /// What was written where afterwards.
    public let repairs: [Repair]
    /// The mirror store used (`secret-service`, `file`), or nil for none.
    public let mirrorStore: String?
    /// The mirror's record for this app's vendor as read, if it held one.
    public let mirrorRecord: SlotRecord?
    /// The selection slot this app serves, when it participates.
    public let slot: Int?
    /// What about the session limits sharing (a sandbox, no X server), one
    /// note each; empty in an ordinary X11 session.
    public internal(set) var environment: [EnvironmentNote] = []
    /// The user reset generation of the identifier: 0 until the user first
    /// resets it (`OpenUDID.resetEverywhere`), then one more with each reset.
    public internal(set) var generation: Int64 = 0

    /// The identifier derived for this app alone (see `AppScopedIdentifier`);
    /// all zero when opted out.
    public var appScoped: UUID {
        if identifier.isOptedOut { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
        return AppScopedIdentifier(shared: identifier.bytes, appID: app.id).uuid
    }

    /// Whether another app's value won over this app's own cached one.
    public var adoptedConsensus: Bool { resolution?.replaced != nil }
}
