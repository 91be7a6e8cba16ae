/// One reply to a read of a property, as the server sent it.
struct PropertyReply: Equatable {
    /// The property's type atom; 0 (None) when there was no property.
    var type: UInt
    /// Bits per item as the owner wrote them.
    var format: Int
    /// The bytes returned by this read.
    var bytes: [UInt8]
    /// How many bytes of the property this read did not return.
    var bytesAfter: Int
}

/// Turns the property reads of one conversion into a value, under a size cap.
///
/// The first read either holds the whole value or announces an incremental
/// (INCR) transfer, whose chunks then arrive one read at a time until an empty
/// one. Everything here comes from the selection's owner, which may be
/// hostile: nothing is buffered past `cap`, and every inconsistency ends the
/// transfer with a reason. No X calls: the reader feeds it replies, and the
/// fuzzer feeds it anything.
struct PropertyTransfer {
    /// How a transfer ended.
    enum Outcome: Equatable {
        /// The value, with the type atom and format it came in.
        case value(bytes: [UInt8], type: UInt, format: Int, incremental: Bool)
        /// Over the cap; the size announced or received so far.
        case tooLarge(bytes: Int)
        /// The owner broke the protocol.
        case malformed(String)
    }

    /// What to do after a reply.
    enum Step: Equatable {
        /// An INCR transfer goes on: read the next chunk once the owner has written it.
        case awaitingChunk
        /// The transfer is over.
        case done(Outcome)
    }

    /// The most bytes accepted.
    let cap: Int
    /// The `INCR` atom.
    let incrAtom: UInt
    /// What an INCR transfer has delivered so far; never more than `cap` bytes.
    private(set) var buffer: [UInt8] = []
    private var type: UInt = 0
    private var format = 0

    init(cap: Int, incrAtom: UInt) {
        self.cap = max(cap, 0)
        self.incrAtom = incrAtom
    }

    /// How much the next read asks for, in 4-byte units: one unit more than the
    /// room left, so that a value over the cap shows as bytes left unread.
    var nextReadLength: UInt32 {
        UInt32(min((cap - buffer.count) / 4 + 1, Int(UInt32.max)))
    }

    /// Takes the reply to the first read of the property.
    mutating func first(_ reply: PropertyReply) -> Step {
        let length = reply.bytes.count
        if reply.type == 0 {
            return .done(.malformed("the owner reported an answer but wrote no property"))
        }
        if reply.type == incrAtom {
            // Our read deleted the INCR property, which tells the owner to send the first chunk.
            let announced = reply.bytes.count >= 4 ? Int(reply.bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }) : 0
            return announced > cap ? .done(.tooLarge(bytes: announced)) : .awaitingChunk
        }
        if ![8, 16, 32].contains(reply.format) {
            return .done(.malformed("the owner wrote format \(reply.format), not 8, 16 or 32"))
        }
        let total = length + max(reply.bytesAfter, 0)
        if total > cap {
            return .done(.tooLarge(bytes: total))
        }
        if reply.bytesAfter > 0 {
            // A server returns all that was asked for, and we asked for more than the cap.
            return .done(.malformed("the property was returned only in part"))
        }
        return .done(.value(bytes: reply.bytes, type: reply.type, format: reply.format, incremental: false))
    }

    /// Takes the reply to the read of one INCR chunk.
    mutating func chunk(_ reply: PropertyReply) -> Step {
        let length = reply.bytes.count
        if reply.type == 0 {
            return .done(.malformed("an INCR chunk was announced but the property was missing"))
        }
        if length == 0 && reply.bytesAfter <= 0 {
            return .done(.value(bytes: buffer, type: type, format: format == 0 ? 8 : format, incremental: true))
        }
        if format != 0 && (reply.format != format || reply.type != type) {
            return .done(.malformed("INCR chunks changed type or format midway"))
        }
        if ![8, 16, 32].contains(reply.format) {
            return .done(.malformed("an INCR chunk had format \(reply.format)"))
        }
        let total = buffer.count + length + max(reply.bytesAfter, 0)
        if total > cap {
            buffer = []
            return .done(.tooLarge(bytes: total))
        }
        if reply.bytesAfter > 0 {
            return .done(.malformed("an INCR chunk was returned only in part"))
        }
        type = reply.type
        format = reply.format
        buffer += reply.bytes
        return .awaitingChunk
    }
}
