import CX11
import FoundationEssentials
import Glibc

/// The serving side of `SelectionOwner`; lives on the owner's thread only.
final class OwnerCore {
    private struct Prepared {
        var type: UInt
        var format: Int32
        var bytes: [UInt8]
    }

    private struct Held {
        var name: SelectionName
        var since: UInt
        var payloads: [UInt: Prepared]
    }

    /// How many requests a requestor client may still have answered while the
    /// owner is behind (a token bucket, refilled over time).
    private struct Allowance {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    typealias Request = ServerEvent.SelectionRequest

    private struct TransferKey: Hashable {
        var requestor: UInt
        var property: UInt
    }

    private struct Transfer {
        var data: Prepared
        var offset = 0
        var deadline: ContinuousClock.Instant
    }

    let connection: Connection
    let window: UInt
    var stopRequested = false

    private let options: SelectionOwner.Options
    private let events: EventSink<SelectionOwner.Event>
    private let shared: OwnerShared
    private let chunkSize: Int
    private let incrThreshold: Int
    private var held: [UInt: Held] = [:]
    private var transfers: [TransferKey: Transfer] = [:]
    private var allowances: [UInt32: Allowance] = [:]
    /// The allowance of the client that asked last, kept out of `allowances` while it asks.
    private var lastClient: (client: UInt32, allowance: Allowance)?
    /// Which requestor each recent request of ours wrote to, by sequence
    /// number, so a protocol error can be blamed on the peer whose window caused it.
    private var recentRequests: [(serial: UInt, requestor: UInt)] = []
    /// Protocol errors read since the last look, oldest first.
    private var peerErrors: [ProtocolErrorRecord] = []
    /// Events that arrived while the owner waited for a reply of its own.
    private var stash = EventStash()
    /// Events handled since the input last ran dry: how far behind the owner is.
    private var sinceDry = 0
    /// When the current batch of events began.
    private var turnStarted = ContinuousClock.now
    /// Whether requests were written since the last flush.
    private var unflushed = false
    /// What the current batch did, published once at its end.
    private var counts = SelectionOwner.Statistics()
    /// While the owner holds the server to catch up with a flood: the request
    /// whose reply follows the last event queued before the hold, and when the
    /// hold began.
    private var catchingUp: (fence: UInt32, since: ContinuousClock.Instant)?
    /// The selections whose owner changes this connection reports, and where to.
    private var watched: [UInt: SelectionName] = [:]
    private var watchEvents: EventSink<SelectionWatcher.Event>?

    // Atoms every owner needs.
    private let targetsAtom, timestampAtom, multipleAtom, incrAtom, atomPairAtom: UInt

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

    func run(_ thread: ServiceThread<OwnerCore>) {
        while !stopRequested {
            guard connection.isAlive else {
                events.yield(.connectionLost(.connectionLost(connection.name)))
                watchEvents?.yield(.connectionLost(.connectionLost(connection.name)))
                break
            }
            // A bounded batch, taken from libxcb one event at a time: under a
            // flood the input never runs dry, and the host's claims and releases
            // must still get their turn. What is not taken stays in the server.
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
                connection.flushRequests()
                unflushed = false
            }
            guard connection.isAlive else { continue }
            // Events libxcb has already read do not make the socket readable, and
            // writing can read too (while libxcb waits to send, it takes what the
            // server sent into its own queue, which poll cannot see). So with
            // anything queued, look at the wake pipe without waiting.
            if stash.isEmpty, let queued = connection.pollQueuedEvent() {
                setAside(queued)
            }
            let wake =
                !stash.isEmpty
                ? ContinuousClock.now
                : (transfers.values.map(\.deadline) + [catchingUp.map { $0.since + Self.catchUpLimit }].compactMap { $0 }).min()
            let ready = connection.waitReadable(until: wake, extraFD: thread.wakePipe.readFD)
            if ready.extra { thread.runJobs(self) }
        }
        if catchingUp != nil { stopCatchingUp() }
        held.removeAll()
        transfers.removeAll()
        connection.close()
        events.finish()
        watchEvents?.finish()
    }

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
    private func paceCatchingUp() {
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

    private func stopCatchingUp() {
        xcb_ungrab_server(connection.xcb)
        catchingUp = nil
        unflushed = true
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
    private func setAside(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) {
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

    // MARK: Requests and replies of our own

    /// Waits for the reply to `sequence`; events that arrive first are set aside.
    private func reply(to sequence: UInt32, what: String) throws(XSelectionError) -> UnsafeMutableRawPointer? {
        unflushed = false
        return try connection.reply(to: sequence, deadline: .now + .seconds(2), what: what) { self.setAside($0) }
    }

    private func selectionOwner(_ selection: UInt) throws(XSelectionError) -> UInt {
        try ownerReply(xcb_get_selection_owner(connection.xcb, xcb_atom_t(selection)).sequence)
    }

    /// The owner a selection owner query sent as `cookie` names (0: none).
    private func ownerReply(_ cookie: UInt32) throws(XSelectionError) -> UInt {
        guard let raw = try reply(to: cookie, what: "a selection owner query") else { return 0 }
        defer { free(raw) }
        return UInt(raw.assumingMemoryBound(to: xcb_get_selection_owner_reply_t.self).pointee.owner)
    }

    /// Lets the server go (`UngrabServer`) and sends it at once.
    private func ungrabServer() {
        xcb_ungrab_server(connection.xcb)
        catchingUp = nil // the ungrab ended that hold too
        connection.flushRequests()
    }

    /// A server timestamp (`Connection.serverTime`); events that arrive first are set aside.
    private func serverTime() throws(XSelectionError) -> UInt {
        unflushed = false
        return try connection.serverTime(window: window) { self.setAside($0) }
    }

    private func setOwner(_ selection: UInt, to owner: UInt, time: UInt) {
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
            connection.flushRequests()
            unflushed = false
        }
    }

    // MARK: Watching other selections

    /// Has XFixes report the owner changes of `names` on this connection, to
    /// `events` (ending an earlier watch), then looks up their owners: the
    /// subscription comes first, so no change falls between the two.
    func watch(_ names: [SelectionName], events: EventSink<SelectionWatcher.Event>) throws(XSelectionError)
        -> [SelectionName: SelectionHolder?]
    {
        try connection.checkAlive()
        guard connection.fixesEventBase != nil else { throw .missingFixes(connection.name) }
        let atoms = try connection.atoms(names.map(\.rawValue))
        let wanted = Dictionary(zip(atoms, names), uniquingKeysWith: { first, _ in first })
        for atom in watched.keys where wanted[atom] == nil {
            connection.selectOwnerChanges(of: atom, on: connection.root, false)
        }
        for atom in wanted.keys where watched[atom] == nil {
            connection.selectOwnerChanges(of: atom, on: connection.root, true)
        }
        watchEvents?.finish()
        watched = wanted
        watchEvents = events
        let cookies = atoms.map { xcb_get_selection_owner(connection.xcb, xcb_atom_t($0)).sequence }
        connection.flushRequests()
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

    private func prepare(_ payloads: [SelectionPayload]) throws(XSelectionError) -> [UInt: Prepared] {
        let atoms = try connection.atoms(payloads.flatMap { [$0.target, $0.type] })
        var prepared: [UInt: Prepared] = [:]
        for (index, payload) in payloads.enumerated() {
            let format = Int32([8, 16, 32].contains(payload.format) ? payload.format : 8)
            prepared[atoms[2 * index]] = Prepared(type: atoms[2 * index + 1], format: format, bytes: payload.bytes)
        }
        return prepared
    }

    // MARK: Answering requests

    private func answer(_ request: Request) {
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
    private func shouldShed(_ request: Request) -> Bool {
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

    private func isWithinOwnership(_ time: UInt, _ since: UInt) -> Bool {
        AnswerRules.ownerAnswers(time: UInt32(truncatingIfNeeded: time), claim: UInt32(truncatingIfNeeded: since))
    }

    private func convert(_ target: UInt, into property: UInt, of requestor: UInt, _ selection: Held) -> Bool {
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

    private func answerMultiple(requestor: UInt, property: UInt, _ selection: Held) -> Bool {
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

    private func write(_ payload: Prepared, bytes: ArraySlice<UInt8>, to requestor: UInt, property: UInt) {
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
    private func change<Item: FixedWidthInteger>(_ window: UInt, _ property: UInt, type: UInt, format: Int, _ items: [Item]) {
        items.withUnsafeBytes { raw in
            changeRaw(window, property, type: type, format: format, count: items.count, raw.baseAddress)
        }
    }

    private func changeRaw(_ window: UInt, _ property: UInt, type: UInt, format: Int, count: Int, _ data: UnsafeRawPointer?) {
        let cookie = xcb_change_property(
            connection.xcb, UInt8(XCB_PROP_MODE_REPLACE.rawValue), xcb_window_t(truncatingIfNeeded: window),
            xcb_atom_t(truncatingIfNeeded: property), xcb_atom_t(truncatingIfNeeded: type),
            UInt8(format), UInt32(count), data)
        remember(cookie.sequence, window)
        unflushed = true
    }

    /// Selects property changes on a requestor's window, or stops.
    private func watchProperties(of requestor: UInt, _ watch: Bool) {
        var mask = watch ? XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue : 0
        let cookie = xcb_change_window_attributes(
            connection.xcb, xcb_window_t(truncatingIfNeeded: requestor), XCB_CW_EVENT_MASK.rawValue, &mask)
        remember(cookie.sequence, requestor)
        unflushed = true
    }

    // MARK: INCR

    private func startTransfer(_ payload: Prepared, requestor: UInt, property: UInt) -> Bool {
        let key = TransferKey(requestor: requestor, property: property)
        guard transfers[key] != nil || transfers.count < options.maxTransfers else { return false }
        // We learn that the requestor took a chunk from its PropertyNotify(Delete).
        watchProperties(of: requestor, true)
        change(requestor, property, type: incrAtom, format: 32, [UInt32(truncatingIfNeeded: payload.bytes.count)])
        transfers[key] = Transfer(data: payload, deadline: .now + options.transferTimeout)
        shared.count { $0.incrStarted += 1 }
        return true
    }

    private func continueTransfer(_ key: TransferKey) {
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

    private func finish(_ key: TransferKey) {
        transfers.removeValue(forKey: key)
        if !transfers.keys.contains(where: { $0.requestor == key.requestor }) {
            watchProperties(of: key.requestor, false)
        }
    }

    /// Drops transfers whose requestor stopped taking chunks; returns whether any was dropped.
    private func expireTransfers() -> Bool {
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
    private func remember(_ sequence: UInt32, _ requestor: UInt) {
        recentRequests.append((UInt(sequence), requestor))
        if recentRequests.count > 1024 { recentRequests.removeFirst(512) }
    }

    /// Attributes each protocol error to the requestor we were writing to when
    /// it happened and drops that requestor's transfers: a window that died
    /// mid-transfer must not keep us sending chunks into the void.
    private func blamePeerErrors() {
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

/// Events set aside in arrival order, taken from the front.
private struct EventStash {
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
