// libFuzzer entry for the decoding of property reads and INCR transfers
// (PropertyTransfer), whose input a hostile selection owner controls. Built by
// scripts/fuzz together with Sources/XSelection/Internals/PropertyTransfer.swift.
//
// Input: two bytes of cap (little-endian), then replies, each
// [type selector][format][bytes after: 2 bytes LE][length: 2 bytes LE][bytes].
// Type selector 0 is None, 1 is INCR, anything else a text type.

private let incrAtom: UInt = 1_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPropertyTransfer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 2 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let cap = Int(input[0]) | Int(input[1]) << 8
    var offset = 2
    var replies: [PropertyReply] = []
    while offset + 6 <= input.count {
        let selector = UInt(input[offset])
        let format = Int(input[offset + 1])
        let after = Int(input[offset + 2]) | Int(input[offset + 3]) << 8
        let length = min(Int(input[offset + 4]) | Int(input[offset + 5]) << 8, input.count - offset - 6)
        let bytes = Array(input[(offset + 6)..<(offset + 6 + length)])
        offset += 6 + length
        let type: UInt = selector == 0 ? 0 : selector == 1 ? incrAtom : 2_000 + selector
        replies.append(PropertyReply(type: type, format: format, bytes: bytes, bytesAfter: after))
    }
    guard let firstReply = replies.first else { return 0 }

    var transfer = PropertyTransfer(cap: cap, incrAtom: incrAtom)
    var step = transfer.first(firstReply)
    var next = 1
    while case .awaitingChunk = step, next < replies.count {
        precondition(transfer.buffer.count <= cap, "buffered past the cap")
        precondition(transfer.nextReadLength >= 1, "asked to read nothing")
        step = transfer.chunk(replies[next])
        next += 1
    }
    precondition(transfer.buffer.count <= cap, "buffered past the cap")
    switch step {
    case .awaitingChunk:
        break
    case .done(.value(let bytes, _, let format, _)):
        precondition(bytes.count <= cap, "delivered a value over the cap")
        precondition([8, 16, 32].contains(format), "delivered a value of format \(format)")
    case .done(.tooLarge(let bytes)):
        precondition(bytes > cap, "called \(bytes) bytes too large for a cap of \(cap)")
    case .done(.malformed(let reason)):
        precondition(!reason.isEmpty, "a malformed outcome without a reason")
    }
    return 0
}
