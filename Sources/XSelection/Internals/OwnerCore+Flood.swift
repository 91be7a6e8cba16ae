import CX11
import FoundationEssentials
import Glibc

extension OwnerCore {
    // MARK: Catching up with a flood

    /// Holds the server while the owner is far behind, and lets go once it has
    /// caught up.
    ///
    /// Shedding makes a flood cheap for the owner, but not for the server: it
    /// keeps turning the flooder's requests into events for the owner faster
    /// than it writes them out, so the owner's queue in the server grows, and a
    /// request from anyone else waits behind all of it. While the owner holds
    /// the server (GrabServer) the server handles no other client's requests,
    /// so no new flood events are made, and it writes the queue out as fast as
    /// the owner reads. A fence (GetInputFocus, whose reply comes after every
    /// event queued before it) tells when the queue is through; the hold ends
    /// then, or after `catchUpLimit` at the latest, and the server serves
    /// everyone again, with the owner's queue short. The hold is taken only
    /// while the owner is behind, which honest readers never make it.
    func paceCatchingUp() {
        guard connection.isAlive else { return }
        if let hold = catchingUp {
            var reply: UnsafeMutableRawPointer?
            var error: UnsafeMutablePointer<xcb_generic_error_t>?
            let fenced = xcb_poll_for_reply(connection.xcb, hold.fence, &reply, &error) != 0
            free(reply)
            free(error)
            if fenced || ContinuousClock.now - hold.since >= Self.catchUpLimit { stopCatchingUp() }
        } else if sinceDry + stash.count > Self.backlogLimit {
            xcb_grab_server(connection.xcb)
            let fence = xcb_get_input_focus(connection.xcb)
            catchingUp = (fence.sequence, .now)
            counts.catchUps += 1
            unflushed = true
        }
    }

    func stopCatchingUp() {
        xcb_ungrab_server(connection.xcb)
        catchingUp = nil
        unflushed = true
    }

    /// Whether to drop `request` unanswered: only while the owner is behind, and
    /// only for a client that has used up its allowance.
    ///
    /// Answering costs the server more than asking, so a client that asks
    /// without pause outruns any owner. Dropping that client's excess costs
    /// nearly nothing, so the owner catches up. Every other client keeps its
    /// own allowance and is answered as before, and a client asking one request
    /// at a time never makes the owner fall behind. A dropped requestor waits
    /// for an answer that does not come, as it would for any owner that is
    /// gone; ICCCM requestors bound that wait themselves.
    func shouldShed(_ request: Request) -> Bool {
        let client = connection.client(of: request.requestor).rawValue
        // The time of the batch: a clock read per request would slow the
        // shedding that has to outrun a flood.
        let now = turnStarted
        // A flood comes from one client: keep its allowance at hand rather
        // than hash for it per request.
        if lastClient?.client != client {
            if let last = lastClient { allowances[last.client] = last.allowance }
            lastClient = (client, allowances[client] ?? Allowance(tokens: Self.requestBurst, refilled: now))
        }
        var allowance = lastClient!.allowance
        if allowance.refilled != now {
            let (seconds, attoseconds) = (now - allowance.refilled).components
            let elapsed = Double(seconds) + Double(attoseconds) / 1e18
            allowance.tokens = min(Self.requestBurst, allowance.tokens + elapsed * Self.requestsPerSecond)
            allowance.refilled = now
        }
        allowance.tokens = max(allowance.tokens - 1, -Self.requestBurst)
        lastClient!.allowance = allowance
        if allowances.count > 1024 {
            // Clients come and go; forget those whose allowance is back in full.
            allowances = allowances.filter { now - $0.value.refilled < .seconds(1) }
        }
        return allowance.tokens < 0 && sinceDry + stash.count > Self.backlogLimit
    }

}

/// Events set aside in arrival order, taken from the front.
struct EventStash {
    private var items: [ServerEvent] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }

    mutating func append(_ event: ServerEvent) { items.append(event) }

    mutating func popFirst() -> ServerEvent? {
        guard head < items.count else { return nil }
        let event = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 1024)
            head = 0
        }
        return event
    }
}
