import CX11
import FoundationEssentials
import Glibc

/// Answering requests for the selections held (ICCCM section 2): the standard
/// targets, MULTIPLE, INCR transfers, and the errors a peer's window causes.
extension OwnerCore {
    // MARK: Answering requests

    func answer(_ request: Request) {
        if shouldShed(request) {
            counts.shed += 1
            return
        }
        // An obsolete requestor names no property: ICCCM says use the target atom.
        let property = request.property == 0 ? request.target : request.property
        var answered = false
        if request.owner == window, let selection = held[request.selection], isWithinOwnership(request.time, selection.since) {
            if request.target == multipleAtom {
                answered = request.property != 0 && answerMultiple(requestor: request.requestor, property: property, selection)
            } else {
                answered = convert(request.target, into: property, of: request.requestor, selection)
            }
        }
        if answered { counts.answered += 1 } else { counts.refused += 1 }
        var reply = xcb_selection_notify_event_t()
        reply.response_type = UInt8(XCB_SELECTION_NOTIFY)
        reply.time = xcb_timestamp_t(truncatingIfNeeded: request.time)
        reply.requestor = xcb_window_t(truncatingIfNeeded: request.requestor)
        reply.selection = xcb_atom_t(truncatingIfNeeded: request.selection)
        reply.target = xcb_atom_t(truncatingIfNeeded: request.target)
        reply.property = answered ? xcb_atom_t(truncatingIfNeeded: property) : 0
        // SendEvent carries 32 bytes; the notify struct is exactly that.
        let destination = reply.requestor
        let sent = withUnsafeBytes(of: &reply) { bytes in
            xcb_send_event(connection.xcb, 0, destination, 0, bytes.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        remember(sent.sequence, request.requestor)
        unflushed = true
    }

    func isWithinOwnership(_ time: UInt, _ since: UInt) -> Bool {
        AnswerRules.ownerAnswers(time: UInt32(truncatingIfNeeded: time), claim: UInt32(truncatingIfNeeded: since))
    }

    func convert(_ target: UInt, into property: UInt, of requestor: UInt, _ selection: Held) -> Bool {
        switch target {
        case targetsAtom:
            let atoms = [targetsAtom, timestampAtom, multipleAtom] + selection.payloads.keys.sorted()
            change(requestor, property, type: UInt(XCB_ATOM_ATOM.rawValue), format: 32, atoms.map { UInt32(truncatingIfNeeded: $0) })
            return true
        case timestampAtom:
            change(requestor, property, type: UInt(XCB_ATOM_INTEGER.rawValue), format: 32, [UInt32(truncatingIfNeeded: selection.since)])
            return true
        default:
            guard let payload = selection.payloads[target] else { return false }
            if payload.bytes.count > incrThreshold {
                return startTransfer(payload, requestor: requestor, property: property)
            }
            write(payload, bytes: payload.bytes[...], to: requestor, property: property)
            return true
        }
    }

    func answerMultiple(requestor: UInt, property: UInt, _ selection: Held) -> Bool {
        let cookie = xcb_get_property(
            connection.xcb, 0, xcb_window_t(truncatingIfNeeded: requestor), xcb_atom_t(truncatingIfNeeded: property),
            0, 0, 4096)
        guard let raw = try? reply(to: cookie.sequence, what: "reading a MULTIPLE request") else { return false }
        defer { free(raw) }
        let reply = raw.assumingMemoryBound(to: xcb_get_property_reply_t.self)
        let count = Int(reply.pointee.value_len)
        guard reply.pointee.format == 32, count % 2 == 0, count > 0, let value = xcb_get_property_value(reply) else { return false }
        var pairs = Array(UnsafeBufferPointer(start: value.assumingMemoryBound(to: UInt32.self), count: count))
        var changed = false
        for index in stride(from: 0, to: pairs.count, by: 2) {
            let (target, into) = (UInt(pairs[index]), UInt(pairs[index + 1]))
            let ok = into != 0 && target != multipleAtom && convert(target, into: into, of: requestor, selection)
            if !ok {
                pairs[index + 1] = 0
                changed = true
            }
        }
        if changed {
            change(requestor, property, type: atomPairAtom, format: 32, pairs)
        }
        return true
    }

    func write(_ payload: Prepared, bytes: ArraySlice<UInt8>, to requestor: UInt, property: UInt) {
        switch payload.format {
        case 32:
            // The bytes are little-endian items; the wire wants them in our byte order.
            var items: [UInt32] = []
            items.reserveCapacity(bytes.count / 4)
            var index = bytes.startIndex
            while index + 3 < bytes.endIndex {
                let b0 = UInt32(bytes[index])
                let b1 = UInt32(bytes[index + 1])
                let b2 = UInt32(bytes[index + 2])
                let b3 = UInt32(bytes[index + 3])
                items.append(b0 | b1 << 8 | b2 << 16 | b3 << 24)
                index += 4
            }
            change(requestor, property, type: payload.type, format: 32, items)
        case 16:
            var items: [UInt16] = []
            items.reserveCapacity(bytes.count / 2)
            var index = bytes.startIndex
            while index + 1 < bytes.endIndex {
                items.append(UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8)
                index += 2
            }
            change(requestor, property, type: payload.type, format: 16, items)
        default:
            bytes.withUnsafeBytes { raw in
                changeRaw(requestor, property, type: payload.type, format: 8, count: raw.count, raw.baseAddress)
            }
        }
    }

    /// ChangeProperty with `items` of the width `format` names (32-bit items for format 32, as on the wire).
    func change<Item: FixedWidthInteger>(_ window: UInt, _ property: UInt, type: UInt, format: Int, _ items: [Item]) {
        items.withUnsafeBytes { raw in
            changeRaw(window, property, type: type, format: format, count: items.count, raw.baseAddress)
        }
    }

    func changeRaw(_ window: UInt, _ property: UInt, type: UInt, format: Int, count: Int, _ data: UnsafeRawPointer?) {
        let cookie = xcb_change_property(
            connection.xcb, UInt8(XCB_PROP_MODE_REPLACE.rawValue), xcb_window_t(truncatingIfNeeded: window),
            xcb_atom_t(truncatingIfNeeded: property), xcb_atom_t(truncatingIfNeeded: type),
            UInt8(format), UInt32(count), data)
        remember(cookie.sequence, window)
        unflushed = true
    }

    /// Selects property changes on a requestor's window, or stops.
    func watchProperties(of requestor: UInt, _ watch: Bool) {
        var mask = watch ? XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue : 0
        let cookie = xcb_change_window_attributes(
            connection.xcb, xcb_window_t(truncatingIfNeeded: requestor), XCB_CW_EVENT_MASK.rawValue, &mask)
        remember(cookie.sequence, requestor)
        unflushed = true
    }

    // MARK: INCR

    func startTransfer(_ payload: Prepared, requestor: UInt, property: UInt) -> Bool {
        let key = TransferKey(requestor: requestor, property: property)
        guard transfers[key] != nil || transfers.count < options.maxTransfers else { return false }
        // We learn that the requestor took a chunk from its PropertyNotify(Delete).
        watchProperties(of: requestor, true)
        change(requestor, property, type: incrAtom, format: 32, [UInt32(truncatingIfNeeded: payload.bytes.count)])
        transfers[key] = Transfer(data: payload, deadline: .now + options.transferTimeout)
        shared.count { $0.incrStarted += 1 }
        return true
    }

    func continueTransfer(_ key: TransferKey) {
        guard var transfer = transfers[key] else { return }
        let bytes = transfer.data.bytes
        let end = min(transfer.offset + chunkSize, bytes.count)
        write(transfer.data, bytes: bytes[transfer.offset..<end], to: key.requestor, property: key.property)
        if transfer.offset == end {
            // That was the zero-length chunk that ends the transfer.
            finish(key)
            shared.count { $0.incrCompleted += 1 }
            return
        }
        transfer.offset = end
        transfer.deadline = .now + options.transferTimeout
        transfers[key] = transfer
    }

    func finish(_ key: TransferKey) {
        transfers.removeValue(forKey: key)
        if !transfers.keys.contains(where: { $0.requestor == key.requestor }) {
            watchProperties(of: key.requestor, false)
        }
    }

    /// Drops transfers whose requestor stopped taking chunks; returns whether any was dropped.
    func expireTransfers() -> Bool {
        let now = ContinuousClock.now
        var expired = false
        for (key, transfer) in transfers where transfer.deadline <= now {
            finish(key)
            shared.count { $0.incrDropped += 1 }
            expired = true
        }
        return expired
    }

    // MARK: Errors caused by peers

    /// Notes which requestor a request of ours wrote to, by its sequence number.
    func remember(_ sequence: UInt32, _ requestor: UInt) {
        recentRequests.append((UInt(sequence), requestor))
        if recentRequests.count > 1024 { recentRequests.removeFirst(512) }
    }

    /// Attributes each protocol error to the requestor we were writing to when
    /// it happened and drops that requestor's transfers: a window that died
    /// mid-transfer must not keep us sending chunks into the void.
    func blamePeerErrors() {
        guard !peerErrors.isEmpty else { return }
        let errors = peerErrors
        peerErrors.removeAll(keepingCapacity: true)
        shared.count { $0.peerErrors += errors.count }
        for error in errors {
            let culprit =
                error.code == XCB_WINDOW
                ? error.resource
                : recentRequests.last(where: { $0.serial == error.serial })?.requestor
            guard let culprit else { continue }
            for key in transfers.keys where key.requestor == culprit {
                transfers.removeValue(forKey: key)
                shared.count { $0.incrDropped += 1 }
            }
        }
    }
}
