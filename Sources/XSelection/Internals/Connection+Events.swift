import CX11
import FoundationEssentials
import Glibc

/// Reading events and replies through libxcb, a bounded amount at a time.
///
/// libxcb reads at most one buffer (4 KiB) per call, so code that takes
/// events from it one at a time holds only what it is working on, and the
/// rest of a flood waits in the server. (libX11 reads everything the server
/// has sent whenever it looks for events or waits for a reply: behind a flood,
/// hundreds of megabytes never given back.)
extension Connection {
    /// Takes the next event or error, reading once from the socket if none is queued.
    ///
    /// The caller frees the result with `free`.
    func pollEvent() -> UnsafeMutablePointer<xcb_generic_event_t>? {
        if let raw = takeHeld() { return raw }
        guard isAlive else { return nil }
        return xcb_poll_for_event(xcb)
    }

    /// Takes the next event or error libxcb has already read, without reading.
    func pollQueuedEvent() -> UnsafeMutablePointer<xcb_generic_event_t>? {
        if let raw = takeHeld() { return raw }
        guard isAlive else { return nil }
        return xcb_poll_for_queued_event(xcb)
    }

    /// Waits for the reply to request `sequence`, handing every event that
    /// arrives first to `event` as it comes (or holding it for `pollEvent`
    /// when `event` is nil), so nothing piles up in libxcb while waiting.
    ///
    /// - Returns: The reply (free it with `free`), or nil when the server
    ///   answered with an error.
    /// - Throws: `timedOut` at `deadline`, `connectionLost` when the server is gone.
    func reply(
        to sequence: UInt32, deadline: ContinuousClock.Instant, what: String,
        event: ((UnsafeMutablePointer<xcb_generic_event_t>) -> Void)? = nil
    ) throws(XSelectionError) -> UnsafeMutableRawPointer? {
        xcb_flush(xcb)
        while true {
            try checkAlive()
            var replyPointer: UnsafeMutableRawPointer?
            var errorPointer: UnsafeMutablePointer<xcb_generic_error_t>?
            // Reads at most once from the socket when the reply is not there yet.
            if xcb_poll_for_reply(xcb, sequence, &replyPointer, &errorPointer) != 0 {
                free(errorPointer)
                return replyPointer
            }
            var any = false
            while let next = xcb_poll_for_queued_event(xcb) {
                if let event { event(next) } else { hold(next) }
                any = true
            }
            if any { continue }
            guard ContinuousClock.now < deadline else { throw .timedOut(name, what) }
            _ = waitReadable(until: deadline)
        }
    }

}
