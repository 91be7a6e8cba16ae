import XSelection

/// An error of the OpenUDID API, worded for the person who has to fix it.
public struct OpenUDIDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Equatable, Codable {
        /// The app id (or vendor) breaks the application-id rules.
        case invalidApp
        /// The namespace is not 1 to 64 characters of `A-Z a-z 0-9 _ -`.
        case invalidNamespace
        /// No usable home directory to keep files in.
        case noHome
        /// A store needed for this operation cannot be written.
        case storeUnavailable
        /// The X display is needed for this operation and cannot be used.
        case displayUnavailable
        /// An option is out of range.
        case invalidOption
    }

    /// What went wrong.
    public let kind: Kind
    /// One sentence naming the thing that failed and the remedy.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    init(_ error: IdentityError) { self.init(.invalidApp, error.description) }

    init(_ error: StoragePathsError) {
        switch error.reason {
        case .invalidNamespace: self.init(.invalidNamespace, error.description)
        default: self.init(.noHome, error.description)
        }
    }

    init(_ error: StoreUnavailable) { self.init(.storeUnavailable, error.message) }

    init(_ error: XSelectionError) { self.init(.displayUnavailable, error.message) }
}
