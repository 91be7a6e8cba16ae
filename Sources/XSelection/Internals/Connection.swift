import CX11
import FoundationEssentials
import Glibc

/// One connection to an X server, used by exactly one thread at a time.
///
/// It owns the `Display*` and closes it in `deinit`. It is deliberately not
/// `Sendable`: each public object keeps its connection on its own thread or
/// behind its own lock.
package final class Connection {
    package let display: OpaquePointer
    package let name: String
    let fd: Int32
    package let root: UInt
    let xcb: OpaquePointer
    /// The bits of a resource id that a client chooses; the rest name the client.
    let resourceMask: UInt32
    /// The largest property write in one request, in bytes.
    let maxRequestBytes: Int

    private let registration: UInt64
    private var atomsByName: [String: UInt] = [:]
    private var namesByAtom: [UInt: String] = [:]
    private var closed = false
    /// Whether the server was already gone when the connection was closed.
    private var lostBeforeClose = false

    /// Opens `name`, or `$DISPLAY` when `name` is nil.
    package init(name: String?) throws(XSelectionError) {
        let resolved = name ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
        guard !resolved.isEmpty else { throw .noDisplay() }
        // Install our handlers before opening, so a failure during the
        // connection set-up cannot reach libX11's exiting defaults.
        guard let display = XOpenDisplay(resolved) else { throw .cannotOpen(resolved) }
        let registration = ErrorTrap.register(display)
        self.registration = registration
        self.display = display
        self.name = resolved
        self.fd = XConnectionNumber(display)
        self.root = XDefaultRootWindow(display)
        guard let xcb = XGetXCBConnection(display) else {
            XCloseDisplay(display)
            ErrorTrap.unregister(display, registration)
            throw .cannotOpen(resolved)
        }
        self.xcb = xcb
        self.resourceMask = xcb_get_setup(xcb).pointee.resource_id_mask
        let extended = XExtendedMaxRequestSize(display)
        let units = extended > 0 ? extended : XMaxRequestSize(display)
        self.maxRequestBytes = Int(units) * 4
    }

    deinit { close() }

    /// Closes the connection. Safe after the server was lost.
    package func close() {
        guard !closed else { return }
        closed = true
        lostBeforeClose = ErrorTrap.isLost(display)
        XCloseDisplay(display)
        ErrorTrap.unregister(display, registration)
    }

    /// Whether the connection still works.
    ///
    /// Code that talks through libxcb alone (the owner) learns of a lost
    /// server from libxcb, not from libX11's I/O error handler.
    package var isAlive: Bool { !closed && !ErrorTrap.isLost(display) && xcb_connection_has_error(xcb) == 0 }

    /// Throws `connectionLost` when the server is gone.
    package func checkAlive() throws(XSelectionError) {
        // An owner or watcher closes its connection itself when the server is
        // lost; a call that reaches it afterwards must still say so.
        if closed { throw lostBeforeClose ? .connectionLost(name) : .closed(name) }
        if !isAlive { throw .connectionLost(name) }
    }

    /// Protocol errors reported for this connection since the last call.
    func takeErrors() -> [ProtocolErrorRecord] { ErrorTrap.takeErrors(display) }

    /// The client part of a resource id.
    func client(of window: UInt) -> XClient { XClient(UInt32(truncatingIfNeeded: window) & ~resourceMask) }

    /// Interns every name in one round trip (names already known cost nothing).
    ///
    /// The requests go out through xcb and their replies are collected in
    /// order: XInternAtoms does the same round trip, but tries a read of the
    /// socket before taking each reply, a failed system call per atom.
    package func atoms(_ names: [String]) throws(XSelectionError) -> [UInt] {
        let missing = Array(Set(names.filter { atomsByName[$0] == nil })).sorted()
        if !missing.isEmpty {
            try checkAlive()
            let cookies = missing.map { atomName in
                atomName.utf8CString.withUnsafeBufferPointer { text in
                    xcb_intern_atom(xcb, 0, UInt16(text.count - 1), text.baseAddress)
                }
            }
            var result: [UInt] = []
            result.reserveCapacity(cookies.count)
            for cookie in cookies {
                // Blocking is safe here: the server answers InternAtom itself, at once.
                let reply = xcb_intern_atom_reply(xcb, cookie, nil)
                result.append(UInt(reply?.pointee.atom ?? 0))
                free(reply)
            }
            try checkAlive()
            guard !result.contains(0) else {
                throw XSelectionError(.protocolError, display: name, "X display \"\(name)\" refused to intern atoms")
            }
            for (atomName, atom) in zip(missing, result) {
                atomsByName[atomName] = atom
                namesByAtom[atom] = atomName
            }
        }
        return names.map { atomsByName[$0] ?? 0 }
    }

    /// Interns one name.
    func atom(_ name: String) throws(XSelectionError) -> UInt { try atoms([name])[0] }

    /// The names of `atoms`, fetched in one round trip for those not yet known.
    func names(of atoms: [UInt]) -> [String] {
        let missing = Array(Set(atoms.filter { $0 != 0 && namesByAtom[$0] == nil }))
        if !missing.isEmpty && isAlive {
            // A pipelined batch: XGetAtomNames fails as a whole if any atom is
            // bad, so ask each one through xcb and collect the replies.
            let cookies = missing.map { xcb_get_atom_name(xcb, xcb_atom_t($0)) }
            for (atom, cookie) in zip(missing, cookies) {
                guard let reply = xcb_get_atom_name_reply(xcb, cookie, nil) else { continue }
                defer { free(reply) }
                let length = Int(xcb_get_atom_name_name_length(reply))
                if let raw = xcb_get_atom_name_name(reply) {
                    let text = String(decoding: UnsafeRawBufferPointer(start: raw, count: length), as: UTF8.self)
                    namesByAtom[atom] = text
                    atomsByName[text] = atom
                }
            }
        }
        return atoms.map { $0 == 0 ? "None" : namesByAtom[$0] ?? "atom \($0)" }
    }

    /// Creates an unmapped window of our own, by default one that receives property changes.
    func createWindow(selectingPropertyChanges: Bool = true) throws(XSelectionError) -> UInt {
        try checkAlive()
        let window = XCreateSimpleWindow(display, root, -10, -10, 1, 1, 0, 0, 0)
        if selectingPropertyChanges { XSelectInput(display, window, PropertyChangeMask) }
        return window
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

    /// Reads what the server sent and returns how many events are queued.
    ///
    /// Never blocks, and never calls into libX11 once the connection is lost:
    /// `XNextEvent` on a dead connection with an empty queue crashes.
    package func pending() -> Int32 {
        guard isAlive else { return 0 }
        let count = XPending(display)
        return isAlive ? count : 0
    }

    /// How many events are already queued, without reading from the socket.
    func queued() -> Int32 {
        isAlive ? XEventsQueued(display, QueuedAlready) : 0
    }

    /// Takes the next queued event; call only when `pending()` said there is one.
    package func nextEvent() -> XEvent {
        var event = XEvent()
        XNextEvent(display, &event)
        return event
    }

    /// Fetches a server timestamp by appending nothing to a property of `window`
    /// (which must select PropertyChangeMask) and reading the time from the
    /// resulting PropertyNotify. Other events that arrive meanwhile stay queued.
    ///
    /// The notice of an earlier call that timed out may still come: only one
    /// caused by this call's own request counts.
    func serverTime(window: UInt, deadline: Duration = .seconds(2)) throws(XSelectionError) -> UInt {
        let property = try atom("_XSELECTION_TIMESTAMP")
        var nothing: UInt8 = 0
        let request = nextRequestSerial
        XChangeProperty(display, window, property, UInt(XA_INTEGER), 8, PropModeAppend, &nothing, 0)
        XFlush(display)
        let end = ContinuousClock.now + deadline
        var event = XEvent()
        while true {
            try checkAlive()
            while XCheckTypedWindowEvent(display, window, PropertyNotify, &event) != 0 {
                if event.xproperty.atom == property, event.xproperty.serial >= request { return UInt(event.xproperty.time) }
            }
            if ContinuousClock.now >= end { throw .timedOut(name, "a timestamp request") }
            if waitReadable(until: end).x { _ = pending() }
        }
    }

    /// Flushes the output buffer.
    package func flush() {
        if isAlive { XFlush(display) }
    }

    /// Announces the XFixes version this library speaks and returns the
    /// extension's first event number, or nil when the server lacks XFixes.
    /// Two round trips through libX11, which takes into its own queue any
    /// event that arrives meanwhile: call it before anything whose events
    /// matter is set up.
    func setUpFixes() -> Int32? {
        var eventBase: Int32 = 0
        var errorBase: Int32 = 0
        guard XFixesQueryExtension(display, &eventBase, &errorBase) != 0 else { return nil }
        var major: Int32 = 0
        var minor: Int32 = 0
        XFixesQueryVersion(display, &major, &minor)
        return eventBase
    }

    /// The sequence number the next request will get.
    var nextRequestSerial: UInt { UInt(XNextRequest(display)) }
}
