import CX11
import FoundationEssentials
import Glibc

/// Claiming, releasing and watching selections, and the owner's own requests
/// and their replies.
extension OwnerCore {
    // MARK: Requests and replies of our own

    /// Waits for the reply to `sequence`; events that arrive first are set aside.
    func reply(to sequence: UInt32, what: String) throws(XSelectionError) -> UnsafeMutableRawPointer? {
        unflushed = false
        return try connection.reply(to: sequence, deadline: .now + .seconds(2), what: what) { self.setAside($0) }
    }

    func selectionOwner(_ selection: UInt) throws(XSelectionError) -> UInt {
        try ownerReply(xcb_get_selection_owner(connection.xcb, xcb_atom_t(selection)).sequence)
    }

    /// The owner a selection owner query sent as `cookie` names (0: none).
    func ownerReply(_ cookie: UInt32) throws(XSelectionError) -> UInt {
        guard let raw = try reply(to: cookie, what: "a selection owner query") else { return 0 }
        defer { free(raw) }
        return UInt(raw.assumingMemoryBound(to: xcb_get_selection_owner_reply_t.self).pointee.owner)
    }

    /// Lets the server go (`UngrabServer`) and sends it at once.
    func ungrabServer() {
        xcb_ungrab_server(connection.xcb)
        catchingUp = nil // the ungrab ended that hold too
        connection.flush()
    }

    /// A server timestamp (`Connection.serverTime`); events that arrive first are set aside.
    func serverTime() throws(XSelectionError) -> UInt {
        unflushed = false
        return try connection.serverTime(window: window) { self.setAside($0) }
    }

    func setOwner(_ selection: UInt, to owner: UInt, time: UInt) {
        xcb_set_selection_owner(connection.xcb, xcb_window_t(owner), xcb_atom_t(selection), xcb_timestamp_t(time))
        unflushed = true
    }

    // MARK: Claiming

    func claim(_ name: SelectionName, payloads: [SelectionPayload], mode: SelectionOwner.ClaimMode) throws(XSelectionError)
        -> SelectionOwner.ClaimResult
    {
        try connection.checkAlive()
        let selection = try connection.atom(name.rawValue)
        let prepared = try prepare(payloads)
        let time = try serverTime()
        var owner: UInt
        switch mode {
        case .ifFree:
            // The grab makes check-and-claim atomic: nobody can claim between our
            // look and our claim, so two apps never both think a slot is theirs.
            // While it holds, this thread waits only for its own connection's
            // replies, with a deadline, and calls nothing but libxcb on that
            // connection: a lock or a thread it waited for could be waiting
            // for the grabbed server itself (see `claimFirstFree`).
            xcb_grab_server(connection.xcb)
            var grabbed = true
            defer { if grabbed { ungrabServer() } }
            owner = try selectionOwner(selection)
            if owner != 0 && owner != window {
                return .taken(by: XWindow(UInt32(truncatingIfNeeded: owner)))
            }
            // The check goes out before the ungrab, and the server answers it
            // in order, under the grab: its reply is read after letting go, so
            // the grab lasts one round trip instead of two.
            setOwner(selection, to: window, time: time)
            let check = xcb_get_selection_owner(connection.xcb, xcb_atom_t(selection)).sequence
            ungrabServer()
            grabbed = false
            owner = try ownerReply(check)
        case .always:
            setOwner(selection, to: window, time: time)
            owner = try selectionOwner(selection)
        }
        try connection.checkAlive()
        guard owner == window else {
            return .lostRace(to: owner == 0 ? nil : XWindow(UInt32(truncatingIfNeeded: owner)))
        }
        held[selection] = Held(name: name, since: time, payloads: prepared)
        return .claimed(since: XTimestamp(UInt32(truncatingIfNeeded: time)))
    }

    /// Claims the first of `names` that no window owns. One server timestamp,
    /// then under one grab every owner query (pipelined: one round trip
    /// however many there are), the claim and its check; nil when all are owned.
    ///
    /// Everything that could wait on another thread (interning atoms, the
    /// timestamp, preparing payloads) is done before the grab. Under it the
    /// thread sends and reads on its own connection only: another thread of
    /// the host opening a display waits for the grab to end, and if this one
    /// waited for that thread in turn, both and the whole display would freeze.
    func claimFirstFree(_ names: [SelectionName], payloads: [SelectionPayload]) throws(XSelectionError)
        -> SelectionOwner.FirstFreeClaim?
    {
        try connection.checkAlive()
        guard !names.isEmpty else { return nil }
        let selections = try connection.atoms(names.map(\.rawValue))
        let prepared = try prepare(payloads)
        let time = try serverTime()
        xcb_grab_server(connection.xcb)
        var grabbed = true
        defer { if grabbed { ungrabServer() } }
        let cookies = selections.map { xcb_get_selection_owner(connection.xcb, xcb_atom_t($0)).sequence }
        var first: Int?
        // Every reply is taken, even past the first free one: xcb keeps a reply
        // nobody asks for until the connection closes.
        for (index, cookie) in cookies.enumerated() {
            guard let raw = try reply(to: cookie, what: "selection owner queries") else { continue }
            let owner = UInt(raw.assumingMemoryBound(to: xcb_get_selection_owner_reply_t.self).pointee.owner)
            free(raw)
            if first == nil && owner == 0 { first = index }
        }
        guard let first else { return nil }
        // As in `claim`: the check is answered under the grab, and read after it.
        setOwner(selections[first], to: window, time: time)
        let check = xcb_get_selection_owner(connection.xcb, xcb_atom_t(selections[first])).sequence
        ungrabServer()
        grabbed = false
        guard try ownerReply(check) == window else { return nil }
        held[selections[first]] = Held(name: names[first], since: time, payloads: prepared)
        return SelectionOwner.FirstFreeClaim(selection: names[first], since: XTimestamp(UInt32(truncatingIfNeeded: time)))
    }

    func setPayloads(_ payloads: [SelectionPayload], for name: SelectionName) throws(XSelectionError) -> Bool {
        try connection.checkAlive()
        let selection = try connection.atom(name.rawValue)
        guard held[selection] != nil else { return false }
        held[selection]?.payloads = try prepare(payloads)
        return true
    }

    func release(_ name: SelectionName) throws(XSelectionError) {
        try connection.checkAlive()
        let selection = try connection.atom(name.rawValue)
        guard held.removeValue(forKey: selection) != nil else { return }
        if try selectionOwner(selection) == window {
            setOwner(selection, to: 0, time: try serverTime())
            connection.flush()
            unflushed = false
        }
    }

    // MARK: Watching other selections

    /// Has XFixes report the owner changes of `names` on this connection, to
    /// `events` (ending an earlier watch), then looks up their owners: the
    /// subscription comes first, so no change falls between the two.
    func watch(_ names: [SelectionName], events: EventSink<SelectionOwner.WatchEvent>) throws(XSelectionError)
        -> [SelectionName: SelectionHolder?]
    {
        try connection.checkAlive()
        guard connection.fixesEventBase != nil else { throw .missingFixes(connection.name) }
        let atoms = try connection.atoms(names.map(\.rawValue))
        let wanted = Dictionary(zip(atoms, names), uniquingKeysWith: { first, _ in first })
        connection.subscribeToOwnerChanges(of: Array(wanted.keys))
        watchEvents?.finish()
        watched = wanted
        watchEvents = events
        let cookies = atoms.map { xcb_get_selection_owner(connection.xcb, xcb_atom_t($0)).sequence }
        connection.flush()
        var owners: [SelectionName: SelectionHolder?] = [:]
        do throws(XSelectionError) {
            // Every reply is taken: xcb keeps one nobody asks for until the connection closes.
            for (name, cookie) in zip(names, cookies) {
                var holder: SelectionHolder?
                if let raw = try reply(to: cookie, what: "selection owner queries") {
                    let owner = UInt(raw.assumingMemoryBound(to: xcb_get_selection_owner_reply_t.self).pointee.owner)
                    free(raw)
                    if owner != 0 {
                        holder = SelectionHolder(window: XWindow(UInt32(truncatingIfNeeded: owner)), client: connection.client(of: owner))
                    }
                }
                owners[name] = holder
            }
        } catch {
            watchEvents?.finish()
            watchEvents = nil
            watched = [:]
            throw error
        }
        return owners
    }

    func prepare(_ payloads: [SelectionPayload]) throws(XSelectionError) -> [UInt: Prepared] {
        let atoms = try connection.atoms(payloads.flatMap { [$0.target, $0.type] })
        var prepared: [UInt: Prepared] = [:]
        for (index, payload) in payloads.enumerated() {
            let format = Int32([8, 16, 32].contains(payload.format) ? payload.format : 8)
            prepared[atoms[2 * index]] = Prepared(type: atoms[2 * index + 1], format: format, bytes: payload.bytes)
        }
        return prepared
    }
}
