import CX11
import FoundationEssentials
import Glibc

extension Connection {

    func selectionOwners(_ atoms: [UInt], deadline: ContinuousClock.Instant) throws(XSelectionError) -> [SelectionHolder?] {
        let cookies = atoms.map { xcb_get_selection_owner(xcb, xcb_atom_t($0)).sequence }
        flush()
        return try collectOwners(cookies, deadline: deadline)
    }

    func collectOwners(_ cookies: [UInt32], deadline: ContinuousClock.Instant) throws(XSelectionError) -> [SelectionHolder?] {
        var owners = [SelectionHolder?](repeating: nil, count: cookies.count)
        var next = 0
        // The owner replies come first on the wire; a deadline keeps a grabbed
        // server from holding us forever.
        let end = max(deadline, .now + .milliseconds(50))
        while next < cookies.count {
            try checkAlive()
            var replyPointer: UnsafeMutableRawPointer?
            var errorPointer: UnsafeMutablePointer<xcb_generic_error_t>?
            if xcb_poll_for_reply(xcb, UInt32(cookies[next]), &replyPointer, &errorPointer) != 0 {
                if let replyPointer {
                    let owner = UInt(replyPointer.assumingMemoryBound(to: xcb_get_selection_owner_reply_t.self).pointee.owner)
                    if owner != 0 {
                        owners[next] = SelectionHolder(window: XWindow(UInt32(truncatingIfNeeded: owner)), client: client(of: owner))
                    }
                }
                free(replyPointer)
                free(errorPointer)
                next += 1
                continue
            }
            guard ContinuousClock.now < end else {
                // libxcb would keep the replies still to come until the connection closes.
                for cookie in cookies[next...] { xcb_discard_reply(xcb, cookie) }
                throw .timedOut(name, "selection owner queries")
            }
            _ = waitReadable(until: end)
        }
        return owners
    }

    /// Sends GetInputFocus (what XSync sends) and waits for its reply.
    func roundTrip(deadline: ContinuousClock.Instant) throws(XSelectionError) {
        try checkAlive()
        let cookie = xcb_get_input_focus(xcb).sequence
        flush()
        while true {
            try checkAlive()
            var replyPointer: UnsafeMutableRawPointer?
            var errorPointer: UnsafeMutablePointer<xcb_generic_error_t>?
            if xcb_poll_for_reply(xcb, cookie, &replyPointer, &errorPointer) != 0 {
                free(replyPointer)
                free(errorPointer)
                return
            }
            guard ContinuousClock.now < deadline else { throw .timedOut(name, "a round trip") }
            _ = waitReadable(until: deadline)
        }
    }
}
