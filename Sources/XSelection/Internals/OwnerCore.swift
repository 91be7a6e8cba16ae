import CX11
import FoundationEssentials
import Glibc

/// The serving side of `SelectionOwner`, and the one X connection of a
/// participant: it lives on the owner's loop (`EventLoop`) only.
///
/// Each turn of the loop takes a bounded batch of events, answers the requests
/// for the selections held (`OwnerCore+Answers.swift`, INCR included), keeps
/// up with a flood (`OwnerCore+Flood.swift`), and runs the claims, releases and
/// reads posted to it (`OwnerCore+Claims.swift`, `ReaderCore`). A read runs on
/// this same connection, so its answers and the XFixes reports of owner
/// changes arrive in order on it, and the owner answers every request that
/// comes while a pass is in flight.
final class OwnerCore {
    struct Prepared {
        var type: UInt
        var format: Int32
        var bytes: [UInt8]
    }

    struct Held {
        var name: SelectionName
        var since: UInt
        var payloads: [UInt: Prepared]
    }

    /// How many requests a requestor client may still have answered while the
    /// owner is behind (a token bucket, refilled over time).
    struct Allowance {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    typealias Request = ServerEvent.SelectionRequest

    struct TransferKey: Hashable {
        var requestor: UInt
        var property: UInt
    }

    struct Transfer {
        var data: Prepared
        var offset = 0
        var deadline: ContinuousClock.Instant
    }

    let connection: Connection
    let window: UInt

    let options: SelectionOwner.Options
    let events: EventSink<SelectionOwner.Event>
    let shared: OwnerShared
    let chunkSize: Int
    let incrThreshold: Int
    var held: [UInt: Held] = [:]
    var transfers: [TransferKey: Transfer] = [:]
    var allowances: [UInt32: Allowance] = [:]
    /// The allowance of the client that asked last, kept out of `allowances` while it asks.
    var lastClient: (client: UInt32, allowance: Allowance)?
    /// Which requestor each recent request of ours wrote to, by sequence
    /// number, so a protocol error can be blamed on the peer whose window caused it.
    var recentRequests: [(serial: UInt, requestor: UInt)] = []
    /// Protocol errors read since the last look, oldest first.
    var peerErrors: [ProtocolErrorRecord] = []
    /// Events that arrived while the owner waited for a reply of its own.
    var stash = EventStash()
    /// Events handled since the input last ran dry: how far behind the owner is.
    var sinceDry = 0
    /// When the current batch of events began.
    var turnStarted = ContinuousClock.now
    /// Whether requests were written since the last flush.
    var unflushed = false
    /// What the current batch did, published once at its end.
    var counts = SelectionOwner.Statistics()
    /// While the owner holds the server to catch up with a flood: the request
    /// whose reply follows the last event queued before the hold, and when the
    /// hold began.
    var catchingUp: (fence: UInt32, since: ContinuousClock.Instant)?
    /// The selections whose owner changes this connection reports, and where to.
    var watched: [UInt: SelectionName] = [:]
    var watchEvents: EventSink<SelectionOwner.WatchEvent>?
    /// The reader of this connection, made at the first read.
    private var hostedReader: ReaderCore?
    /// What tells a pass that the owner's loop was told to stop.
    var interruption: StopWatch?

    // Atoms every owner needs.
    let targetsAtom, timestampAtom, multipleAtom, incrAtom, atomPairAtom: UInt

    init(
        display: String?, options: SelectionOwner.Options, events: EventSink<SelectionOwner.Event>,
        shared: OwnerShared
    ) throws(XSelectionError) {
        connection = try Connection(name: display)
        let atoms = try connection.atoms(["TARGETS", "TIMESTAMP", "MULTIPLE", "INCR", "ATOM_PAIR"])
        (targetsAtom, timestampAtom, multipleAtom, incrAtom, atomPairAtom) = (atoms[0], atoms[1], atoms[2], atoms[3], atoms[4])
        window = try connection.createWindow()
        self.options = options
        self.events = events
        self.shared = shared
        // Leave room for the request header; keep chunks a multiple of 4 bytes so
        // 16- and 32-bit data never splits an item.
        let ceiling = max(connection.maxRequestBytes - 256, 4096)
        incrThreshold = min(options.incrThreshold ?? ceiling, ceiling)
        chunkSize = max(4, (incrThreshold / 4) * 4)
        // XFixes is set up now, while nothing is owned, and before any claim
        // can wait on the server: the extension's first query has a deadline.
        _ = try connection.setUpFixes()
        connection.flush()
    }

    var heldNames: [SelectionName] { held.values.map(\.name).sorted() }

    // MARK: Load limits

    /// The most events handled before the host's posted work gets a turn.
    static let eventsPerTurn = 512
    /// Events handled without the input running dry, beyond which the owner
    /// counts as behind. Well above what honest readers send at once (one
    /// request per selection held, and a pipelined pass over even 1000
    /// selections of one owner stays below it), far below what a flood piles up.
    static let backlogLimit = 2048
    /// Requests a requestor client may have answered in a burst while the owner is behind.
    static let requestBurst = 2048.0
    /// The rate at which that allowance comes back, per second.
    static let requestsPerSecond = 2048.0
    /// Events set aside while the owner waits for a reply of its own; beyond
    /// it, requests are dropped unanswered (as a flood's would be).
    static let stashLimit = 4096
    /// The longest the owner holds the server to catch up with a flood.
    static let catchUpLimit = Duration.milliseconds(50)

    // MARK: The loop

    /// One turn of the owner's loop, run before it sleeps: a bounded batch of
    /// events, taken from libxcb one at a time (under a flood the input never
    /// runs dry, and the posted claims, releases and reads must still get their
    /// turn; what is not taken stays in the server), then what the batch left
    /// to do, and one flush.
    ///
    /// - Returns: When the loop must look again at the latest; `nil` when only
    ///   the connection or a posted job can give it something to do.
    func turn() -> ContinuousClock.Instant? {
        guard connection.isAlive else {
            shutDown(lost: true)
            return nil
        }
        turnStarted = .now
        var handled = 0
        while handled < Self.eventsPerTurn, let event = nextEvent() {
            handle(event)
            handled += 1
        }
        publishCounts()
        blamePeerErrors()
        _ = expireTransfers() // what it writes goes out with the flush below
        paceCatchingUp()
        if unflushed {
            connection.flush()
            unflushed = false
        }
        guard connection.isAlive else { return .now }
        // Events libxcb has already read do not make the socket readable, and
        // writing can read too (while libxcb waits to send, it takes what the
        // server sent into its own queue, which poll cannot see). So with
        // anything queued, come back without sleeping.
        if stash.isEmpty, let queued = connection.pollQueuedEvent() {
            setAside(queued)
        }
        if handled == Self.eventsPerTurn || !stash.isEmpty { return .now }
        return (transfers.values.map(\.deadline) + [catchingUp.map { $0.since + Self.catchUpLimit }].compactMap { $0 }).min()
    }

    /// Ends serving: lets go of a hold on the server, drops what is held and
    /// closes the connection (the server then drops every selection held), and
    /// finishes the event streams, saying first that the server was lost if so.
    func shutDown(lost: Bool = false) {
        guard !isShutDown else { return }
        isShutDown = true
        if lost {
            events.yield(.connectionLost(.connectionLost(connection.name)))
            watchEvents?.yield(.connectionLost(.connectionLost(connection.name)))
        }
        if catchingUp != nil, connection.isAlive { stopCatchingUp() }
        held.removeAll()
        transfers.removeAll()
        hostedReader = nil
        shared.socket.withLock { socket in
            socket = nil
            connection.close()
        }
        events.finish()
        watchEvents?.finish()
    }

    /// Whether `shutDown` ran.
    private(set) var isShutDown = false

    /// The reader on this connection, made at the first read: its events that
    /// are not for it come back to `handleInPass`, so that the owner answers
    /// while a pass is in flight.
    func reader() throws(XSelectionError) -> ReaderCore {
        if let hostedReader { return hostedReader }
        let made = try ReaderCore(connection: connection) { [unowned self] raw in self.handleInPass(raw) }
        made.interruption = interruption
        hostedReader = made
        return made
    }

    /// Handles at once an event a pass of the hosted reader took from the
    /// connection and does not use itself (the caller frees `raw`).
    private func handleInPass(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) {
        guard let event = decode(raw) else { return }
        // A pass takes events as a turn does: they count towards how far behind
        // the owner is, so that a flood's requests are shed during a pass too,
        // and the pass's own answers, queued behind them, come in time.
        sinceDry += 1
        handle(event)
        if unflushed {
            connection.flush()
            unflushed = false
        }
    }

    /// The next event to handle: first those set aside during a reply wait,
    /// then what libxcb has or reads (at most one buffer).
    private func nextEvent() -> ServerEvent? {
        if let event = stash.popFirst() { return event }
        while let raw = connection.pollEvent() {
            defer { free(raw) }
            if let event = decode(raw) {
                sinceDry += 1
                return event
            }
        }
        sinceDry = 0
        return nil
    }

    /// Keeps an event that arrived while the owner waited for a reply.
    func setAside(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) {
        defer { free(raw) }
        guard let event = decode(raw) else { return }
        sinceDry += 1
        if stash.count >= Self.stashLimit, case .selectionRequest = event {
            counts.shed += 1
            return
        }
        if stash.count >= Self.stashLimit * 2, case .propertyNotify = event {
            // Only requestors we watch send these; one that changes its own
            // properties without pause loses its transfer, not our memory.
            return
        }
        stash.append(event)
    }

    /// What the owner acts on in an event (the connection's gate decodes and
    /// checks it); protocol errors are recorded, to blame peers for them.
    private func decode(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) -> ServerEvent? {
        let event = connection.event(raw)
        guard case .error(let error)? = event else { return event }
        if peerErrors.count >= 1024 { peerErrors.removeFirst(512) }
        peerErrors.append(error)
        return nil
    }

    private func handle(_ event: ServerEvent) {
        switch event {
        case .selectionRequest(let request):
            answer(request)
        case .selectionClear(let selection, let clearedWindow):
            guard clearedWindow == window, held[selection] != nil else { return }
            // A clear that arrives after we claimed the selection again is stale.
            let owner = (try? selectionOwner(selection)) ?? 0
            guard owner != window, let lost = held.removeValue(forKey: selection) else { return }
            events.yield(.lost(lost.name, newOwner: owner == 0 ? nil : XWindow(UInt32(truncatingIfNeeded: owner))))
        case .propertyNotify(let changed, let property, _, let deleted, _):
            if deleted {
                continueTransfer(TransferKey(requestor: changed, property: property))
            }
        case .ownerChange(let selection, let change, let time, _):
            // Taken between passes, it still tells the reader that what it read there is stale.
            hostedReader?.ownerChanged(selection)
            guard let name = watched[selection] else { return }
            watchEvents?.yield(.changed(name, change, time: XTimestamp(UInt32(truncatingIfNeeded: time))))
        case .selectionNotify, .error:
            break
        }
    }

    /// Publishes the counts of the last batch: one lock per batch, not per request.
    private func publishCounts() {
        guard counts != SelectionOwner.Statistics() else { return }
        let delta = counts
        counts = SelectionOwner.Statistics()
        shared.count { total in
            total.answered += delta.answered
            total.refused += delta.refused
            total.shed += delta.shed
            total.catchUps += delta.catchUps
            total.peerErrors += delta.peerErrors
        }
    }
}
