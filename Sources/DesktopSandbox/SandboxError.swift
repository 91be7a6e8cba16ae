import Foundation

/// A failure of the sandbox itself: a tool missing, a server that would not
/// start, a process that did not answer. Its text says what happened and what to do.
public struct SandboxError: Error, CustomStringConvertible, Sendable {
    /// What happened, and what to do about it.
    public let description: String

    /// An error that reads `description`.
    public init(_ description: String) { self.description = description }

    /// The error `errno` names, after `what` ("pipe", "cannot create /tmp/x").
    static func system(_ what: String, _ code: Int32 = errno) -> SandboxError {
        SandboxError("\(what): \(String(cString: strerror(code)))")
    }
}
