import FoundationEssentials

/// A record that was found but not counted, and why: `{place, code, reason}`.
public struct Rejection: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Why a record was not counted, as a stable token (docs/PROTOCOL.md §12
    /// `rejected[].code`): one of the static members, or a record token of §3
    /// (`duplicate-key`, `in-future`, …) when the bytes were read but refused.
    /// New codes may come in later versions.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable {
        /// The token, such as `no-answer`.
        public let rawValue: String

        /// The code spelled `rawValue`.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// A selection answered with data that is not 8-bit text.
        public static let wrongType = Code(rawValue: "wrong-type")
        /// The selection's owner refused both targets.
        public static let refused = Code(rawValue: "refused")
        /// The selection's owner did not answer within the deadline.
        public static let noAnswer = Code(rawValue: "no-answer")
        /// A transfer or file over 4096 bytes, which is not read.
        public static let tooLarge = Code(rawValue: "too-large")
        /// The app's local cache holds another app's record.
        public static let misplaced = Code(rawValue: "misplaced")
        /// A file or store that could not be read.
        public static let unreadable = Code(rawValue: "unreadable")
        /// File slots beyond the 1000 read.
        public static let tooManyFiles = Code(rawValue: "too-many-files")
        /// Another app held the generation lock too long (§6.4).
        public static let generationLock = Code(rawValue: "generation-lock")
        /// The slot changed owner while it was read.
        public static let ownerChanged = Code(rawValue: "owner-changed")
        /// The slot's owner had not answered when the answers in hand settled the vote.
        public static let notAwaited = Code(rawValue: "not-awaited")
        /// Another client wrote into the slot's answer in every pass.
        public static let spoiled = Code(rawValue: "spoiled")
        /// Spoiled answers could have changed the live vote, so the selections cast no ballot.
        public static let undecided = Code(rawValue: "undecided")
    }

    /// Where it was found: "selection _OPENUDID_SLOT_3 (window 0x... of client 0x...)", a file path, a store.
    public let place: String
    /// Why it was not counted, as a stable token for programs.
    public let code: Code
    /// Why it was not counted, for a person to read.
    public let reason: String

    /// Creates a rejection.
    ///
    /// - Parameters:
    ///   - place: Where the record was found.
    ///   - reason: Why it was not counted, for a person.
    ///   - code: The same as a stable token.
    package init(_ place: String, _ reason: String, code: Code = .unreadable) {
        self.place = place
        self.reason = reason
        self.code = code
    }

    /// Creates a rejection whose code is spelled `code`.
    package init(_ place: String, _ reason: String, code: String) {
        self.init(place, reason, code: Code(rawValue: code))
    }

    /// A description for people.
    public var description: String { "\(place): \(reason)" }
}
