/// The name of a selection, for example `CLIPBOARD` or `_OPENUDID_SLOT_0`.
///
/// Private selections should start with an underscore (ICCCM section 2.6.1).
/// Each name becomes an X atom, which the server keeps until it resets, so a
/// program should use a bounded set of names.
public struct SelectionName: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The atom name.
    public let rawValue: String

    /// Creates a selection name.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Creates a selection name from a string literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// A description for people.
    public var description: String { rawValue }

    /// Orders by raw value.
    public static func < (lhs: SelectionName, rhs: SelectionName) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// An X window id.
///
/// Window ids are reused by the server once a window is destroyed, so a window
/// id identifies a window only at one moment, never over time.
public struct XWindow: Hashable, Sendable, CustomStringConvertible {
    /// The 32-bit resource id.
    public let rawValue: UInt32

    /// Wraps a resource id.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// A description for people.
    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// The X client (connection) that owned a resource when it was looked at.
///
/// It is the part of a resource id above the server's resource mask; every
/// window one connection creates shares it, and no other live connection has it.
public struct XClient: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The client's resource base.
    public let rawValue: UInt32

    /// Wraps a resource base.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// A description for people.
    public var description: String { "client 0x" + String(rawValue, radix: 16) }

    /// Orders by raw value.
    public static func < (lhs: XClient, rhs: XClient) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// An X server timestamp, in milliseconds of server time (it wraps every 49.7 days).
public struct XTimestamp: Hashable, Sendable, CustomStringConvertible {
    /// The server time value.
    public let rawValue: UInt32

    /// Wraps a server time value.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// A description for people.
    public var description: String { String(rawValue) }
}

/// Data offered for one target of a selection.
public struct SelectionPayload: Sendable, Equatable {
    /// The target a requestor asks for, for example `UTF8_STRING`.
    public var target: String
    /// The type atom written with the data, for example `UTF8_STRING` or `_OPENUDID_RECORD`.
    public var type: String
    /// The property format: 8, 16 or 32 bits per item. For 32, `bytes` holds
    /// 4 bytes per item in the host's byte order.
    public var format: Int
    /// The data.
    public var bytes: [UInt8]

    /// Creates a payload of 8-bit data served under `target` with type `type` (defaults to the target).
    public init(target: String, type: String? = nil, bytes: [UInt8]) {
        self.target = target
        self.type = type ?? target
        self.format = 8
        self.bytes = bytes
    }

    /// Creates a payload with an explicit format.
    public init(target: String, type: String, format: Int, bytes: [UInt8]) {
        self.target = target
        self.type = type
        self.format = format
        self.bytes = bytes
    }
}
