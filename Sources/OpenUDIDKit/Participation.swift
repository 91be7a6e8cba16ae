import FoundationEssentials
import Glibc
import Synchronization
import XSelection

extension OpenUDID {
    /// Takes part in the session: serves this app's record in the lowest free
    /// selection slot, resolves again whenever another participant's slot
    /// changes or its owner dies, and reports changes of the identifier.
    ///
    /// Without an X display (or after losing it) the app keeps working from its
    /// file slot and the mirror, and takes part again when a server comes back.
    ///
    /// A process serves at most one slot per participation, so it may run at
    /// most as many participations at once as there are slots (100 by
    /// default, per namespace); beyond that, participating fails at once.
    ///
    /// - Returns: The participation; it ends when closed or released.
    /// - Throws: `OpenUDIDError` of kind `tooManyParticipations` when this
    ///   process already runs as many participations as there are slots.
    public func participate() throws(OpenUDIDError) -> Participation {
        try Participation(udid: self)
    }
}

/// A running participation; see `OpenUDID.participate()`.
public final class Participation: Sendable {
    /// A change of the identifier this app reports.
    public struct Change: Sendable {
        /// The new identifier (all zero when the app or user opted out).
        public let identifier: Identifier
        /// The resolution that produced it.
        public let report: Report
    }

    /// The identifier changes, starting with the first resolution.
    public let changes: AsyncStream<Change>

    private let core: ParticipationCore

    init(udid: OpenUDID, onChange: (@Sendable (Change) -> Void)? = nil, waitingForFirst: Bool = true) throws(OpenUDIDError) {
        try ParticipationCore.admit(udid)
        let (stream, continuation) = AsyncStream<Change>.makeStream(bufferingPolicy: .bufferingNewest(64))
        changes = stream
        core = ParticipationCore(udid: udid, continuation: continuation, onChange: onChange)
        core.start(waiting: waitingForFirst)
    }

    deinit { core.stop() }

    /// The latest resolution.
    public var report: Report { core.latest() }

    /// The selection slot this app serves now, if any.
    public var slot: Int? { core.currentSlot() }

    /// Resolves again now (for example after `optOut()`), and publishes the result.
    public func refresh() { core.refreshNow() }

    /// Waits, without blocking a thread, until the participation's own thread
    /// has run what was posted to it before, then runs `work` there (the first
    /// resolution of a participation started in the background, among them).
    func afterJobsPostedSoFar(_ work: @escaping @Sendable (ParticipationCore) -> Void = { _ in }) async {
        await core.afterJobsPostedSoFar(work)
    }

    /// Stops taking part: the slot is no longer served (the selection is
    /// released) and `changes` ends. Releasing the participation does the same.
    ///
    /// It never waits for a resolution under way (which may wait seconds for a
    /// keyring): that one ends on the participation's own thread afterwards and
    /// publishes nothing.
    public func close() { core.stop() }
}

extension OpenUDID {
    /// Takes part as `participate()` does, and also calls `onChange` with
    /// each change, on the participation's own thread: for a host that keeps
    /// off Swift concurrency (the command-line tool, the C library), whose
    /// tasks would make libdispatch wake the process once a second for good.
    /// `onChange` must return quickly; the participation waits for it.
    ///
    /// - Parameter waitingForFirst: Whether to return only once the first
    ///   resolution is served; otherwise it runs on the participation's
    ///   thread and `onChange` hears its identifier.
    package func participate(
        waitingForFirst: Bool = true, onChange: @escaping @Sendable (Participation.Change) -> Void
    ) throws(OpenUDIDError) -> Participation {
        try Participation(udid: self, onChange: onChange, waitingForFirst: waitingForFirst)
    }
}

/// The moving parts of a participation.
///
/// All of its state lives on one thread, `loop` (an `EventLoop`), which
/// sleeps while nothing happens. docs/ARCHITECTURE.md ("From an X event to
/// the app's code") follows an owner change from the owner's loop, which
/// posts it here, through the debounce and the selection pass (which runs
/// back on the owner's loop) to `changes` and `onChange`.
///
/// Resolving runs on `loop`, not on the owner's thread: it reads every slot
/// and may wait for a keyring up to its deadline, and the owner must go on
/// answering for the app's slot meanwhile. Every mutable property is touched
/// only on `loop`, which is what makes the class safe to share.
final class ParticipationCore: @unchecked Sendable {
    let udid: OpenUDID
    private let continuation: AsyncStream<Participation.Change>.Continuation
    private let onChange: (@Sendable (Participation.Change) -> Void)?
    let loop = EventLoop(name: "openudid")
    /// The latest report, for `latest()` once the loop has stopped.
    private let lastReport = Mutex<Report?>(nil)
    /// Serves this app's slot and, on the same connection, watches every slot.
    /// Kept behind a lock only so that `stop()` can close it from the caller's
    /// thread; the loop alone opens and replaces it.
    var owner: SelectionOwner? {
        get { ownerBox.withLock { $0 } }
        set { ownerBox.withLock { $0 = newValue } }
    }
    private let ownerBox = Mutex<SelectionOwner?>(nil)
    /// Counts the owners opened, so that a late event of one closed since is ignored.
    var connection = 0
    var slot: Int?
    var published: SlotRecord?
    private var report: Report?
    /// When a resolution asked for by a change is due: once no change has
    /// come since `quiet`, or at `latest` whatever comes; nil when none is asked for.
    private var debounceDue: (quiet: ContinuousClock.Instant, latest: ContinuousClock.Instant)?
    /// Set once by `stop()`, from any thread; read everywhere before acting.
    private let closing = Atomic<Bool>(false)
    var stopped: Bool { closing.load(ordering: .acquiring) }
    var reconnecting = false
    /// Why the owner could not connect the last time it tried, for the report.
    var lastConnectionProblem: String?
    /// Tells of the user's choices made on disk by any process (opt-out, consent, reset).
    private var choices: ChoiceWatcher?
    /// The wait before reading again the slots a settled vote did not wait
    /// for, doubled each time they still do not answer; nil when none is due.
    private var lateReadDelay: Duration?
    /// Whether the last pass got no answer from any slot, the app's own
    /// included: the X server is too far behind to answer within the deadline.
    private var serverBehind = false
    /// The longest debounce while the server is behind.
    private static let behindServerDebounce: Duration = .seconds(1)
    /// The longest wait between reads of slots that do not answer.
    private static let lateReadLongest: Duration = .seconds(30)
    /// The participations this process runs, per namespace ("" for none).
    private static let running = Mutex<[String: Int]>([:])

    private var engine: Engine { udid.engine }
    var slots: SelectionSlots { udid.engine.slots }

    init(
        udid: OpenUDID, continuation: AsyncStream<Participation.Change>.Continuation,
        onChange: (@Sendable (Participation.Change) -> Void)?
    ) {
        self.udid = udid
        self.continuation = continuation
        self.onChange = onChange
    }

    /// Starts watching and resolving on `loop`; with `waiting`, returns once
    /// the first resolution is served.
    func start(waiting: Bool) {
        // From now on the handle reads the slots on the owner's connection alone.
        engine.dropReader()
        udid.participating.withLock { $0 = { [weak self] in self?.refreshedReport() } }
        let first: @Sendable () -> Void = { [self] in
            // Watching starts before the first resolution, so a choice made
            // while it runs is not missed.
            let paths = engine.paths
            if let watcher = ChoiceWatcher(files: [
                paths.optOutMarker, paths.localCacheFile(for: udid.app), paths.consentFile(for: udid.app), paths.resetMarker
            ]) {
                watcher.lastState = choiceState()
                choices = watcher
                // The loop keeps the watcher, and so its descriptor, until it stops.
                loop.watch(watcher.descriptor) { [weak self, watcher] in
                    if watcher.takeEvents() { self?.choiceChanged() }
                }
            }
            connect()
            resolveAndPublish()
        }
        if waiting { _ = loop.sync(first) } else { loop.post(first) }
    }

    /// One of the watched files changed. Only a change of the user's choices
    /// counts: the app's own writes of its local cache touch the same file and
    /// must not make it resolve again. On `loop` only.
    private func choiceChanged() {
        guard !stopped else { return }
        let now = choiceState()
        guard now != choices?.lastState else { return }
        choices?.lastState = now
        udid.forget()
        schedule()
    }

    /// The user's choices as the files say: opted out (per app or for every
    /// app), whether consent is recorded, and the reset generation.
    private func choiceState() -> ChoiceState {
        let optedOut: Bool
        if case .optedOut = engine.localCache.read() { optedOut = true } else { optedOut = false }
        let reset = try? ResetMarker(paths: engine.paths, fileSystem: engine.fileSystem).read().get()
        return ChoiceState(
            appOptedOut: optedOut, userOptedOut: engine.userOptedOut, consent: engine.hasConsent, resetGeneration: reset)
    }

    /// The latest resolution; after `stop()`, the last one made.
    func latest() -> Report {
        (loop.sync { [self] in report } ?? nil) ?? lastReport.withLock { $0 } ?? udid.resolve()
    }

    func currentSlot() -> Int? { loop.sync { [self] in slot } ?? nil }

    func refreshNow() { _ = loop.sync { [self] in resolveAndPublish() } }

    /// Resolves now, for the handle, and gives the report; nil once stopped.
    func refreshedReport() -> Report? {
        loop.sync { [self] in
            guard !stopped else { return nil }
            resolveAndPublish()
            return report
        } ?? nil
    }

    func afterJobsPostedSoFar(_ work: @escaping @Sendable (ParticipationCore) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let posted = loop.post { [self] in
                work(self)
                continuation.resume()
            }
            if !posted { continuation.resume() }
        }
    }

    /// Counts a new participation of `udid`'s namespace, or refuses it when the
    /// process already runs as many as the namespace has slots: each serves one
    /// slot, and one more would only cost two threads and a connection.
    static func admit(_ udid: OpenUDID) throws(OpenUDIDError) {
        let namespace = udid.configuration.namespace ?? ""
        let limit = udid.configuration.slotCount
        let admitted = running.withLock { running -> Bool in
            guard running[namespace, default: 0] < limit else { return false }
            running[namespace, default: 0] += 1
            return true
        }
        guard admitted else {
            throw OpenUDIDError(
                .tooManyParticipations,
                "\(udid.app.id) cannot participate: this process already runs \(limit) participations\(namespace.isEmpty ? "" : " in namespace \(namespace)"), one for each selection slot; close one first"
            )
        }
    }

    /// Stops at once, from any thread: the slot is released (hanging up the
    /// owner's connection releases it) and `changes` ends before this returns.
    /// A resolution under way goes on to its end on `loop`, which then stops;
    /// nobody waits for it, and it publishes nothing.
    func stop() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        udid.participating.withLock { $0 = nil }
        // The owner hangs up its connection at once, which releases the slot;
        // its thread closes the rest on its own, waited for by nobody.
        owner?.close(waiting: false)
        continuation.finish()
        let namespace = udid.configuration.namespace ?? ""
        Self.running.withLock { $0[namespace, default: 1] -= 1 }
        loop.stop { [self] in
            choices = nil
            // One the loop opened while this stop closed the one before.
            owner?.close()
            owner = nil
            slot = nil
        }
    }

    // MARK: Resolution

    /// Resolves once no change has come for the debounce, or the longest
    /// debounce after the first: a burst of changes (a hundred apps starting
    /// at once) costs one resolution per longest debounce instead of one per
    /// debounce, and a lone change is still heard after the debounce. On
    /// `loop` only.
    func schedule() {
        guard !stopped else { return }
        let now = ContinuousClock.now
        // A server that answered nothing in the last pass is overloaded (a
        // hundred apps starting at once): every pass adds to its queue, and
        // one that comes back empty again is pure cost, so wait a second
        // whatever comes meanwhile.
        let quiet = serverBehind ? Self.behindServerDebounce : udid.configuration.debounce
        let longest = serverBehind ? Self.behindServerDebounce : udid.configuration.debounceLongest
        if let due = debounceDue {
            debounceDue = (quiet: max(due.quiet, now + quiet), latest: due.latest)
            return
        }
        debounceDue = (quiet: now + quiet, latest: now + longest)
        awaitDebounce()
    }

    /// Waits for the debounce `schedule()` set, then resolves. On `loop` only.
    private func awaitDebounce() {
        guard let due = debounceDue else { return }
        let wait = ContinuousClock.now.duration(to: min(due.quiet, due.latest))
        loop.schedule(after: max(wait, .zero)) { [self] in
            guard let due = debounceDue else { return }
            guard ContinuousClock.now >= min(due.quiet, due.latest) else { return awaitDebounce() }
            debounceDue = nil
            resolveAndPublish()
        }
    }

    /// Resolves, serves the result in our slot, and reports a change. On `loop` only.
    func resolveAndPublish() {
        guard !stopped else { return }
        let previous = report?.identifier
        var fresh = udid.exclusively { engine.resolve(slot: slot, after: report, selections: selectionAccess) }
        // Without shared files there is no file lock to serialise generating:
        // apps started at once from nothing would each publish an identifier
        // of their own and, with every tie going to the value an app holds,
        // stay apart. The X server serialises them instead (docs/PROTOCOL.md §6).
        var generationLock: SelectionName?
        let sharesFiles = udid.configuration.usesFiles && engine.paths.filesShared
        if fresh.origin == .generated, !sharesFiles, let lock = takeGenerationLock() {
            generationLock = lock
            fresh = udid.exclusively { engine.resolve(slot: slot, after: report, selections: selectionAccess) }
        }
        if fresh.optOut == .noConsent {
            // Without the user's consent nothing is published: give up the slot.
            if let slot { try? owner?.release(slots.name(slot)) }
            slot = nil
            published = nil
        } else {
            publish(engine.slotRecord(for: fresh))
        }
        if let generationLock { try? owner?.release(generationLock) }
        if fresh.slot != slot {
            fresh = fresh.with(slot: slot)
        }
        report = fresh
        lastReport.withLock { $0 = fresh }
        serverBehind = slot != nil && fresh.rejected.count { $0.code == .noAnswer } >= slots.names.count
        udid.remember(fresh)
        if fresh.identifier != previous, !stopped {
            let change = Participation.Change(identifier: fresh.identifier, report: fresh)
            continuation.yield(change)
            onChange?(change)
        }
        scheduleLateRead(fresh.silentSlots.isEmpty)
    }

    /// Some slots' owners did not answer (a frozen or slow app): the vote settled
    /// without them, or they were silent to the deadline. Read again after 1 s,
    /// then 2, 4 … up to 30 s while they stay silent, so that an app that thaws
    /// is heard. Its slot's owner did not change, so XFixes would not tell. No
    /// timer runs while every slot answers. On `loop` only.
    private func scheduleLateRead(_ everyoneAnswered: Bool) {
        if everyoneAnswered {
            lateReadDelay = nil
            return
        }
        guard lateReadDelay == nil else { return }
        let delay = Duration.seconds(1)
        lateReadDelay = delay
        lateRead(after: delay)
    }

    private func lateRead(after delay: Duration) {
        loop.schedule(after: delay) { [weak self] in
            guard let self, !self.stopped, self.lateReadDelay != nil else { return }
            self.resolveAndPublish()
            // Still silent: wait longer before the next try.
            guard let current = self.lateReadDelay, self.report?.silentSlots.isEmpty == false else { return }
            let next = min(current * 2, Self.lateReadLongest)
            self.lateReadDelay = next
            self.lateRead(after: next)
        }
    }

    /// Claims the generation selection, waiting while another app holds it
    /// (it is generating and about to publish), at most `Engine.generationWait`.
    /// Returns nil when it stayed taken or the connection failed: the app then
    /// publishes what it generated, as it would have without the lock.
    private func takeGenerationLock() -> SelectionName? {
        guard let owner else { return nil }
        let lock = slots.generationLock
        let clock = ContinuousClock()
        let giveUp = clock.now + Engine.generationWait
        while clock.now < giveUp {
            do throws(XSelectionError) {
                if case .claimed = try owner.claim(lock, payloads: [], mode: .ifFree) { return lock }
            } catch {
                return nil
            }
            usleep(10_000)
        }
        return nil
    }

    /// Serves `record`: in the slot we hold (claiming it again, so that XFixes
    /// tells the others its content changed), or in the lowest free slot.
    private func publish(_ record: SlotRecord) {
        guard let owner else { return }
        if let published, Engine.same(published, record), slot != nil { return }
        let payloads = SelectionSlots.payloads(for: record)
        do throws(XSelectionError) {
            if let slot, case .claimed = try owner.claim(slots.name(slot), payloads: payloads, mode: .ifFree) {
                published = record
                return
            }
            // Found and claimed under one server grab, which costs the same
            // whether slot 0 is free or slot 99: trying slot after slot costs a
            // grab and a timestamp each, seconds for a hundred on a busy server.
            let others = slots.names.filter { $0 != slot.map(slots.name) }
            if let claimed = try owner.claimFirstFree(of: others, payloads: payloads),
                let index = slots.index(of: claimed.selection)
            {
                if let slot { try? owner.release(slots.name(slot)) }
                slot = index
                published = record
                return
            }
        } catch {
            connectionLost()
            return
        }
        // Every slot is taken: the app still resolves, it just is not seen
        // until XFixes reports a slot given up and it resolves again.
        slot = nil
        published = nil
    }
}

/// The user's choices a participant follows on disk.
struct ChoiceState: Sendable, Equatable {
    var appOptedOut: Bool
    var userOptedOut: Bool
    var consent: Bool
    /// The generation the reset marker names; nil when it cannot be read.
    var resetGeneration: Int64?
}
