import Testing

@testable import XSelection

/// The decoding of property reads, without a server.
@Suite(.requiresXvfb) struct PropertyTransferTests {
    let text: UInt = 300, incr: UInt = 400

    func reply(_ bytes: [UInt8], type: UInt? = nil, format: Int = 8, after: Int = 0) -> PropertyReply {
        PropertyReply(type: type ?? text, format: format, bytes: bytes, bytesAfter: after)
    }

    @Test func aValueWithinTheCapIsTakenWhole() {
        var transfer = PropertyTransfer(cap: 16, incrAtom: incr)
        #expect(transfer.nextReadLength == 5)
        #expect(
            transfer.first(reply(Array("hello".utf8)))
                == .done(.value(bytes: Array("hello".utf8), type: text, format: 8, incremental: false)))
    }

    @Test func aValueOverTheCapIsTooLargeWithItsFullSize() {
        var transfer = PropertyTransfer(cap: 16, incrAtom: incr)
        #expect(transfer.first(reply([UInt8](repeating: 1, count: 20), after: 100)) == .done(.tooLarge(bytes: 120)))
    }

    @Test func incrChunksAccumulateUntilAnEmptyOne() {
        var transfer = PropertyTransfer(cap: 16, incrAtom: incr)
        #expect(transfer.first(reply([10, 0, 0, 0], type: incr, format: 32)) == .awaitingChunk)
        #expect(transfer.chunk(reply([1, 2, 3, 4, 5])) == .awaitingChunk)
        #expect(transfer.nextReadLength == 3)
        #expect(transfer.chunk(reply([6, 7, 8, 9, 10])) == .awaitingChunk)
        #expect(transfer.chunk(reply([])) == .done(.value(bytes: Array(1...10), type: text, format: 8, incremental: true)))
    }

    @Test func anIncrAnnouncementOverTheCapEndsAtOnce() {
        var transfer = PropertyTransfer(cap: 16, incrAtom: incr)
        #expect(transfer.first(reply([17, 0, 0, 0], type: incr, format: 32)) == .done(.tooLarge(bytes: 17)))
    }

    @Test func anIncrThatLiesAboutItsSizeStopsAtTheCapAndCountsWhatCame() {
        var transfer = PropertyTransfer(cap: 8, incrAtom: incr)
        #expect(transfer.first(reply([4, 0, 0, 0], type: incr, format: 32)) == .awaitingChunk)
        #expect(transfer.chunk(reply([UInt8](repeating: 7, count: 8))) == .awaitingChunk)
        #expect(transfer.chunk(reply([7, 7, 7, 7], after: 4)) == .done(.tooLarge(bytes: 16)))
        #expect(transfer.buffer.isEmpty)
    }

    @Test func brokenRepliesAreMalformed() {
        var none = PropertyTransfer(cap: 8, incrAtom: incr)
        #expect(none.first(reply([], type: 0)) == .done(.malformed("the owner reported an answer but wrote no property")))
        var odd = PropertyTransfer(cap: 8, incrAtom: incr)
        #expect(odd.first(reply([1], format: 24)) == .done(.malformed("the owner wrote format 24, not 8, 16 or 32")))
        var switching = PropertyTransfer(cap: 64, incrAtom: incr)
        _ = switching.first(reply([], type: incr, format: 32))
        _ = switching.chunk(reply([1, 2]))
        #expect(switching.chunk(reply([1, 2], format: 16)) == .done(.malformed("INCR chunks changed type or format midway")))
        var partial = PropertyTransfer(cap: 64, incrAtom: incr)
        #expect(partial.first(reply([1, 2], after: 2)) == .done(.malformed("the property was returned only in part")))
    }
}
