import CX11
import FoundationEssentials
import Glibc

/// One connection to an X server through libxcb, used by exactly one thread
/// at a time.
///
/// Everything it knows is its own: errors come back with the replies of the
/// requests that caused them or in its event queue, a lost server shows in
/// `xcb_connection_has_error`, and nothing is registered process-wide, so no
/// thread of the host ever waits on it, nor it on them. It closes itself in
/// `deinit`. It is deliberately not `Sendable`: each public object keeps its
/// connection on its own thread or behind its own lock.
package final class Connection {
    package let name: String
    let fd: Int32
    package let root: UInt
    let xcb: OpaquePointer
    /// The bits of a resource id that a client chooses; the rest name the client.
    let resourceMask: UInt32
    /// The largest request, in bytes, the server takes without BIG-REQUESTS
    /// (asking for that extension would wait on the server without a deadline).
    let maxRequestBytes: Int
    /// The process that opened the connection. A child made by `fork()`
    /// shares the socket with its parent, and a word from the child would
    /// break the parent's conversation.
    let process: pid_t

    /// Events read while waiting for a reply, which no caller took: they come
    /// first from `pollEvent`, as libX11's queue would give them.
    private var held: [UnsafeMutablePointer<xcb_generic_event_t>] = []
    private var heldHead = 0
    private var atomsByName: [String: UInt] = [:]
    private var namesByAtom: [UInt: String] = [:]
    private var closed = false
    /// The first event number of XFixes, once `setUpFixes` found the extension.
    private(set) var fixesEventBase: Int32?
    /// Whether the server was already gone when the connection was closed.
    private var lostBeforeClose = false

    /// How long opening a display may take: a server grabbed by another
    /// client (or stopped) does not answer a new client's set-up at all.
    package static let setUpLimit = Duration.seconds(2)

    /// Opens `name`, or `$DISPLAY` when `name` is nil, within `setUpLimit`.
    ///
    /// - Throws: `noDisplay`, `cannotOpen` (nothing listens, or the server
    ///   refused, with its reason), or `timedOut` (no answer within the limit).
    package init(name: String?) throws(XSelectionError) {
        let resolved = name ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
        guard !resolved.isEmpty else { throw .noDisplay() }
        let limit = Self.setUpLimit
        // The set-up reply was checked before libxcb saw it; what is needed of it comes from that check.
        let opened = try ConnectionSetUp.open(resolved, deadline: .now + limit, limit: limit)
        self.xcb = opened.xcb
        self.name = resolved
        self.fd = xcb_get_file_descriptor(opened.xcb)
        self.root = UInt(opened.root)
        self.resourceMask = opened.setUp.resourceMask
        self.maxRequestBytes = Int(opened.setUp.maximumRequestLength) * 4
        self.process = getpid()
    }

    deinit { close() }

    /// Closes the connection. Safe after the server was lost.
    package func close() {
        guard !closed else { return }
        closed = true
        lostBeforeClose = xcb_connection_has_error(xcb) != 0
        for raw in held[heldHead...] { free(raw) }
        held.removeAll()
        heldHead = 0
        if isInherited {
            // xcb_disconnect shuts the socket down, for the parent too: only
            // this process's descriptor goes (libxcb's memory stays, a few
            // kilobytes in a child that is about to exec or exit).
            Glibc.close(fd)
        } else {
            xcb_disconnect(xcb)
        }
    }

    /// The most events kept for later; beyond it the oldest go. A reader's
    /// waits are short and an owner takes its own, so only a flood reaches it.
    static let heldLimit = 65536

    /// Keeps an event read while waiting for something else, for `pollEvent`.
    func hold(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) {
        if held.count - heldHead >= Self.heldLimit {
            free(held[heldHead])
            heldHead += 1
        }
        held.append(raw)
    }

    /// The oldest held event, if any.
    func takeHeld() -> UnsafeMutablePointer<xcb_generic_event_t>? {
        guard heldHead < held.count else { return nil }
        let raw = held[heldHead]
        heldHead += 1
        if heldHead == held.count {
            held.removeAll(keepingCapacity: held.count <= 1024)
            heldHead = 0
        }
        return raw
    }

    /// Whether this process is a child, made by `fork()`, of the one that opened the connection.
    var isInherited: Bool { getpid() != process }

    /// Whether the connection still works.
    package var isAlive: Bool { !closed && xcb_connection_has_error(xcb) == 0 }

    /// Throws `connectionLost` when the server is gone.
    package func checkAlive() throws(XSelectionError) {
        // An owner or watcher closes its connection itself when the server is
        // lost; a call that reaches it afterwards must still say so.
        if closed { throw lostBeforeClose ? .connectionLost(name) : .closed(name) }
        if !isAlive { throw .connectionLost(name) }
    }

    /// The client part of a resource id.
    func client(of window: UInt) -> XClient { XClient(UInt32(truncatingIfNeeded: window) & ~resourceMask) }

    /// Interns every name in one round trip (names already known cost nothing).
    package func atoms(_ names: [String]) throws(XSelectionError) -> [UInt] {
        let interning = try sendInterns(names)
        try collectInterns(interning, deadline: ContinuousClock.now + .seconds(2))
        return names.map { atomsByName[$0] ?? 0 }
    }

    /// Intern requests sent and not yet answered.
    struct Interning {
        var names: [String] = []
        var cookies: [UInt32] = []
    }

    /// Sends the intern requests for the names not yet known, without flushing.
    func sendInterns(_ names: [String]) throws(XSelectionError) -> Interning {
        let missing = Array(Set(names.filter { atomsByName[$0] == nil })).sorted()
        guard !missing.isEmpty else { return Interning() }
        try checkAlive()
        let cookies = missing.map { atomName in
            atomName.utf8CString.withUnsafeBufferPointer { text in
                xcb_intern_atom(xcb, 0, UInt16(text.count - 1), text.baseAddress).sequence
            }
        }
        return Interning(names: missing, cookies: cookies)
    }

    /// Takes the replies to `interning`'s requests, in order, and keeps the atoms.
    func collectInterns(_ interning: Interning, deadline: ContinuousClock.Instant) throws(XSelectionError) {
        guard !interning.cookies.isEmpty else { return }
        let cookies = interning.cookies
        var result: [UInt] = []
        result.reserveCapacity(cookies.count)
        for (index, cookie) in cookies.enumerated() {
            let reply: UnsafeMutableRawPointer?
            do throws(XSelectionError) {
                reply = try self.reply(to: cookie, deadline: deadline, what: "interning atoms")
            } catch {
                for later in cookies[(index + 1)...] { xcb_discard_reply(xcb, later) }
                throw error
            }
            result.append(UInt(reply?.assumingMemoryBound(to: xcb_intern_atom_reply_t.self).pointee.atom ?? 0))
            free(reply)
        }
        guard !result.contains(0) else {
            throw XSelectionError(.protocolError, display: name, "X display \"\(name)\" refused to intern atoms")
        }
        for (atomName, atom) in zip(interning.names, result) {
            atomsByName[atomName] = atom
            namesByAtom[atom] = atomName
        }
    }

    /// Interns one name.
    func atom(_ name: String) throws(XSelectionError) -> UInt { try atoms([name])[0] }

    /// The names of `atoms`, fetched in one round trip for those not yet known.
    ///
    func names(of atoms: [UInt]) -> [String] {
        let missing = Array(Set(atoms.filter { $0 != 0 && namesByAtom[$0] == nil }))
        if !missing.isEmpty && isAlive {
            // A pipelined batch, one request per atom: a bad atom fails alone.
            let cookies = missing.map { xcb_get_atom_name(xcb, xcb_atom_t($0)).sequence }
            let deadline = ContinuousClock.now + .seconds(2)
            for (index, (atom, cookie)) in zip(missing, cookies).enumerated() {
                guard let raw = try? reply(to: cookie, deadline: deadline, what: "atom names") else {
                    if !isAlive || ContinuousClock.now >= deadline {
                        for later in cookies[(index + 1)...] { xcb_discard_reply(xcb, later) }
                        break
                    }
                    continue
                }
                defer { free(raw) }
                let reply = raw.assumingMemoryBound(to: xcb_get_atom_name_reply_t.self)
                let length = Int(xcb_get_atom_name_name_length(reply))
                if let text = xcb_get_atom_name_name(reply) {
                    let string = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
                    namesByAtom[atom] = string
                    atomsByName[string] = atom
                }
            }
        }
        return atoms.map { $0 == 0 ? "None" : namesByAtom[$0] ?? "atom \($0)" }
    }

    /// Creates an unmapped window of our own, by default one that receives property changes.
    func createWindow(selectingPropertyChanges: Bool = true) throws(XSelectionError) -> UInt {
        try checkAlive()
        let window = xcb_generate_id(xcb)
        var mask = selectingPropertyChanges ? XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue : 0
        xcb_create_window(
            xcb, 0, window, xcb_window_t(root), -10, -10, 1, 1, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0,
            XCB_CW_EVENT_MASK.rawValue, &mask)
        return UInt(window)
    }

    /// Sets the events `window` of ours reports.
    func selectEvents(of window: UInt, _ mask: UInt32) {
        var value = mask
        xcb_change_window_attributes(xcb, xcb_window_t(truncatingIfNeeded: window), XCB_CW_EVENT_MASK.rawValue, &value)
    }

    /// Waits until the connection's socket is readable or `deadline` passes;
    /// `extraFD` (a wake pipe) also ends the wait. Returns which was readable.
    package func waitReadable(until deadline: ContinuousClock.Instant?, extraFD: Int32 = -1) -> (x: Bool, extra: Bool) {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        if extraFD >= 0 { fds.append(pollfd(fd: extraFD, events: Int16(POLLIN), revents: 0)) }
        var timeout: Int32 = -1
        if let deadline {
            // A deadline already past still looks once, without waiting.
            let remaining = max(deadline - ContinuousClock.now, .zero)
            let (seconds, attoseconds) = remaining.components
            timeout = remaining == .zero ? 0 : Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        }
        let ready = poll(&fds, nfds_t(fds.count), timeout)
        guard ready > 0 else { return (false, false) }
        let x = fds[0].revents != 0
        let extra = fds.count > 1 && fds[1].revents != 0
        return (x, extra)
    }

    /// Fetches a server timestamp by appending nothing to a property of `window`
    /// (which must select PropertyChangeMask) and reading the time from the
    /// resulting PropertyNotify. Every other event that arrives meanwhile is
    /// handed to `event` (which frees it), or held for `pollEvent`.
    ///
    /// The notice of an earlier call that timed out may still come: only one
    /// caused by this call's own request counts.
    func serverTime(
        window: UInt, deadline: Duration = .seconds(2), event: ((UnsafeMutablePointer<xcb_generic_event_t>) -> Void)? = nil
    ) throws(XSelectionError) -> UInt {
        try checkAlive()
        let property = try atom(Self.timestampProperty)
        let request = xcb_change_property(
            xcb, UInt8(XCB_PROP_MODE_APPEND.rawValue), xcb_window_t(truncatingIfNeeded: window), xcb_atom_t(property),
            xcb_atom_t(XCB_ATOM_INTEGER.rawValue), 8, 0, nil
        ).sequence
        xcb_flush(xcb)
        let end = ContinuousClock.now + deadline
        while true {
            try checkAlive()
            while let raw = xcb_poll_for_event(xcb) {
                // Only the server's notice of this request counts: the gate drops one a client sent.
                if case .propertyNotify(window, property, let time, _, let serial)? = self.event(raw),
                    Self.isAtOrAfter(serial, request)
                {
                    free(raw)
                    return time
                }
                if let event { event(raw) } else { hold(raw) }
            }
            if ContinuousClock.now >= end { throw .timedOut(name, "a timestamp request") }
            _ = waitReadable(until: end)
        }
    }

    /// The property `serverTime` appends nothing to.
    static let timestampProperty = "_XSELECTION_TIMESTAMP"

    /// Whether sequence number `serial` is `reference` or later (32 bits, with wrap-around).
    static func isAtOrAfter(_ serial: UInt32, _ reference: UInt32) -> Bool {
        Int32(bitPattern: serial &- reference) >= 0
    }

    /// Flushes the output buffer.
    package func flush() {
        if isAlive { xcb_flush(xcb) }
    }

    /// Announces the XFixes version this library speaks and returns the
    /// extension's first event number, or nil when the server lacks XFixes.
    ///
    /// libxcb asks the server about an extension the first time one of its
    /// requests is made, and waits for the answer without a deadline; the
    /// question is sent here ahead, with a fence behind it, so the answer is
    /// in hand before libxcb looks. Events that arrive meanwhile are held.
    ///
    /// - Parameter names: Atoms to intern in the same round trip.
    func setUpFixes(deadline: Duration = .seconds(2), interning names: [String] = []) throws(XSelectionError) -> Int32? {
        try checkAlive()
        let end = ContinuousClock.now + deadline
        let interning = try sendInterns(names)
        let fixes = openudid_xcb_xfixes_extension()
        xcb_prefetch_extension_data(xcb, fixes)
        let fence = xcb_get_input_focus(xcb).sequence
        do throws(XSelectionError) {
            try collectInterns(interning, deadline: end)
        } catch {
            xcb_discard_reply(xcb, fence)
            throw error
        }
        free(try reply(to: fence, deadline: end, what: "the XFixes query"))
        guard let data = xcb_get_extension_data(xcb, fixes), data.pointee.present != 0 else { return nil }
        let version = xcb_xfixes_query_version(xcb, 5, 0).sequence
        free(try reply(to: version, deadline: end, what: "the XFixes version"))
        fixesEventBase = Int32(data.pointee.first_event)
        return fixesEventBase
    }

    /// Has XFixes report the owner changes of `selection` to `window` (mask 0: stop).
    func selectOwnerChanges(of selection: UInt, on window: UInt, _ watch: Bool) {
        let mask =
            watch
            ? XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue
                | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY.rawValue
                | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE.rawValue : 0
        xcb_xfixes_select_selection_input(
            xcb, xcb_window_t(truncatingIfNeeded: window), xcb_atom_t(truncatingIfNeeded: selection), mask)
    }
}
