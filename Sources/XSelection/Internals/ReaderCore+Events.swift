import CX11
import FoundationEssentials
import Glibc

/// A pass's events and replies, as they arrive on the connection.
extension ReaderCore {
    /// Acts on one event of a pass; the connection's gate has dropped those a
    /// client forged where only the server's count (an owner change, a write).
    func handle(_ raw: UnsafeMutablePointer<xcb_generic_event_t>, slots: inout [Slot], indexByAtom: [UInt: Int]) {
        switch connection.event(raw) {
        case .ownerChange(let selection, _, _, let serial):
            // The owner's watch hears of it too.
            host?(raw)
            kept[selection] = nil
            guard let index = indexByAtom[selection] else { return }
            slots[index].changedInPass = true
            guard case .awaitingNotify = slots[index].stage else { return }
            // From the owner query on, the query did not see the change.
            if AnswerRules.isNewsToOwnerQuery(serial: serial, ownerQuery: slots[index].ownerQuery) {
                slots[index].ownerChanged = true
            }
        case .selectionNotify(let requestor, let selection, let property, let time, let sent) where requestor == window:
            guard let index = indexByAtom[selection], time == slots[index].time,
                case .awaitingNotify = slots[index].stage
            else { return }
            let owner = slots[index].owner
            if slots[index].ownerChanged {
                slots[index].stage = .done(.ownerChanged(owner: owner))
            } else if property == 0 {
                // The server answers for an ownerless selection itself, without send_event.
                slots[index].stage = .done(!sent || owner == nil ? .noOwner : .refused(owner: owner))
            } else if property != slots[index].atom {
                slots[index].stage = .done(
                    .malformed(owner: owner, reason: "the owner answered into a property other than the one asked for"))
            } else {
                let cookie = xcb_get_property(
                    connection.xcb, 1, xcb_window_t(window), xcb_atom_t(slots[index].atom), 0, 0,
                    slots[index].transfer.nextReadLength)
                slots[index].stage = .readingValue(cookie: cookie.sequence)
                slots[index].readSerial = cookie.sequence
                readOrder.append(index)
            }
        case .propertyNotify(let changed, let atom, _, let deleted, let serial) where changed == window:
            guard !deleted, let index = indexByAtom[atom] else { return }
            countWrite(serial, to: &slots[index])
            switch slots[index].stage {
            case .awaitingChunk:
                requestChunk(&slots[index])
            case .readingValue, .readingChunk:
                slots[index].newValueSeen = true
            default:
                break
            }
        default:
            host?(raw)
        }
    }

    func requestChunk(_ slot: inout Slot) {
        let cookie = xcb_get_property(
            connection.xcb, 1, xcb_window_t(window), xcb_atom_t(slot.atom), 0, 0,
            slot.transfer.nextReadLength)
        slot.stage = .readingChunk(cookie: cookie.sequence)
        slot.newValueSeen = false
        readOrder.append(slot.index)
    }

    // MARK: Replies

    /// Tells libxcb that the reply to the slot's outstanding property read, if
    /// it has one, will not be asked for: libxcb keeps every reply until it is
    /// taken or discarded, so a pass that ends at its deadline or settles with
    /// reads in flight would otherwise leave their replies for the life of the
    /// connection, one more each time a slot's owner is slow.
    func discardOutstandingRead(_ slot: Slot) {
        switch slot.stage {
        case .readingValue(let cookie), .readingChunk(let cookie): xcb_discard_reply(connection.xcb, cookie)
        default: break
        }
    }

    /// Takes the reply to the slot's outstanding property read if it has come; returns whether it had.
    func collectReply(_ slot: inout Slot) -> Bool {
        let cookie: UInt32
        let firstRead: Bool
        switch slot.stage {
        case .readingValue(let sequence): (cookie, firstRead) = (sequence, true)
        case .readingChunk(let sequence): (cookie, firstRead) = (sequence, false)
        default: return false
        }
        var replyPointer: UnsafeMutableRawPointer?
        var errorPointer: UnsafeMutablePointer<xcb_generic_error_t>?
        guard xcb_poll_for_reply(connection.xcb, UInt32(cookie), &replyPointer, &errorPointer) != 0 else { return false }
        defer {
            free(replyPointer)
            free(errorPointer)
        }
        guard let replyPointer else {
            slot.stage = .done(
                .malformed(owner: slot.owner, reason: "reading the answer failed with X error \(errorPointer?.pointee.error_code ?? 0)"))
            return true
        }
        let reply = replyPointer.assumingMemoryBound(to: xcb_get_property_reply_t.self)
        let length = Int(xcb_get_property_value_length(reply))
        let bytes = xcb_get_property_value(reply).map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
        let property = PropertyReply(
            type: UInt(reply.pointee.type), format: Int(reply.pointee.format), bytes: bytes,
            bytesAfter: Int(reply.pointee.bytes_after))

        if !firstRead && property.type == 0 {
            // The chunk is not written yet (the first one may not be when the
            // transfer starts): its PropertyNotify will say when it is.
            slot.stage = .awaitingChunk
            if slot.newValueSeen { requestChunk(&slot) }
            return true
        }
        switch firstRead ? slot.transfer.first(property) : slot.transfer.chunk(property) {
        case .awaitingChunk where firstRead:
            // From here on each chunk is announced by a PropertyNotify. The first
            // may have been written before we asked for those, so look at once.
            if !watchingProperties {
                connection.selectEvents(of: window, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)
                watchingProperties = true
            }
            requestChunk(&slot)
        case .awaitingChunk:
            slot.stage = .awaitingChunk
            if slot.newValueSeen { requestChunk(&slot) }
        case .done(.value(let bytes, let type, let format, let incremental)):
            if let owner = slot.owner {
                slot.type = type
                slot.stage = .done(.value(SelectionValue(bytes: bytes, type: "", format: format, owner: owner, incremental: incremental)))
            } else {
                slot.stage = .done(
                    .malformed(
                        owner: nil,
                        reason: incremental
                            ? "an INCR transfer came from no owner"
                            : "an answer came for a selection that had no owner"))
            }
        case .done(.tooLarge(let size)):
            slot.stage = .done(.tooLarge(owner: slot.owner, bytes: size))
        case .done(.malformed(let reason)):
            slot.stage = .done(.malformed(owner: slot.owner, reason: reason))
        }
        return true
    }
}
