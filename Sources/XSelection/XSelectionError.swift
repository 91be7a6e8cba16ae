/// An error of the X11 layer, worded for the person who has to fix it.
public struct XSelectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Equatable {
        /// No display name was given and `DISPLAY` is unset.
        case noDisplay
        /// The display could not be opened: no server listens, or access was refused.
        case cannotOpen
        /// The connection to the server was lost (the server died or closed the connection).
        case connectionLost
        /// The server lacks an extension this operation needs (XFixes).
        case missingExtension
        /// The server did not answer within the deadline.
        case timedOut
        /// The object was closed before or during the call.
        case closed
        /// The server rejected a request of ours.
        case protocolError
    }

    /// What went wrong.
    public let kind: Kind
    /// The display the error concerns, as given or taken from `DISPLAY`.
    public let display: String
    /// One sentence naming the display and the remedy.
    public let message: String

    init(_ kind: Kind, display: String, _ message: String) {
        self.kind = kind
        self.display = display
        self.message = message
    }

    public var description: String { message }

    static func noDisplay() -> XSelectionError {
        XSelectionError(
            .noDisplay, display: "",
            "no X display given: set DISPLAY or pass a display name such as \":0\"")
    }

    static func cannotOpen(_ display: String) -> XSelectionError {
        XSelectionError(
            .cannotOpen, display: display,
            "cannot open X display \"\(display)\": no server is listening there or access was refused; check DISPLAY and XAUTHORITY, or pass another display"
        )
    }

    static func connectionLost(_ display: String) -> XSelectionError {
        XSelectionError(
            .connectionLost, display: display,
            "lost the connection to X display \"\(display)\": the server exited or closed the connection; open a new connection when it is back"
        )
    }

    static func closed(_ display: String) -> XSelectionError {
        XSelectionError(.closed, display: display, "the connection to X display \"\(display)\" was closed by its owner")
    }

    static func timedOut(_ display: String, _ what: String) -> XSelectionError {
        XSelectionError(
            .timedOut, display: display,
            "X display \"\(display)\" did not answer \(what) in time; the server may be grabbed by another client or overloaded")
    }
}
