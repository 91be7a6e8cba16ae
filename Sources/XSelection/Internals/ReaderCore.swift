import CX11
import FoundationEssentials
import Glibc

/// The pass logic behind `SelectionReader` and `SelectionOwner.read`: on a
/// connection of its own, or on an owner's, whose events it hands back.
final class ReaderCore {
    let connection: Connection
    /// Where events this reader does not use go, on a connection it shares:
    /// the owner's handler, so that requests are answered while a pass runs.
    /// The callee does not free them. Nil on a connection of the reader's own.
    let host: ((UnsafeMutablePointer<xcb_generic_event_t>) -> Void)?
    /// The requestor window: owners write answers to its properties. It
    /// selects PropertyChangeMask during a pass and nothing between passes:
    /// every write to an answer's property is counted (see `Slot.writes`),
    /// and INCR chunks are announced that way.
    let window: UInt
    /// A window of ours that selects PropertyChangeMask, for server timestamps.
    private let clockWindow: UInt
    private let incrAtom: UInt
    /// Whether the requestor window selects PropertyChangeMask in this pass.
    var watchingProperties = false
    /// The slots of the current pass with a property read outstanding, in the
    /// order the reads were sent, which is the order their replies arrive in.
    var readOrder: [Int] = []
    private var readHead = 0
    /// The first event number of XFixes, when the server has it: each pass
    /// watches its selections change owner, to tell who really answered.
    private var fixesEventBase: Int32? { connection.fixesEventBase }
    /// What tells a pass waiting for answers that the thread the reader runs
    /// on was told to stop: it then ends at once (`closed`).
    var interruption: StopWatch?
    /// Values of earlier passes, by selection and target atom, with the owner
    /// that gave them and their type atom; a selection's are dropped as soon
    /// as XFixes reports a change of its owner (`Options.reusesUnchangedValues`).
    var kept: [UInt: [UInt: Kept]] = [:]

    struct Kept {
        var owner: SelectionHolder
        var value: ReadOutcome
        var type: UInt
    }

    /// What a pass needs from its list of names: the distinct names in the
    /// order they are asked, their atoms, the target's, and each atom's place.
    /// Atoms never change on a connection, so the last list's is kept: a caller
    /// that reads the same slots again pays no sorting or hashing of names.
    private struct Layout {
        var selections: [SelectionName]
        var target: String
        var unique: [SelectionName]
        var atoms: [UInt]
        var targetAtom: UInt
        var indexByAtom: [UInt: Int]
    }
    private var layout: Layout?

    private func layout(of selections: [SelectionName], target: String) throws(XSelectionError) -> Layout {
        if let layout, layout.target == target, layout.selections == selections { return layout }
        let unique = Array(Set(selections)).sorted()
        let atoms = try connection.atoms(unique.map(\.rawValue) + [target])
        var indexByAtom: [UInt: Int] = [:]
        indexByAtom.reserveCapacity(unique.count)
        for index in unique.indices { indexByAtom[atoms[index]] = index }
        let layout = Layout(
            selections: selections, target: target, unique: unique, atoms: Array(atoms[..<unique.count]),
            targetAtom: atoms[unique.count], indexByAtom: indexByAtom)
        self.layout = layout
        return layout
    }

    /// A reader on a connection of its own to `display`.
    convenience init(display: String?) throws(XSelectionError) {
        try self.init(connection: try Connection(name: display), host: nil)
    }

    /// A reader on `connection`; events it does not use go to `host`.
    init(
        connection: Connection, host: ((UnsafeMutablePointer<xcb_generic_event_t>) -> Void)?
    ) throws(XSelectionError) {
        self.connection = connection
        self.host = host
        window = try connection.createWindow(selectingPropertyChanges: false)
        clockWindow = try connection.createWindow()
        // The atoms every pass needs are interned while XFixes is asked about:
        // two round trips fewer before a new reader's first pass.
        _ = try connection.setUpFixes(interning: ["INCR", Connection.timestampProperty])
        incrAtom = try connection.atom("INCR")
    }

    /// Where one selection's read stands.
    enum Stage {
        case awaitingNotify
        case readingValue(cookie: UInt32)
        case awaitingChunk
        case readingChunk(cookie: UInt32)
        case done(ReadOutcome)
    }

    struct Slot {
        var index: Int
        var name: SelectionName
        var atom: UInt
        /// The time of this slot's conversion, which its owner echoes: the pass's
        /// server time plus a random offset, so that no other owner of the pass
        /// knows it and can answer in this owner's name.
        var time: UInt = 0
        var owner: SelectionHolder?
        /// The sequence number of the owner query: ownership changes the server
        /// made after it (events with this serial or later) are news to it.
        var ownerQuery: UInt32 = 0
        /// Whether the selection changed owner after the owner query and
        /// before the answer came: the answer may then be anyone's.
        var ownerChanged = false
        var stage: Stage = .awaitingNotify
        var transfer: PropertyTransfer
        /// The type atom of a finished value.
        var type: UInt = 0
        /// A PropertyNotify(NewValue) that arrived while a read was still in flight.
        var newValueSeen = false
        /// When the outcome came, for the pass's patience before it may settle.
        var answeredAfter: Duration?
        /// The owner of a value given again from an earlier pass; nil when asked in this one.
        var reusedFrom: SelectionHolder?
        /// Whether XFixes reported a change of the owner during the pass, at any point.
        var changedInPass = false
        /// The sequence numbers of the conversion and of the first read of
        /// its answer; 0 until each is sent.
        var convertSerial: UInt32 = 0
        var readSerial: UInt32 = 0
        /// Writes to the answer's property that the server made after our
        /// conversion and before our first read: the owner's answer is one.
        /// Any client may write any window's properties, and another that
        /// wrote there in between (it learns the property's name from the
        /// selection's) would have its bytes read as this owner's answer.
        var writes = 0

        var isDone: Bool { if case .done = stage { return true } else { return false } }
    }

    func owners(of selections: [SelectionName]) throws(XSelectionError) -> [SelectionName: SelectionHolder?] {
        let unique = Array(Set(selections)).sorted()
        let atoms = try connection.atoms(unique.map(\.rawValue))
        let owners = try connection.selectionOwners(atoms, deadline: .now + .seconds(2))
        return Dictionary(uniqueKeysWithValues: zip(unique, owners))
    }

    /// Reads `selections`, asking those whose answer was spoiled again, each
    /// time in a pass of its own, while the deadline leaves room.
    ///
    /// A client that writes into another owner's answer property as soon as it
    /// sees the reader's window (or its conversion) does so once: asked again a
    /// moment later, with a fresh time, the owner's answer is the only write. A
    /// client that watches the window and writes after every answer spoils each
    /// pass, and the slot stays `spoiled`.
    func read(_ selections: [SelectionName], target: String, options: SelectionReader.Options) throws(XSelectionError) -> [SelectionName:
        ReadOutcome]
    {
        let deadline = ContinuousClock.now + options.deadline
        var outcomes = try pass(selections, target: target, options: options)
        var retry = options
        retry.settled = nil
        for _ in 0..<Self.spoiledRetries {
            let spoiled = outcomes.filter { $0.value.kind == .spoiled }.map(\.key)
            let remaining = deadline - ContinuousClock.now
            guard !spoiled.isEmpty, remaining > .milliseconds(1) else { break }
            retry.deadline = remaining
            outcomes.merge(try pass(spoiled, target: target, options: retry)) { first, again in
                // A slot that timed out when asked again keeps what it showed first.
                again.kind == .timedOut ? first : again
            }
        }
        return outcomes
    }

    /// How many times a pass asks the spoiled slots again.
    static let spoiledRetries = 2

    /// One pass over `selections`.
    private func pass(_ selections: [SelectionName], target: String, options: SelectionReader.Options) throws(XSelectionError)
        -> [SelectionName:
        ReadOutcome]
    {
        try connection.checkAlive()
        let started = ContinuousClock.now
        let deadline = started + options.deadline
        guard !selections.isEmpty else { return [:] }
        let layout = try layout(of: selections, target: target)
        let unique = layout.unique
        let targetAtom = layout.targetAtom
        let indexByAtom = layout.indexByAtom
        // A real timestamp lets us tell this pass's answers from late answers to
        // an earlier pass (owners echo it), and owners may refuse CurrentTime.
        // A server that cannot give one within the pass's deadline (it is
        // grabbed, or far behind) leaves every selection timed out: an outcome,
        // not a broken connection.
        let time: UInt
        do throws(XSelectionError) {
            time = try connection.serverTime(window: clockWindow, deadline: max(options.deadline, .milliseconds(1)))
        } catch {
            guard error.kind == .timedOut else { throw error }
            return Dictionary(uniqueKeysWithValues: unique.map { ($0, ReadOutcome.timedOut(owner: nil)) })
        }

        // Every report of an owner change that came before the timestamp's
        // notice is in the queue now: the values it concerns are out of date.
        forgetChangedValues()

        let cap = max(options.maxBytes, 0)
        let times = Self.conversionTimes(after: time, count: unique.count)
        var slots: [Slot] = []
        slots.reserveCapacity(unique.count)
        for index in unique.indices {
            slots.append(
                Slot(
                    index: index, name: unique[index], atom: layout.atoms[index], time: times[index],
                    transfer: PropertyTransfer(cap: cap, incrAtom: incrAtom)))
        }
        if options.reusesUnchangedValues && fixesEventBase != nil {
            for index in slots.indices {
                guard let earlier = kept[slots[index].atom]?[targetAtom] else { continue }
                slots[index].stage = .done(earlier.value)
                slots[index].type = earlier.type
                slots[index].reusedFrom = earlier.owner
            }
        }
        // The slots to ask their owners, in order.
        let asking = slots.indices.filter { !slots[$0].isDone }
        readOrder.removeAll(keepingCapacity: true)
        readHead = 0

        // Who answered is known only from the owner query before the
        // conversion: a selection that changes owner in between could be
        // answered by its new owner, in the old owner's name. XFixes reports
        // every change, in order with the answers.
        watchOwners(slots)

        // Pipeline: owner queries, then every conversion the depth allows, then
        // one flush. Each selection converts into a property named after itself
        // on our window, so no extra atoms are needed and answers cannot collide.
        if !watchingProperties {
            connection.selectEvents(of: window, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)
            watchingProperties = true
        }
        let ownerCookies = slots.map { xcb_get_selection_owner(connection.xcb, xcb_atom_t($0.atom)).sequence }
        for (index, cookie) in ownerCookies.enumerated() { slots[index].ownerQuery = cookie }
        let depth = max(options.pipelineDepth ?? slots.count, 1)
        // The slots asked for and not yet done; only these need looking at.
        var active: [Int] = []
        var issued = 0
        func issueUpToDepth() {
            while active.count < depth && issued < asking.count {
                let index = asking[issued]
                let atom = xcb_atom_t(truncatingIfNeeded: slots[index].atom)
                xcb_delete_property(connection.xcb, xcb_window_t(truncatingIfNeeded: window), atom)
                slots[index].convertSerial =
                    xcb_convert_selection(
                        connection.xcb, xcb_window_t(truncatingIfNeeded: window), atom, xcb_atom_t(truncatingIfNeeded: targetAtom), atom,
                        xcb_timestamp_t(truncatingIfNeeded: slots[index].time)
                    ).sequence
                active.append(index)
                issued += 1
            }
        }
        issueUpToDepth()
        connection.flush()
        let owners: [SelectionHolder?]
        do throws(XSelectionError) {
            owners = try connection.collectOwners(ownerCookies, deadline: deadline)
        } catch {
            guard error.kind == .timedOut else { throw error }
            // Likewise when the owners are not known by the deadline. Answers
            // still to come carry this pass's time, which later passes ignore.
            return Dictionary(uniqueKeysWithValues: unique.map { ($0, ReadOutcome.timedOut(owner: nil)) })
        }
        for index in slots.indices {
            slots[index].owner = owners[index]
            // Its owner changed and no report of it has come yet: read it again next time.
            if let earlier = slots[index].reusedFrom, owners[index] != earlier {
                slots[index].stage = .done(.ownerChanged(owner: owners[index]))
                kept[slots[index].atom] = nil
            }
        }

        while !active.isEmpty {
            try connection.checkAlive()
            var progressed = false
            // Events that have arrived: those libxcb holds, then one read of the socket.
            while let event = connection.pollEvent() {
                progressed = true
                handle(event, slots: &slots, indexByAtom: indexByAtom)
                free(event)
            }
            // Replies come in the order their requests went out: take them from
            // the front and stop at the first that has not come. Polling every
            // outstanding read instead costs a failed recvmsg for each one.
            while readHead < readOrder.count, collectReply(&slots[readOrder[readHead]]) {
                readHead += 1
                progressed = true
            }
            // xcb_poll_for_reply reads the socket too and keeps the events it
            // finds in libxcb's queue, where poll cannot see them: the pass
            // would sleep to its deadline with an INCR chunk's notice unread.
            if !progressed, let event = connection.pollQueuedEvent() {
                progressed = true
                handle(event, slots: &slots, indexByAtom: indexByAtom)
                free(event)
            }
            if progressed {
                for index in active where slots[index].isDone && slots[index].answeredAfter == nil {
                    slots[index].answeredAfter = ContinuousClock.now - started
                }
                active.removeAll { slots[$0].isDone }
                issueUpToDepth()
                connection.flush()
                continue
            }
            let now = ContinuousClock.now
            guard now < deadline else { break }
            // Nothing to handle: the pass would wait. Ask the caller whether the
            // answers in hand settle it, once the owners have had their chance.
            var wakeAt = deadline
            if let settled = options.settled, let patience = settlePatience(slots, floor: options.settlePatience) {
                if now - started >= patience {
                    if settled(progress(slots, elapsed: now - started)) {
                        for index in slots.indices where !slots[index].isDone {
                            discardOutstandingRead(slots[index])
                            // No owner at the owner query: nobody there to wait for.
                            let owner = slots[index].owner
                            slots[index].stage = .done(owner == nil ? .noOwner : .notAwaited(owner: owner))
                        }
                        break
                    }
                    // Asked again when something arrives, or at the deadline.
                } else {
                    wakeAt = min(deadline, started + patience)
                }
            }
            let woken = connection.waitReadable(until: wakeAt, extraFD: interruption?.descriptor ?? -1).extra
            if woken, interruption?.stopRequested() == true { throw .closed(connection.name) }
        }
        // Every write the server made before a first read was reported ahead
        // of that read's reply, which libxcb may have read with the reply:
        // take the events it holds before judging the answers.
        while let event = connection.pollEvent() {
            handle(event, slots: &slots, indexByAtom: indexByAtom)
            free(event)
        }
        for index in slots.indices where slots[index].reusedFrom == nil && !AnswerRules.acceptsAnswer(writes: slots[index].writes) {
            guard case .done(let outcome) = slots[index].stage, let value = outcome.value else { continue }
            slots[index].stage = .done(
                slots[index].writes == 0
                    ? .malformed(owner: value.owner, reason: "the answer was in its property before the selection was converted")
                    : .spoiled(owner: value.owner))
        }
        if watchingProperties {
            connection.selectEvents(of: window, 0)
            watchingProperties = false
        }
        try connection.checkAlive()

        var outcomes = finishedOutcomes(slots)
        for slot in slots where !slot.isDone {
            discardOutstandingRead(slot)
            outcomes[slot.name] = .timedOut(owner: slot.owner)
        }
        keepValues(slots, target: targetAtom)
        return outcomes
    }

    /// Keeps the values this pass asked for and got, for later passes, unless
    /// their owner changed during the pass; forgets those it did not get.
    private func keepValues(_ slots: [Slot], target: UInt) {
        guard fixesEventBase != nil else { return }
        for slot in slots where slot.reusedFrom == nil {
            if case .done(let outcome) = slot.stage, let value = outcome.value, !slot.changedInPass {
                kept[slot.atom, default: [:]][target] = Kept(owner: value.owner, value: outcome, type: slot.type)
            } else {
                kept[slot.atom]?[target] = nil
            }
        }
    }

    /// Takes every event in the queue, dropping the kept values of the
    /// selections whose owner changed. Run right after a server timestamp,
    /// when every earlier report has arrived; the other events left over
    /// from earlier passes concern no pass any more.
    private func forgetChangedValues() {
        while let raw = connection.pollEvent() {
            if case .ownerChange(let selection, _, _, _)? = connection.event(raw) { kept[selection] = nil }
            host?(raw)
            free(raw)
        }
    }

    /// Forgets what earlier passes read of `selection`, whose owner changed:
    /// for an owner that took the report of it between passes.
    func ownerChanged(_ selection: UInt) {
        kept[selection] = nil
    }

    /// The outcomes of the slots that are done, with each value's type named
    /// (the names are asked in one batch, and the connection keeps them).
    private func finishedOutcomes(_ slots: [Slot]) -> [SelectionName: ReadOutcome] {
        var outcomes: [SelectionName: ReadOutcome] = [:]
        outcomes.reserveCapacity(slots.count)
        let typeNames = connection.names(
            of: slots.compactMap { slot in
                if case .done(let outcome) = slot.stage, outcome.kind == .value { return slot.type } else { return nil }
            })
        var typeIterator = typeNames.makeIterator()
        for slot in slots {
            guard case .done(let outcome) = slot.stage else { continue }
            if let value = outcome.value {
                let typeName = typeIterator.next() ?? value.type
                outcomes[slot.name] = .value(
                    SelectionValue(
                        bytes: value.bytes, type: typeName, format: value.format, owner: value.owner, incremental: value.incremental))
            } else {
                outcomes[slot.name] = outcome
            }
        }
        return outcomes
    }

    /// How long a pass waits before it may settle: `floor`, or twice the
    /// median time this pass's owners took to answer, whichever is longer;
    /// nil while no owner has answered (there is no measure of a fair chance
    /// yet, and the machine may just be busy).
    private func settlePatience(_ slots: [Slot], floor: Duration) -> Duration? {
        let times = slots.compactMap { slot -> Duration? in
            guard slot.owner != nil, case .done(let outcome) = slot.stage, outcome != .noOwner else { return nil }
            return slot.answeredAfter
        }.sorted()
        guard !times.isEmpty else { return nil }
        return max(floor, times[times.count / 2] * 2)
    }

    /// Counts a write to the slot's property whose event has `serial` (the
    /// last request of ours the server had handled when it made the write)
    /// if it came after the conversion and before the first read.
    func countWrite(_ serial: UInt32, to slot: inout Slot) {
        guard slot.convertSerial != 0,
            AnswerRules.countsAsWrite(
                serial: serial, conversion: slot.convertSerial, firstRead: slot.readSerial == 0 ? nil : slot.readSerial)
        else { return }
        slot.writes += 1
    }

    /// A conversion time for each of `count` slots of a pass whose server time
    /// is `time`: each up to about 4.7 hours later, at random. An owner of the
    /// pass learns the time of its own conversion from the request it gets, and
    /// the reader's window and the property of every answer; with one time for
    /// the whole pass it could answer for every other slot before their owners
    /// do, and its answers would count in their names. Owners accept any time
    /// from their claim on (ICCCM compares it with the claim's time only), and
    /// the server passes it on without looking at it.
    ///
    /// The offsets come from one `getrandom` call for the whole pass: the
    /// standard library's generator makes a system call per number, a hundred
    /// per pass, which was a tenth of the reader's time in a pass.
    static func conversionTimes(after time: UInt, count: Int) -> [UInt] {
        var random = [UInt32](repeating: 0, count: count)
        let filled = random.withUnsafeMutableBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return true }
            var done = 0
            while done < buffer.count {
                let got = openudid_getrandom(base + done, UInt(buffer.count - done))
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { return false }
                done += got
            }
            return true
        }
        // A kernel without getrandom: the standard library's generator.
        if !filled { random = random.map { _ in UInt32.random(in: .min ... .max) } }
        let base = UInt32(truncatingIfNeeded: time)
        let offsets = AnswerRules.conversionOffsets
        // The offsets span 2^24 values, which divides 2^32: every offset is as likely.
        let span = UInt32(offsets.count)
        return random.map { UInt(AnswerRules.conversionTime(serverTime: base, offset: offsets.lowerBound &+ $0 % span)) }
    }

    /// The pass as `Options.settled` sees it.
    private func progress(_ slots: [Slot], elapsed: Duration) -> ReadProgress {
        var outstanding: [SelectionName: SelectionHolder] = [:]
        for slot in slots where !slot.isDone {
            if let owner = slot.owner { outstanding[slot.name] = owner }
        }
        return ReadProgress(answered: finishedOutcomes(slots), outstanding: outstanding, elapsed: elapsed)
    }

    /// Has XFixes report owner changes of `slots` to this connection, from now
    /// until it closes. Reports that arrive between passes are stale by their
    /// serial and ignored.
    private func watchOwners(_ slots: [Slot]) {
        connection.subscribeToOwnerChanges(of: slots.map(\.atom))
    }
}
