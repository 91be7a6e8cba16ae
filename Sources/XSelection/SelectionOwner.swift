import Glibc
import Synchronization

/// Owns named selections and answers requests for them on a thread of its own.
///
/// The owner opens its own connection and serves on its own thread, so a host
/// app with its own event loop need not pump anything. The same connection
/// can watch other selections' owners (`watchOwners(of:)`) and read them
/// (`read(_:target:options:)`), so that a program that serves and reads takes
/// one X client. One owner can hold many
/// selections, each with several payload targets; it also answers `TARGETS`,
/// `TIMESTAMP` and `MULTIPLE` as ICCCM section 2.6.2 requires, and sends large
/// payloads incrementally (`INCR`).
///
/// ```swift
/// let owner = try SelectionOwner()
/// let result = try owner.claim("_MY_SELECTION",
///                              payloads: [SelectionPayload(target: "UTF8_STRING", bytes: Array("hi".utf8))],
///                              mode: .ifFree)
/// ```
public final class SelectionOwner: Sendable, SelectionReading {
    /// Tuning for an owner.
    public struct Options: Sendable {
        /// Payloads larger than this many bytes are sent with INCR. Nil means the
        /// server's maximum request size (the ICCCM rule); tests set it lower.
        public var incrThreshold: Int?
        /// An INCR transfer whose requestor does not take the next chunk within this time is dropped.
        public var transferTimeout: Duration
        /// At most this many INCR transfers run at once; further large requests are refused.
        public var maxTransfers: Int

        /// Creates the default options.
        public init(incrThreshold: Int? = nil, transferTimeout: Duration = .seconds(5), maxTransfers: Int = 64) {
            self.incrThreshold = incrThreshold
            self.transferTimeout = transferTimeout
            self.maxTransfers = maxTransfers
        }
    }

    /// How to claim a selection.
    public enum ClaimMode: Sendable {
        /// Claim only if no other window owns it: check, claim and verify under a
        /// server grab, so two claimants cannot both believe they won.
        case ifFree
        /// Take the selection whoever owns it (the protocol's plain claim).
        case always
    }

    /// The outcome of a claim.
    public enum ClaimResult: Sendable, Equatable {
        /// The selection is ours since this server time.
        case claimed(since: XTimestamp)
        /// Another window owned it and the mode was `.ifFree`; nothing changed.
        case taken(by: XWindow)
        /// The claim did not stick: after it, the server named another owner (or none).
        case lostRace(to: XWindow?)
    }

    /// Something that happened to the owner, reported on `events`. Closed:
    /// an owner either loses a selection or its connection; nothing else
    /// happens to it.
    public enum Event: Sendable, Equatable {
        /// Another client took the selection (`SelectionClear`); `newOwner` is its window where known.
        case lost(SelectionName, newOwner: XWindow?)
        /// The server went away; every selection is gone and the owner has stopped.
        case connectionLost(XSelectionError)
    }

    /// Counters of what the owner has done, for diagnostics and benchmarks.
    package struct Statistics: Sendable, Equatable {
        /// Requests answered with data.
        package var answered = 0
        /// Requests refused (unknown target, wrong time, not ours, too many transfers).
        package var refused = 0
        /// INCR transfers started.
        package var incrStarted = 0
        /// INCR transfers that sent their last chunk.
        package var incrCompleted = 0
        /// INCR transfers dropped (requestor gone, timed out).
        package var incrDropped = 0
        /// Protocol errors caused by peers (a requestor window that vanished, ...).
        package var peerErrors = 0
        /// Requests dropped unanswered because their client asked far more than
        /// others while the owner was behind (a flood).
        package var shed = 0
        /// Times the owner held the server (GrabServer) for a moment to catch up
        /// with a flood.
        package var catchUps = 0
    }

    /// The display this owner is connected to.
    public let display: String
    /// The window that owns this owner's selections.
    public let window: XWindow
    /// Losses of selections and of the connection, in the order they happened.
    public let events: AsyncStream<Event>

    /// The owner's thread, which holds the connection.
    private let loop: EventLoop
    /// The core, made and used on `loop` only.
    private let core: LoopBound<OwnerCore>
    private let shared: OwnerShared

    /// Connects to `display` (or `$DISPLAY`) and starts the serving thread.
    ///
    /// Opening takes at most two seconds: a server that does not answer the
    /// connection set-up by then (another client holds a server grab, or the
    /// server is stopped) is a `timedOut` error, and a server that refuses
    /// the connection (at its client limit) a `cannotOpen` error with the
    /// server's reason. Nothing is printed.
    ///
    /// - Throws: `XSelectionError` naming the display when it cannot be opened.
    public init(display: String? = nil, options: Options = Options()) throws(XSelectionError) {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(256))
        events = stream
        (loop, core, shared, self.display, window) = try Self.open(display: display, options: options, sink: EventSink(continuation))
    }

    /// Connects as `init(display:options:)` does, but reports to `handler`,
    /// called on the owner's thread, instead of on `events` (which is left
    /// finished): for a caller that runs a loop of its own and should not need
    /// Swift concurrency's threads to hear of a loss.
    package init(
        display: String? = nil, options: Options = Options(), handler: @escaping @Sendable (Event) -> Void
    ) throws(XSelectionError) {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        continuation.finish()
        events = stream
        (loop, core, shared, self.display, window) = try Self.open(display: display, options: options, sink: EventSink(handler))
    }

    /// Starts the owner's thread, which opens the connection; returns the
    /// thread, the core it holds, the counters it shares, the display's name
    /// and the owner's window.
    private static func open(
        display: String?, options: Options, sink: EventSink<Event>
    ) throws(XSelectionError) -> (EventLoop, LoopBound<OwnerCore>, OwnerShared, String, XWindow) {
        let shared = OwnerShared()
        let loop = EventLoop(name: "openudid-x")
        let bound = LoopBound<OwnerCore>()
        // Opening takes 2 s at most (`Connection.setUpLimit`); the bound here only
        // guards against a thread the system never ran.
        let opened = loop.sync(waitingAtMost: .seconds(30)) { () -> Result<Opened, XSelectionError> in
            do throws(XSelectionError) {
                let core = try OwnerCore(display: display, options: options, events: sink, shared: shared)
                bound.value = core
                core.interruption = loop.stopWatch
                shared.socket.withLock { $0 = core.connection.fd }
                loop.watch(core.connection.fd) {}
                loop.beforeSleep { [weak loop] in
                    let wake = bound.value?.turn()
                    if bound.value?.isShutDown == true {
                        bound.value = nil
                        loop?.stop()
                    }
                    return wake
                }
                return .success(Opened(name: core.connection.name, window: UInt32(truncatingIfNeeded: core.window)))
            } catch {
                sink.finish()
                return .failure(error)
            }
        }
        guard let opened else {
            loop.stop()
            throw XSelectionError(.timedOut, display: display ?? "", "opening the X display took longer than 30 s")
        }
        switch opened {
        case .success(let info): return (loop, bound, shared, info.name, XWindow(info.window))
        case .failure(let error):
            loop.stop()
            throw error
        }
    }

    deinit { close(waiting: false) }

    /// Claims `selection` and serves `payloads` for it.
    ///
    /// - Parameters:
    ///   - selection: The selection to own.
    ///   - payloads: The targets to serve, each with its type and bytes.
    ///   - mode: `.ifFree` to leave a selection someone else owns alone.
    /// - Returns: Whether the claim stuck, and if not, who holds the selection.
    /// - Throws: `XSelectionError` if the connection is lost or the server does not answer.
    @discardableResult
    public func claim(_ selection: SelectionName, payloads: [SelectionPayload], mode: ClaimMode = .always) throws(XSelectionError)
        -> ClaimResult
    {
        try perform { core throws(XSelectionError) in try core.claim(selection, payloads: payloads, mode: mode) }
    }

    /// A selection taken by `claimFirstFree(of:payloads:)`.
    public struct FirstFreeClaim: Sendable, Equatable {
        /// The selection now owned.
        public let selection: SelectionName
        /// The server time the ownership began.
        public let since: XTimestamp
    }

    /// Claims the first of `selections` that no window owns, and serves `payloads` for it.
    ///
    /// All the owners are looked up and the claim made and checked under one
    /// server grab, with the lookups pipelined: it costs the same few round
    /// trips whether the first selection is free or the last, and no other
    /// client can claim in between. A selection this owner already holds counts
    /// as owned.
    ///
    /// - Parameters:
    ///   - selections: The selections to try, in order of preference.
    ///   - payloads: The targets to serve, each with its type and bytes.
    /// - Returns: The selection claimed and since when, or nil when every one is owned (nothing changed).
    /// - Throws: `XSelectionError` if the connection is lost or the server does not answer.
    public func claimFirstFree(of selections: [SelectionName], payloads: [SelectionPayload]) throws(XSelectionError)
        -> FirstFreeClaim?
    {
        try perform { core throws(XSelectionError) in try core.claimFirstFree(selections, payloads: payloads) }
    }

    /// Replaces what `selection` serves; the next request gets the new payloads.
    ///
    /// - Throws: `XSelectionError` if the connection is lost.
    /// - Returns: False if the selection is not held (it was never claimed, or was lost).
    @discardableResult
    public func setPayloads(_ payloads: [SelectionPayload], for selection: SelectionName) throws(XSelectionError) -> Bool {
        try perform { core throws(XSelectionError) in try core.setPayloads(payloads, for: selection) }
    }

    /// Gives up `selection` if this owner holds it.
    public func release(_ selection: SelectionName) throws(XSelectionError) {
        try perform { core throws(XSelectionError) in try core.release(selection) }
    }

    /// A change of a selection's owner, as XFixes reports it. Closed: XFixes
    /// reports these three kinds of change and no other.
    public enum OwnerChange: Sendable, Equatable {
        /// A client set a new owner (nil: the selection was given up).
        case newOwner(SelectionHolder?)
        /// The owner's window was destroyed; the selection now has no owner.
        case ownerWindowDestroyed
        /// The owner's client disconnected (it exited or was killed); the selection now has no owner.
        case ownerClientClosed
    }

    /// One report of a watch. Closed: a watch reports changes until it ends.
    public enum WatchEvent: Sendable, Equatable {
        /// `selection` changed at server time `time`.
        case changed(SelectionName, OwnerChange, time: XTimestamp)
        /// The server went away; the watch has ended.
        case connectionLost(XSelectionError)
    }

    /// What `watchOwners(of:)` reports: the owners when the watch began, and
    /// every change after, in server order.
    public struct OwnerWatch: Sendable {
        /// The owners when the subscription began (nil: no owner).
        public let initialOwners: [SelectionName: SelectionHolder?]
        /// The changes. It finishes when the owner closes or a later
        /// `watchOwners(of:)` replaces this watch, and ends with
        /// `.connectionLost` when the server goes away.
        public let events: AsyncStream<WatchEvent>
    }

    /// Reports, through XFixes, every change of the owners of `selections`,
    /// on this owner's own connection and thread.
    ///
    /// A program that owns selections and watches others needs one connection
    /// to the X server, which counts on a server that admits 256 clients. The
    /// claims and releases of this owner are reported too; their holder's
    /// window is `window`. One watch at a time: a later call replaces the
    /// selections watched and finishes the earlier watch's `events`.
    ///
    /// - Parameter selections: The selections to watch.
    /// - Returns: The owners when the watch began, and the changes.
    /// - Throws: `XSelectionError` when the server lacks XFixes, the connection
    ///   is lost, or the server does not answer.
    public func watchOwners(of selections: [SelectionName]) throws(XSelectionError) -> OwnerWatch {
        let (stream, continuation) = AsyncStream<WatchEvent>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        do throws(XSelectionError) {
            let owners = try watchOwners(of: selections, sink: EventSink(continuation))
            return OwnerWatch(initialOwners: owners, events: stream)
        } catch {
            continuation.finish()
            throw error
        }
    }

    /// Watches as `watchOwners(of:)` does, but reports each change to
    /// `handler`, called on the owner's thread.
    ///
    /// - Returns: The owners when the watch began.
    package func watchOwners(
        of selections: [SelectionName], handler: @escaping @Sendable (WatchEvent) -> Void
    ) throws(XSelectionError) -> [SelectionName: SelectionHolder?] {
        try watchOwners(of: selections, sink: EventSink(handler))
    }

    private func watchOwners(
        of selections: [SelectionName], sink: EventSink<WatchEvent>
    ) throws(XSelectionError) -> [SelectionName: SelectionHolder?] {
        let unique = Array(Set(selections)).sorted()
        return try perform { core throws(XSelectionError) in try core.watch(unique, events: sink) }
    }

    /// The selections this owner holds now.
    public func heldSelections() throws(XSelectionError) -> [SelectionName] {
        try perform { core in core.heldNames }
    }

    /// What the owner has done so far.
    package var statistics: Statistics { shared.counters.withLock { $0 } }

    /// Stops serving and closes the connection; the server then drops every selection held.
    ///
    /// Returns once the connection is closed (or after two seconds), so a
    /// program may exit right after it.
    public func close() { close(waiting: true) }

    /// Closes as `close()` does; without `waiting`, returns at once, and the
    /// owner's thread closes the connection on its own.
    package func close(waiting: Bool) {
        let core = core
        if !loop.isInherited { shared.hangUp() }
        loop.stop(waitingAtMost: waiting ? .seconds(2) : .zero) {
            core.value?.shutDown()
            core.value = nil
        }
    }

    /// Reads `selections` on this owner's connection, as `SelectionReader.read(_:target:options:)`
    /// does, and answers for the selections it holds meanwhile.
    ///
    /// The reads' answers and the reports of owner changes come in order on the
    /// one connection, as the reading rules need; nothing waits on another
    /// connection. The pass runs on the owner's thread, which the caller waits for.
    public func read(
        _ selections: [SelectionName], target: String, options: SelectionReader.Options = SelectionReader.Options()
    ) throws(XSelectionError) -> [SelectionName: ReadOutcome] {
        try perform(waitingAtMost: options.deadline + .seconds(10)) { core throws(XSelectionError) in
            try core.reader().read(selections, target: target, options: options)
        }
    }

    package func beginPasses<T: Sendable>(_ body: @escaping @Sendable (Passes) throws(XSelectionError) -> T) -> Pending<T> {
        let core = core
        return Pending.start(
            on: loop, display: display, lost: .connectionLost(display),
            passes: { (try? core.value?.reader()).flatMap { $0 }.map { Passes(core: $0) } }, body)
    }

    private func perform<T: Sendable>(
        waitingAtMost limit: Duration = .seconds(10), _ body: @escaping @Sendable (OwnerCore) throws(XSelectionError) -> T
    ) throws(XSelectionError) -> T {
        if loop.isInherited { throw .inheritedAcrossFork(display, parent: loop.process) }
        let core = core
        let display = display
        let result = loop.sync(waitingAtMost: limit) { () -> Result<T, XSelectionError> in
            guard let core = core.value else { return .failure(.connectionLost(display)) }
            do throws(XSelectionError) { return .success(try body(core)) } catch { return .failure(error) }
        }
        guard let result else { throw loop.isStopped ? .connectionLost(display) : .timedOut(display, "the owner thread") }
        return try result.get()
    }
}

private struct Opened: Sendable {
    var name: String
    var window: UInt32
}

/// State the serving thread shares with the public object.
final class OwnerShared: Sendable {
    let counters = Mutex(SelectionOwner.Statistics())
    /// The connection's socket while it is open; the owner's thread clears it
    /// as it closes the connection, under the lock, so that no other thread
    /// ever touches a descriptor number given to another file since.
    let socket = Mutex<Int32?>(nil)

    /// Ends the connection at once from any thread (`shutdown(2)`, which
    /// leaves the descriptor to the owner's thread): the server drops every
    /// selection held now, and what the owner's thread waits for on the
    /// connection fails at once instead of running to its deadline.
    func hangUp() {
        socket.withLock { fd in
            if let fd { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    func count(_ update: (inout SelectionOwner.Statistics) -> Void) {
        counters.withLock { update(&$0) }
    }
}
