/// The rules by which a reader takes an answer (docs/PROTOCOL.md §5), as
/// functions of sequence numbers and times alone, so that
/// docs/vectors/reading.json can pin down their bounds and their wrap-around.
///
/// A sequence number here is the low 32 bits of the count of requests a
/// connection has sent; the serial of an event is that of the last request
/// of ours the server had handled when it made the event. A time is an X
/// server time in milliseconds, which wraps every 49.7 days.
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

    /// The offsets a conversion's time is drawn from, in milliseconds after
    /// the pass's server timestamp: up to 2^24 (4.7 hours). A forger that
    /// answers one conversion of a pass learns only its own time and must
    /// guess the others', one chance in 2^24 per guess. Wider would cost
    /// honest owners: an owner compares a request's time with its claim's as
    /// a signed 32-bit difference (`ownerAnswers`), so a time more than 2^31 ms
    /// after a claim reads as before it, and every extra bit of offset takes
    /// that much off how long a claim stays answerable (24.8 days less 4.7
    /// hours here; 2^30 would leave 12.4 days).
    package static let conversionOffsets: ClosedRange<UInt32> = 1...(1 << 24)

    /// The time a conversion carries: the pass's server timestamp plus
    /// `offset` (one of `conversionOffsets`), modulo 2^32.
    package static func conversionTime(serverTime: UInt32, offset: UInt32) -> UInt32 {
        precondition(conversionOffsets.contains(offset), "a conversion offset of \(offset) ms is outside 1...2^24")
        return serverTime &+ offset
    }

    /// Whether an owner that claimed its selection at `claim` answers a
    /// conversion that carries `time`: one at or after the claim, modulo 2^32,
    /// and `CurrentTime` (0), which every toolkit sends and accepts.
    package static func ownerAnswers(time: UInt32, claim: UInt32) -> Bool {
        time == 0 || isAtOrAfter(time, claim)
    }
}
