import CX11
import Foundation

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
    private let events: AsyncStream<SelectionOwner.Event>.Continuation
    private let shared: OwnerShared
    private let chunkSize: Int
    private let incrThreshold: Int
    private var held: [UInt: Held] = [:]
    private var transfers: [TransferKey: Transfer] = [:]
    private var allowances: [UInt32: Allowance] = [:]
    private var flushedSerial: UInt = 0
    /// Which requestor each recent request of ours wrote to, by serial, so a
    /// protocol error can be blamed on the peer whose window caused it.
    private var recentRequests: [(serial: UInt, requestor: UInt)] = []

    // Atoms every owner needs.
    private let targetsAtom, timestampAtom, multipleAtom, incrAtom, atomPairAtom: UInt

    init(display: String?, options: SelectionOwner.Options, events: AsyncStream<SelectionOwner.Event>.Continuation,
         shared: OwnerShared) throws(XSelectionError) {
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
        connection.flush()
    }

    var heldNames: [SelectionName] { held.values.map(\.name).sorted() }

    // MARK: Load limits

    /// The most events handled before the host's posted work gets a turn.
    static let eventsPerTurn = 512
    /// Queued events beyond which the owner counts as behind. Well above what
    /// honest readers send at once (one request per selection held, and a
    /// pipelined pass over even 1000 selections of one owner stays below it),
    /// far below what a flood piles up.
    static let backlogLimit = 2048
    /// Requests a requestor client may have answered in a burst while the owner is behind.
    static let requestBurst = 2048.0
    /// The rate at which that allowance comes back, per second.
    static let requestsPerSecond = 2048.0

    // MARK: The loop

    func run(_ thread: ServiceThread<OwnerCore>) {
        while !stopRequested {
            guard connection.isAlive else {
                events.yield(.connectionLost(.connectionLost(connection.name)))
                break
            }
            // A bounded batch: under a flood of requests the queue never runs dry,
            // and the host's claims and releases must still get their turn.
            var handled = 0
            while handled < Self.eventsPerTurn, connection.pending() > 0 {
                handle(connection.nextEvent())
                handled += 1
            }
            blamePeerErrors()
            _ = expireTransfers() // what it writes goes out with the flush below
            // libX11 reads every event the server has sent whenever it flushes;
            // with nothing to send, that reading only swells the queue.
            if connection.nextRequestSerial != flushedSerial {
                connection.flush()
                flushedSerial = connection.nextRequestSerial
            }
            guard connection.isAlive else { continue }
            // Events already queued do not make the socket readable, and writing
            // can read too: while libxcb waits to send, it takes what the server
            // sent into its own queue, which poll cannot see (an INCR requestor's
            // delete read that way would wait for the transfer's time-out). So
            // with anything queued, look at the wake pipe without waiting.
            let queued = connection.queued() > 0 || connection.pending() > 0
            let wake = queued ? ContinuousClock.now : transfers.values.map(\.deadline).min()
            let ready = connection.waitReadable(until: wake, extraFD: thread.wakePipe.readFD)
            if ready.extra { thread.runJobs(self) }
        }
        held.removeAll()
        transfers.removeAll()
        connection.close()
        events.finish()
    }

    private func handle(_ event: XEvent) {
        switch event.type {
        case SelectionRequest:
            answer(event.xselectionrequest)
        case SelectionClear:
            let clear = event.xselectionclear
            guard clear.window == window, let lost = held.removeValue(forKey: clear.selection) else { return }
            let owner = XGetSelectionOwner(connection.display, clear.selection)
            events.yield(.lost(lost.name, newOwner: owner == 0 || owner == window ? nil : XWindow(UInt32(truncatingIfNeeded: owner))))
        case PropertyNotify:
            let notify = event.xproperty
            if notify.state == PropertyDelete {
                continueTransfer(TransferKey(requestor: notify.window, property: notify.atom))
            }
        default:
            break
        }
    }

    // MARK: Claiming

    func claim(_ name: SelectionName, payloads: [SelectionPayload], mode: SelectionOwner.ClaimMode) throws(XSelectionError) -> SelectionOwner.ClaimResult {
        try connection.checkAlive()
        let selection = try connection.atom(name.rawValue)
        let prepared = try prepare(payloads)
        let time = try connection.serverTime(window: window)
        let display = connection.display
        var owner: UInt
        switch mode {
        case .ifFree:
            // The grab makes check-and-claim atomic: nobody can claim between our
            // look and our claim, so two apps never both think a slot is theirs.
            XGrabServer(display)
            owner = XGetSelectionOwner(display, selection)
            if owner != 0 && owner != window {
                XUngrabServer(display)
                connection.flush()
                try connection.checkAlive()
                return .taken(by: XWindow(UInt32(truncatingIfNeeded: owner)))
            }
            XSetSelectionOwner(display, selection, window, time)
            owner = XGetSelectionOwner(display, selection)
            XUngrabServer(display)
            connection.flush()
        case .always:
            XSetSelectionOwner(display, selection, window, time)
            owner = XGetSelectionOwner(display, selection)
        }
        try connection.checkAlive()
        guard owner == window else {
            return .lostRace(to: owner == 0 ? nil : XWindow(UInt32(truncatingIfNeeded: owner)))
        }
        held[selection] = Held(name: name, since: time, payloads: prepared)
        return .claimed(since: XTimestamp(UInt32(truncatingIfNeeded: time)))
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
        if XGetSelectionOwner(connection.display, selection) == window {
            let time = try connection.serverTime(window: window)
            XSetSelectionOwner(connection.display, selection, 0, time)
            connection.flush()
        }
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

    private func answer(_ request: XSelectionRequestEvent) {
        if shouldShed(request) {
            shared.count { $0.shed += 1 }
            return
        }
        // An obsolete requestor names no property: ICCCM says use the target atom.
        let property = request.property == 0 ? request.target : request.property
        var answered = false
        if request.owner == window, let selection = held[request.selection], isWithinOwnership(request.time, selection.since) {
            remember(request.requestor)
            if request.target == multipleAtom {
                answered = request.property != 0 && answerMultiple(requestor: request.requestor, property: property, selection)
            } else {
                answered = convert(request.target, into: property, of: request.requestor, selection)
            }
        }
        shared.count { answered ? ($0.answered += 1) : ($0.refused += 1) }
        var reply = XEvent()
        reply.xselection = XSelectionEvent(type: SelectionNotify, serial: 0, send_event: 1, display: connection.display,
                                           requestor: request.requestor, selection: request.selection, target: request.target,
                                           property: answered ? property : 0, time: request.time)
        XSendEvent(connection.display, request.requestor, 0, 0, &reply)
    }

    /// Whether to drop `request` unanswered: only while the owner is behind, and
    /// only for a client that has used up its allowance.
    ///
    /// Answering costs the server more than asking, so a client that asks
    /// without pause outruns any owner; while the owner answers, libX11 keeps
    /// reading the requests into memory, a queue that grew past a million
    /// events (hundreds of megabytes) under one flooding client. Dropping that
    /// client's excess costs nearly nothing, so the owner catches up. Every
    /// other client keeps its own allowance and is answered as before, and a
    /// client asking one request at a time never makes the owner fall behind.
    /// A dropped requestor waits for an answer that does not come, as it would
    /// for any owner that is gone; ICCCM requestors bound that wait themselves.
    private func shouldShed(_ request: XSelectionRequestEvent) -> Bool {
        let client = connection.client(of: request.requestor).rawValue
        let now = ContinuousClock.now
        var allowance = allowances[client] ?? Allowance(tokens: Self.requestBurst, refilled: now)
        let (seconds, attoseconds) = (now - allowance.refilled).components
        let elapsed = Double(seconds) + Double(attoseconds) / 1e18
        allowance.tokens = max(min(Self.requestBurst, allowance.tokens + elapsed * Self.requestsPerSecond) - 1, -Self.requestBurst)
        allowance.refilled = now
        allowances[client] = allowance
        if allowances.count > 1024 {
            // Clients come and go; forget those whose allowance is back in full.
            allowances = allowances.filter { now - $0.value.refilled < .seconds(1) }
        }
        return allowance.tokens < 0 && connection.queued() > Self.backlogLimit
    }

    private func isWithinOwnership(_ time: UInt, _ since: UInt) -> Bool {
        if time == 0 { return true } // CurrentTime: accepted, as every toolkit does
        // Server time wraps; compare as a signed difference.
        return Int32(bitPattern: UInt32(truncatingIfNeeded: time) &- UInt32(truncatingIfNeeded: since)) >= 0
    }

    private func convert(_ target: UInt, into property: UInt, of requestor: UInt, _ selection: Held) -> Bool {
        switch target {
        case targetsAtom:
            let atoms = [targetsAtom, timestampAtom, multipleAtom] + selection.payloads.keys.sorted()
            change(requestor, property, type: UInt(XA_ATOM), format: 32, atoms)
            return true
        case timestampAtom:
            change(requestor, property, type: UInt(XA_INTEGER), format: 32, [selection.since])
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
        var type: UInt = 0
        var format: Int32 = 0
        var count: UInt = 0
        var after: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        let status = XGetWindowProperty(connection.display, requestor, property, 0, 4096, 0, 0,
                                        &type, &format, &count, &after, &data)
        defer { if let data { XFree(data) } }
        guard status == Success, format == 32, let data, count % 2 == 0, count > 0 else { return false }
        // Format-32 data arrives as C longs, whatever the wire size.
        var pairs = Array(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt.self), count: Int(count)))
        var changed = false
        for index in stride(from: 0, to: pairs.count, by: 2) {
            let (target, into) = (pairs[index], pairs[index + 1])
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
            // libX11 wants C longs for format 32 (4 bytes each on the wire).
            var items: [UInt] = []
            items.reserveCapacity(bytes.count / 4)
            var index = bytes.startIndex
            while index + 3 < bytes.endIndex {
                let b0 = UInt(bytes[index]), b1 = UInt(bytes[index + 1]), b2 = UInt(bytes[index + 2]), b3 = UInt(bytes[index + 3])
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
            change(requestor, property, type: payload.type, format: 8, Array(bytes))
        }
    }

    /// XChangeProperty with `items` of the C type libX11 expects for `format`.
    private func change<Item>(_ window: UInt, _ property: UInt, type: UInt, format: Int32, _ items: [Item]) {
        let display = connection.display
        items.withUnsafeBytes { raw in
            _ = XChangeProperty(display, window, property, type, format, PropModeReplace,
                                raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(items.count))
        }
    }

    // MARK: INCR

    private func startTransfer(_ payload: Prepared, requestor: UInt, property: UInt) -> Bool {
        let key = TransferKey(requestor: requestor, property: property)
        guard transfers[key] != nil || transfers.count < options.maxTransfers else { return false }
        // We learn that the requestor took a chunk from its PropertyNotify(Delete).
        XSelectInput(connection.display, requestor, PropertyChangeMask)
        change(requestor, property, type: incrAtom, format: 32, [UInt(payload.bytes.count)])
        transfers[key] = Transfer(data: payload, deadline: .now + options.transferTimeout)
        shared.count { $0.incrStarted += 1 }
        return true
    }

    private func continueTransfer(_ key: TransferKey) {
        guard var transfer = transfers[key] else { return }
        remember(key.requestor)
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
            XSelectInput(connection.display, key.requestor, NoEventMask)
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

    private func remember(_ requestor: UInt) {
        recentRequests.append((connection.nextRequestSerial, requestor))
        if recentRequests.count > 512 { recentRequests.removeFirst(256) }
    }

    /// Attributes each protocol error to the requestor we were writing to when
    /// it happened and drops that requestor's transfers: a window that died
    /// mid-transfer must not keep us sending chunks into the void.
    private func blamePeerErrors() {
        let errors = connection.takeErrors()
        guard !errors.isEmpty else { return }
        for error in errors {
            let culprit = error.code == BadWindow ? error.resource
                : recentRequests.last(where: { $0.serial <= error.serial })?.requestor
            shared.count { $0.peerErrors += 1 }
            guard let culprit else { continue }
            for key in transfers.keys where key.requestor == culprit {
                transfers.removeValue(forKey: key)
                shared.count { $0.incrDropped += 1 }
            }
        }
    }
}
