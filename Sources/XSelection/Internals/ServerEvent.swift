import CX11
import Glibc

/// An event from the X server, decoded and checked in one place before any
/// code acts on it: the gate every event passes (docs/SECURITY.md, "Where
/// input enters").
///
/// Any client may send any window an event of its choosing (`SendEvent`), which
/// arrives with the high bit of its type set. Only the owners' answers to a
/// conversion legitimately come that way; every other kind here counts only
/// when the server made it, so a forged one is dropped here and no caller has
/// to remember to. Each event keeps the serial libxcb widened for it (the last
/// request of ours the server had handled when it made the event), which the
/// rules of `AnswerRules` compare with the requests a decision rests on.
enum ServerEvent {
    /// A client asked for a selection we own (its `ConvertSelection`).
    case selectionRequest(SelectionRequest)
    /// The server gave a selection of ours to someone else.
    case selectionClear(selection: UInt, owner: UInt)
    /// The answer to a conversion of ours. Owners send it themselves, so
    /// `sent` says only whether a client sent it (an answer) or the server did
    /// (no owner).
    case selectionNotify(requestor: UInt, selection: UInt, property: UInt, time: UInt, sent: Bool)
    /// A property of a window we watch was changed or deleted.
    case propertyNotify(window: UInt, atom: UInt, time: UInt, deleted: Bool, serial: UInt32)
    /// XFixes: the owner of a watched selection changed.
    case ownerChange(selection: UInt, change: SelectionWatcher.Change, time: UInt, serial: UInt32)
    /// The server refused a request of ours.
    case error(ProtocolErrorRecord)

    /// A conversion request, as the server sent it.
    struct SelectionRequest {
        var owner: UInt
        var requestor: UInt
        var selection: UInt
        var target: UInt
        var property: UInt
        var time: UInt
    }
}

/// A protocol error the server reported for one of our requests.
struct ProtocolErrorRecord: Sendable, Equatable {
    /// The sequence number of the request that failed.
    var serial: UInt
    /// The X error code (`BadWindow` = 3, `BadAlloc` = 11, ...).
    var code: UInt8
    /// The major opcode of the failed request.
    var request: UInt8
    /// The resource the error names (the window, for `BadWindow`).
    var resource: UInt
}

extension Connection {
    /// What `raw` says, or nil for an event nothing here acts on and for one a
    /// client forged where only the server's counts. The caller still frees `raw`.
    func event(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) -> ServerEvent? {
        let type = Int32(raw.pointee.response_type & 0x7f)
        let sent = raw.pointee.response_type & 0x80 != 0
        let serial = raw.pointee.full_sequence
        let bytes = UnsafeRawPointer(raw)
        if type == 0 {
            let error = bytes.assumingMemoryBound(to: xcb_generic_error_t.self).pointee
            return .error(
                ProtocolErrorRecord(
                    serial: UInt(error.full_sequence), code: error.error_code, request: error.major_code, resource: UInt(error.resource_id))
            )
        }
        if type == XCB_SELECTION_NOTIFY {
            let notify = bytes.assumingMemoryBound(to: xcb_selection_notify_event_t.self).pointee
            return .selectionNotify(
                requestor: UInt(notify.requestor), selection: UInt(notify.selection), property: UInt(notify.property),
                time: UInt(notify.time), sent: sent)
        }
        guard !sent else { return nil }
        switch type {
        case XCB_SELECTION_REQUEST:
            let request = bytes.assumingMemoryBound(to: xcb_selection_request_event_t.self).pointee
            return .selectionRequest(
                ServerEvent.SelectionRequest(
                    owner: UInt(request.owner), requestor: UInt(request.requestor), selection: UInt(request.selection),
                    target: UInt(request.target), property: UInt(request.property), time: UInt(request.time)))
        case XCB_SELECTION_CLEAR:
            let clear = bytes.assumingMemoryBound(to: xcb_selection_clear_event_t.self).pointee
            return .selectionClear(selection: UInt(clear.selection), owner: UInt(clear.owner))
        case XCB_PROPERTY_NOTIFY:
            let notify = bytes.assumingMemoryBound(to: xcb_property_notify_event_t.self).pointee
            return .propertyNotify(
                window: UInt(notify.window), atom: UInt(notify.atom), time: UInt(notify.time),
                deleted: UInt32(notify.state) == XCB_PROPERTY_DELETE.rawValue, serial: serial)
        case let type where fixesEventBase.map({ type == $0 + XCB_XFIXES_SELECTION_NOTIFY }) == true:
            let notify = bytes.assumingMemoryBound(to: xcb_xfixes_selection_notify_event_t.self).pointee
            let owner = UInt(notify.owner)
            let change: SelectionWatcher.Change
            switch UInt32(notify.subtype) {
            case XCB_XFIXES_SELECTION_EVENT_SET_SELECTION_OWNER.rawValue:
                change = .newOwner(
                    owner == 0 ? nil : SelectionHolder(window: XWindow(UInt32(truncatingIfNeeded: owner)), client: client(of: owner)))
            case XCB_XFIXES_SELECTION_EVENT_SELECTION_WINDOW_DESTROY.rawValue:
                change = .ownerWindowDestroyed
            default:
                change = .ownerClientClosed
            }
            return .ownerChange(selection: UInt(notify.selection), change: change, time: UInt(notify.timestamp), serial: serial)
        default:
            return nil
        }
    }
}
