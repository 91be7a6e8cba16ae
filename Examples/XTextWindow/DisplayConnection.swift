import CXlib
import Foundation
import XSelection

/// The text window's connection through libX11, which draws its text; used
/// by one thread at a time.
///
/// XSelection speaks libxcb alone and sets no process-wide handler; the text
/// window is part of an app, which may: `XErrorTrap` keeps libX11's exiting
/// defaults away from this connection.
final class DisplayConnection {
    let display: OpaquePointer
    let name: String
    let root: UInt
    let fd: Int32
    private let registration: UInt64
    private var closed = false

    /// Opens `name`, or `$DISPLAY` when `name` is nil.
    init(name: String?) throws(XSelectionError) {
        let resolved = name ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
        guard !resolved.isEmpty else { throw .noDisplay() }
        guard let display = XOpenDisplay(resolved) else { throw .cannotOpen(resolved) }
        registration = XErrorTrap.register(display)
        self.display = display
        self.name = resolved
        fd = XConnectionNumber(display)
        root = XDefaultRootWindow(display)
    }

    deinit { close() }

    /// Closes the connection. Safe after the server was lost.
    func close() {
        guard !closed else { return }
        closed = true
        XCloseDisplay(display)
        XErrorTrap.unregister(display, registration)
    }

    /// Whether the connection still works.
    var isAlive: Bool { !closed && !XErrorTrap.isLost(display) }

    /// Throws when the server is gone or the connection was closed.
    func checkAlive() throws(XSelectionError) {
        if closed { throw .closed(name) }
        if !isAlive { throw .connectionLost(name) }
    }

    /// Interns `names` in one round trip.
    func atoms(_ names: [String]) throws(XSelectionError) -> [UInt] {
        try checkAlive()
        var strings = names.map { strdup($0) }
        defer { strings.forEach { free($0) } }
        var result = [UInt](repeating: 0, count: names.count)
        let ok = XInternAtoms(display, &strings, Int32(names.count), 0, &result)
        try checkAlive()
        guard ok != 0 else { throw XSelectionError(.protocolError, display: name, "X display \"\(name)\" refused to intern atoms") }
        return result
    }

    /// Flushes the output buffer.
    func flush() {
        if isAlive { XFlush(display) }
    }

    /// Reads what the server sent and returns how many events are queued;
    /// never calls into libX11 once the connection is lost.
    func pending() -> Int32 {
        guard isAlive else { return 0 }
        let count = XPending(display)
        return isAlive ? count : 0
    }

    /// Takes the next queued event; call only when `pending()` said there is one.
    func nextEvent() -> XEvent {
        var event = XEvent()
        XNextEvent(display, &event)
        return event
    }

    /// Waits until the socket or `extraFD` is readable, or `deadline` passes.
    func waitReadable(until deadline: ContinuousClock.Instant?, extraFD: Int32 = -1) -> (x: Bool, extra: Bool) {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        if extraFD >= 0 { fds.append(pollfd(fd: extraFD, events: Int16(POLLIN), revents: 0)) }
        var timeout: Int32 = -1
        if let deadline {
            let remaining = max(deadline - ContinuousClock.now, .zero)
            let (seconds, attoseconds) = remaining.components
            timeout = remaining == .zero ? 0 : Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        }
        guard poll(&fds, nfds_t(fds.count), timeout) > 0 else { return (false, false) }
        return (fds[0].revents != 0, fds.count > 1 && fds[1].revents != 0)
    }
}
