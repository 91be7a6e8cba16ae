/// An error of the X11 layer, worded for the person who has to fix it.
///
/// New kinds may be added in later versions: a `switch` over `kind` needs a
/// `default` branch, and code that only shows the error uses `message`.
public struct XSelectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong: a value among the static members, open to new ones.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's stable name, such as `cannotOpen`.
        public let rawValue: String

        /// The kind named `rawValue`.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// No display name was given and `DISPLAY` is unset.
        public static let noDisplay = Kind(rawValue: "noDisplay")
        /// The display could not be opened: no server listens, or access was refused.
        public static let cannotOpen = Kind(rawValue: "cannotOpen")
        /// The connection to the server was lost (the server died or closed the connection).
        public static let connectionLost = Kind(rawValue: "connectionLost")
        /// The server lacks an extension this operation needs (XFixes).
        public static let missingExtension = Kind(rawValue: "missingExtension")
        /// The server did not answer within the deadline.
        public static let timedOut = Kind(rawValue: "timedOut")
        /// The object was closed before or during the call.
        public static let closed = Kind(rawValue: "closed")
        /// The server rejected a request of ours.
        public static let protocolError = Kind(rawValue: "protocolError")
        /// The object was made by another process, of which this one is a
        /// child made by `fork()`: its connection is the parent's. Open a new
        /// one in the child.
        public static let inheritedAcrossFork = Kind(rawValue: "inheritedAcrossFork")

        /// The stable name.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public let kind: Kind
    /// The display the error concerns, as given or taken from `DISPLAY`.
    public let display: String
    /// One sentence naming the display and the remedy.
    public let message: String

    package init(_ kind: Kind, display: String, _ message: String) {
        self.kind = kind
        self.display = display
        self.message = message
    }

    public var description: String { message }

    package static func noDisplay() -> XSelectionError {
        XSelectionError(
            .noDisplay, display: "",
            "no X display given: set DISPLAY or pass a display name such as \":0\"")
    }

    package static func cannotOpen(_ display: String) -> XSelectionError {
        XSelectionError(
            .cannotOpen, display: display,
            "cannot open X display \"\(display)\": no server is listening there or access was refused; check DISPLAY and XAUTHORITY, or pass another display"
        )
    }

    static func notADisplayName(_ display: String) -> XSelectionError {
        XSelectionError(
            .cannotOpen, display: display,
            "cannot open X display \"\(display)\": that is not a display name, such as \":0\" or \"host:0.0\"; check DISPLAY, or pass another display"
        )
    }

    static func refused(_ display: String, reason: String) -> XSelectionError {
        XSelectionError(
            .cannotOpen, display: display,
            // Servers end their reason with a newline ("...no authorization protocol specified\n").
            "cannot open X display \"\(display)\": the server refused the connection (\(reason.split(whereSeparator: \.isNewline).joined(separator: " "))); check DISPLAY and XAUTHORITY, or close other clients of that display"
        )
    }

    static func malformedSetUp(_ display: String, _ problem: String) -> XSelectionError {
        XSelectionError(
            .cannotOpen, display: display,
            "cannot open X display \"\(display)\": what answered there sent a malformed connection set-up (\(problem)), so it is not used; check DISPLAY"
        )
    }

    static func setUpTimedOut(_ display: String, after limit: Duration) -> XSelectionError {
        XSelectionError(
            .timedOut, display: display,
            "X display \"\(display)\" did not answer the connection set-up within \(limit); another client may hold a server grab, or the server is stopped"
        )
    }

    static func inheritedAcrossFork(_ display: String, parent: Int32) -> XSelectionError {
        XSelectionError(
            .inheritedAcrossFork, display: display,
            "this connection to X display \"\(display)\" belongs to process \(parent), of which this process is a child made by fork(); open a new one in the child"
        )
    }

    package static func connectionLost(_ display: String) -> XSelectionError {
        XSelectionError(
            .connectionLost, display: display,
            "lost the connection to X display \"\(display)\": the server exited or closed the connection; open a new connection when it is back"
        )
    }

    static func missingFixes(_ display: String) -> XSelectionError {
        XSelectionError(
            .missingExtension, display: display, "X display \"\(display)\" lacks the XFixes extension, which watching selections needs")
    }

    package static func closed(_ display: String) -> XSelectionError {
        XSelectionError(.closed, display: display, "the connection to X display \"\(display)\" was closed by its owner")
    }

    static func timedOut(_ display: String, _ what: String) -> XSelectionError {
        XSelectionError(
            .timedOut, display: display,
            "X display \"\(display)\" did not answer \(what) in time; the server may be grabbed by another client or overloaded")
    }
}
