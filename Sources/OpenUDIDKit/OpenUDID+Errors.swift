import FoundationEssentials
import Glibc

/// An error of the OpenUDID API, worded for the person who has to fix it.
///
/// New kinds may be added in later versions: a `switch` over `kind` needs a
/// `default` branch, and code that only shows the error uses `message`.
public struct OpenUDIDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong: a value among the static members, open to new ones.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The kind's stable name, such as `invalidApp`.
        public let rawValue: String

        /// The kind named `rawValue`.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The app id (or vendor) breaks the application-id rules.
        public static let invalidApp = Kind(rawValue: "invalidApp")
        /// The namespace is not 1 to 64 characters of `A-Z a-z 0-9 _ -`.
        public static let invalidNamespace = Kind(rawValue: "invalidNamespace")
        /// No usable home directory to keep files in.
        public static let noHome = Kind(rawValue: "noHome")
        /// A store needed for this operation cannot be written.
        public static let storeUnavailable = Kind(rawValue: "storeUnavailable")
        /// An option is out of range.
        public static let invalidOption = Kind(rawValue: "invalidOption")
        /// The process already runs as many participations as there are selection slots.
        public static let tooManyParticipations = Kind(rawValue: "tooManyParticipations")

        /// The stable name.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public let kind: Kind
    /// One sentence naming the thing that failed and the remedy.
    public let message: String
    /// The system's error number when a system call failed (`ENOSPC`, `EROFS`, `EACCES`…), else `nil`.
    public let errno: Int32?
    /// The error this one was made from, when there is one (for an invalid app id, the rule it breaks).
    public let underlying: (any Error & Sendable)?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: What went wrong.
    ///   - message: One sentence naming the thing that failed and the remedy.
    ///   - errno: The system's error number, when a system call failed.
    ///   - underlying: The error this one was made from.
    public init(_ kind: Kind, _ message: String, errno: Int32? = nil, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
        self.underlying = underlying
    }

    /// The message.
    public var description: String { message }

    /// Two errors are equal when their kind, message and error number are; the underlying errors are not compared.
    public static func == (lhs: OpenUDIDError, rhs: OpenUDIDError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.errno == rhs.errno
    }

    init(_ error: IdentityError) { self.init(.invalidApp, error.description, underlying: error) }

    init(_ error: StoragePathsError) {
        switch error.reason {
        case .invalidNamespace: self.init(.invalidNamespace, error.description, underlying: error)
        default: self.init(.noHome, error.description, underlying: error)
        }
    }

    init(_ error: StoreUnavailable) { self.init(.storeUnavailable, error.message, errno: error.errno, underlying: error) }
}
