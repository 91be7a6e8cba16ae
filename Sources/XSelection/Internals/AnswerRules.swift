/// The rules by which a reader takes an answer (docs/PROTOCOL.md §5), as
/// functions of sequence numbers alone, so that docs/vectors/reading.json can
/// pin down their bounds and their wrap-around.
///
/// A sequence number here is the low 32 bits of the count of requests a
/// connection has sent; the serial of an event is that of the last request
/// of ours the server had handled when it made the event.
package enum AnswerRules {
    /// Whether sequence number `serial` is `other` or later, modulo 2^32.
    package static func isAtOrAfter(_ serial: UInt32, _ other: UInt32) -> Bool {
        Int32(bitPattern: serial &- other) >= 0
    }

    /// Whether a write to an answer's property, reported with `serial`,
    /// counts: it came at or after the conversion and before the first read
    /// of the answer (nil while that read is not sent).
    package static func countsAsWrite(serial: UInt32, conversion: UInt32, firstRead: UInt32?) -> Bool {
        guard isAtOrAfter(serial, conversion) else { return false }
        guard let firstRead else { return true }
        return !isAtOrAfter(serial, firstRead)
    }

    /// Whether an owner change reported with `serial` is news to the owner
    /// query sent as `ownerQuery`: the query may not have seen it.
    package static func isNewsToOwnerQuery(serial: UInt32, ownerQuery: UInt32) -> Bool {
        isAtOrAfter(serial, ownerQuery)
    }

    /// Whether an answer stands after `writes` counted writes to its
    /// property: exactly one, the owner's. None means it was there before
    /// the conversion; more means another client wrote it too.
    package static func acceptsAnswer(writes: Int) -> Bool { writes == 1 }
}
