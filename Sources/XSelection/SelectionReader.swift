import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Reads selections that other clients own, many at once.
///
/// A pass over many selections is pipelined: every conversion is issued before
/// any reply is awaited and the property reads are pipelined too, so reading a
/// hundred selections costs a few round trips plus the owners' own time. Each
/// selection gets its own typed outcome; one owner that is slow, hostile or
/// dead cannot hold up the others past the pass's deadline.
///
/// The reader keeps one connection on a thread of its own; calls from several
/// threads are served one after another. From its first pass over a selection
/// on, that connection hears of the selection's owner changes (XFixes, one
/// small event each), which the next pass reads and sets aside. A program that
/// also owns selections reads on its owner's connection instead
/// (`SelectionOwner.read(_:target:options:)`).
public final class SelectionReader: Sendable {
    /// The reader's thread, which holds the connection.
    private let loop: EventLoop
    /// The core, made and used on `loop` only.
    private let core: LoopBound<ReaderCore>

    /// Limits for one pass.
    public struct Options: Sendable {
        /// The whole pass ends by then; selections not answered are reported as timed out.
        public var deadline: Duration
        /// The most bytes accepted for one selection; a larger value is reported as too large and not buffered.
        public var maxBytes: Int
        /// How many selections may be in conversion at once; nil (the default) asks for all of them before
        /// awaiting any answer.
        ///
        /// A selection counts as in conversion from its request until its value has been read. A depth of 1
        /// reads one selection at a time, each conversion and property read awaited before the next is asked
        /// for, as simple requestors do; it costs a round trip or more per selection and is there to spare
        /// owners that cannot take a burst, and to measure what pipelining saves.
        package var pipelineDepth: Int?
        /// Asked, while answers are outstanding, whether the caller already knows
        /// all it needs; `true` ends the pass early, and the selections still
        /// outstanding are reported as `ReadOutcome.notAwaited`. nil (the
        /// default) waits for every answer up to the deadline.
        ///
        /// It is asked only when the pass would otherwise wait (every answer that
        /// has arrived is handled first) and only after the owners have had a
        /// fair chance: once at least one owner has answered, and after
        /// 5 ms or twice the median time the answers of this
        /// pass took, whichever is longer. So a slow but live
        /// owner on a busy machine is still waited for, and a frozen one costs a
        /// few milliseconds instead of the deadline. It runs on the calling
        /// thread, inside the pass.
        public var settled: (@Sendable (ReadProgress) -> Bool)?
        /// The least time a pass waits for answers before it asks `settled`.
        package var settlePatience: Duration
        /// Whether a value this reader read in an earlier pass, with the same
        /// target, is given again without asking its owner while XFixes has
        /// reported no change of the selection's owner since, and this pass's
        /// owner query names the same owner. False (the default) asks every owner.
        ///
        /// It suits owners that claim their selection again whenever what they
        /// serve changes, as OpenUDID participants must: a pass then costs the
        /// owners whose selection changed, not every owner. An owner that
        /// changes its answer without claiming again keeps being heard with its
        /// old one. Without XFixes every owner is asked.
        package var reusesUnchangedValues = false

        /// Creates options; the defaults are a 250 ms deadline, a 64 KiB cap, and
        /// no early end.
        public init(
            deadline: Duration = .milliseconds(250), maxBytes: Int = 64 * 1024, settled: (@Sendable (ReadProgress) -> Bool)? = nil
        ) {
            self.init(deadline: deadline, maxBytes: maxBytes, pipelineDepth: nil, settled: settled)
        }

        /// Creates options with the tuning knobs the benchmark and the tests turn.
        package init(
            deadline: Duration = .milliseconds(250), maxBytes: Int = 64 * 1024, pipelineDepth: Int?,
            settled: (@Sendable (ReadProgress) -> Bool)? = nil, settlePatience: Duration = .milliseconds(5)
        ) {
            self.deadline = deadline
            self.maxBytes = maxBytes
            self.pipelineDepth = pipelineDepth
            self.settled = settled
            self.settlePatience = settlePatience
        }
    }

    /// The display this reader is connected to.
    public let display: String

    /// Connects to `display` (or `$DISPLAY`).
    ///
    /// Opening takes at most two seconds: a server that does not answer the
    /// connection set-up by then (another client holds a server grab, or the
    /// server is stopped) is a `timedOut` error, and a server that refuses
    /// the connection (at its client limit) a `cannotOpen` error with the
    /// server's reason. Nothing is printed.
    ///
    /// - Throws: `XSelectionError` naming the display when it cannot be opened.
    public init(display: String? = nil) throws(XSelectionError) {
        let loop = EventLoop(name: "openudid-read")
        let bound = LoopBound<ReaderCore>()
        let opened = loop.sync(waitingAtMost: .seconds(30)) { () -> Result<String, XSelectionError> in
            do throws(XSelectionError) {
                let core = try ReaderCore(display: display)
                core.interruption = loop.stopWatch
                bound.value = core
                return .success(core.connection.name)
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let name)? = opened else {
            loop.stop()
            if case .failure(let error)? = opened { throw error }
            throw XSelectionError(.timedOut, display: display ?? "", "opening the X display took longer than 30 s")
        }
        self.loop = loop
        self.core = bound
        self.display = name
    }

    deinit { loop.stop { [core] in Self.shutDown(core) } }

    /// Reads `selections` converted to `target` in one pipelined pass.
    ///
    /// - Parameters:
    ///   - selections: The selections to read; duplicates are read once.
    ///   - target: The target to ask for, for example `UTF8_STRING`.
    ///   - options: The pass's deadline and size cap.
    /// - Returns: One outcome per selection.
    /// - Throws: `XSelectionError` only when the connection itself fails (the server is gone);
    ///   problems of single selections are outcomes, not errors.
    public func read(_ selections: [SelectionName], target: String, options: Options = Options()) throws(XSelectionError) -> [SelectionName:
        ReadOutcome]
    {
        try withCore(waitingAtMost: options.deadline + .seconds(10)) { core throws(XSelectionError) in
            try core.read(selections, target: target, options: options)
        }
    }

    package func beginPasses<T: Sendable>(_ body: @escaping @Sendable (Passes) throws(XSelectionError) -> T) -> Pending<T> {
        Pending.start(on: loop, display: display, lost: .closed(display), passes: { [core] in core.value.map { Passes(core: $0) } }, body)
    }

    /// Reads one selection converted to `target`.
    public func read(_ selection: SelectionName, target: String, options: Options = Options()) throws(XSelectionError) -> ReadOutcome {
        try read([selection], target: target, options: options)[selection] ?? .timedOut(owner: nil)
    }

    /// The targets the owner of `selection` offers (its answer to `TARGETS`), or nil if it gave none.
    public func targets(of selection: SelectionName, options: Options = Options()) throws(XSelectionError) -> [String]? {
        try withCore { core throws(XSelectionError) in
            guard let value = try core.read([selection], target: "TARGETS", options: options)[selection]?.value,
                value.format == 32
            else { return nil }
            return core.connection.names(of: value.items32.map(UInt.init))
        }
    }

    /// Makes one round trip to the server: sends a request that changes nothing and waits for its reply.
    ///
    /// It is the request `XSync` sends. No conversation with the server can be
    /// faster, which makes its duration the unit to measure selection reads in,
    /// and a quick check that the server still answers.
    ///
    /// - Parameter deadline: How long to wait for the reply.
    /// - Throws: `XSelectionError` when the connection is lost, or `timedOut` when
    ///   the server does not answer in time (another client may hold a server grab).
    package func roundTrip(deadline: Duration = .seconds(2)) throws(XSelectionError) {
        try withCore { core throws(XSelectionError) in try core.connection.roundTrip(deadline: .now + deadline) }
    }

    /// The current owner of each of `selections`, asked in one round trip.
    public func owners(of selections: [SelectionName]) throws(XSelectionError) -> [SelectionName: SelectionHolder?] {
        try withCore { core throws(XSelectionError) in try core.owners(of: selections) }
    }

    /// Closes the connection; later calls throw `closed`. Returns once the
    /// connection is closed (or after two seconds), so a program may exit right after.
    public func close() {
        // A child of a fork leaves the parent's connection alone.
        loop.stop(waitingAtMost: .seconds(2)) { [core] in Self.shutDown(core) }
    }

    private static func shutDown(_ core: LoopBound<ReaderCore>) {
        core.value?.connection.close()
        core.value = nil
    }

    private func withCore<T: Sendable>(
        waitingAtMost limit: Duration = .seconds(10), _ body: @escaping @Sendable (ReaderCore) throws(XSelectionError) -> T
    ) throws(XSelectionError) -> T {
        if loop.isInherited { throw .inheritedAcrossFork(display, parent: loop.process) }
        let (core, display) = (core, display)
        let result = loop.sync(waitingAtMost: limit) { () -> Result<T, XSelectionError> in
            guard let core = core.value else { return .failure(.closed(display)) }
            do throws(XSelectionError) { return .success(try body(core)) } catch { return .failure(error) }
        }
        guard let result else { throw loop.isStopped ? .closed(display) : .timedOut(display, "the reader thread") }
        return try result.get()
    }
}

/// What reads selections on a thread of its own: a `SelectionReader` on its
/// connection, or a `SelectionOwner` on the connection it serves on.
package protocol SelectionReading: Sendable {
    /// Runs `body` on the reader's thread, where it reads with the `Passes` it
    /// is given, and returns at once; `Pending.wait()` gives `body`'s result.
    /// The caller does other work meanwhile, on its own thread, instead of
    /// starting one for the reads.
    func beginPasses<T: Sendable>(_ body: @escaping @Sendable (Passes) throws(XSelectionError) -> T) -> Pending<T>
}

extension SelectionReader: SelectionReading {}

/// Reading passes, inside a job begun with `SelectionReading.beginPasses`
/// and on its thread only.
package struct Passes {
    let core: ReaderCore

    /// Reads as `SelectionReader.read(_:target:options:)` does.
    package func read(
        _ selections: [SelectionName], target: String, options: SelectionReader.Options
    ) throws(XSelectionError) -> [SelectionName: ReadOutcome] {
        try core.read(selections, target: target, options: options)
    }
}

/// The result of work begun on a reader's thread, for the caller to wait for.
package final class Pending<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, XSelectionError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    private init() {}

    /// Starts `body` on `loop`, with the passes `passes` gives there (nil: the
    /// connection is gone, which is `lost`).
    static func start(
        on loop: EventLoop, display: String, lost: XSelectionError, passes: @escaping @Sendable () -> Passes?,
        _ body: @escaping @Sendable (Passes) throws(XSelectionError) -> T
    ) -> Pending<T> {
        let pending = Pending<T>()
        let posted = loop.post {
            guard let passes = passes() else { return pending.finish(.failure(lost)) }
            do throws(XSelectionError) { pending.finish(.success(try body(passes))) } catch { pending.finish(.failure(error)) }
        }
        if !posted { pending.finish(.failure(loop.isInherited ? .inheritedAcrossFork(display, parent: loop.process) : lost)) }
        return pending
    }

    private func finish(_ outcome: Result<T, XSelectionError>) {
        result.withLock { $0 = outcome }
        done.signal()
    }

    /// Waits for the work to end and returns its result, or why it failed.
    package func wait() -> Result<T, XSelectionError> {
        done.wait()
        done.signal()
        return result.withLock { $0 }!
    }
}

/// Who owned a selection when it was read.
public struct SelectionHolder: Sendable, Hashable, CustomStringConvertible {
    /// The owner's window.
    public let window: XWindow
    /// The client (connection) the window belongs to: one client, however many selections it holds.
    public let client: XClient

    /// Creates a holder.
    public init(window: XWindow, client: XClient) {
        self.window = window
        self.client = client
    }

    public var description: String { "window \(window) of \(client)" }
}

/// A selection's value as its owner sent it.
public struct SelectionValue: Sendable, Equatable {
    /// The data; for format 16 and 32, 2 or 4 bytes per item in host byte order.
    public let bytes: [UInt8]
    /// The type the owner gave, for example `UTF8_STRING`.
    public let type: String
    /// Bits per item: 8, 16 or 32.
    public let format: Int
    /// The owner that answered.
    public let owner: SelectionHolder
    /// Whether it came incrementally (INCR).
    public let incremental: Bool

    /// The items of format-32 data.
    public var items32: [UInt32] {
        return stride(from: 0, to: bytes.count - bytes.count % 4, by: 4).map { (index: Int) -> UInt32 in
            var item = UInt32(bytes[index])
            item |= UInt32(bytes[index + 1]) << 8
            item |= UInt32(bytes[index + 2]) << 16
            item |= UInt32(bytes[index + 3]) << 24
            return item
        }
    }
}

/// Where a pass stands, as `SelectionReader.Options.settled` sees it.
public struct ReadProgress: Sendable {
    /// The selections that have their outcome.
    public let answered: [SelectionName: ReadOutcome]
    /// The selections still outstanding, with the owner the owner query named.
    public let outstanding: [SelectionName: SelectionHolder]
    /// The time since the pass began.
    public let elapsed: Duration

    /// Describes a pass's progress.
    public init(answered: [SelectionName: ReadOutcome], outstanding: [SelectionName: SelectionHolder], elapsed: Duration) {
        self.answered = answered
        self.outstanding = outstanding
        self.elapsed = elapsed
    }
}

/// What reading one selection gave: its `kind`, with the owner it is about
/// and what the kind carries. New kinds may come in later versions (`spoiled`
/// came in 0.3.0): compare `kind` with `==`, and give a `switch` over it a `default`.
public struct ReadOutcome: Sendable, Equatable {
    /// What kind of outcome it is.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The kind's stable name, such as `noOwner`.
        public let rawValue: String

        /// The kind named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Nobody owns the selection.
        public static let noOwner = Kind(rawValue: "noOwner")
        /// The owner answered with a value (`value`).
        public static let value = Kind(rawValue: "value")
        /// The owner refused the conversion (it does not offer the target, or declined).
        public static let refused = Kind(rawValue: "refused")
        /// No answer (or no complete answer) arrived before the pass's deadline.
        public static let timedOut = Kind(rawValue: "timedOut")
        /// The value exceeds the size cap; `bytes` is the size announced or received so far.
        public static let tooLarge = Kind(rawValue: "tooLarge")
        /// The answer broke the protocol (`reason`): wrong property, missing data, a
        /// broken INCR, an owner that died mid-transfer.
        public static let malformed = Kind(rawValue: "malformed")
        /// The selection changed owner between the owner query (`owner`) and the
        /// answer, so whoever answered is not known for certain; the answer is not
        /// given. Reading again tells. Detected where the server has XFixes.
        public static let ownerChanged = Kind(rawValue: "ownerChanged")
        /// The pass ended before this selection answered, because the caller's
        /// `SelectionReader.Options.settled` said it needed no more answers.
        public static let notAwaited = Kind(rawValue: "notAwaited")
        /// Another client wrote the answer's property too, between the conversion
        /// and the read, in every pass the deadline left room for: the bytes read
        /// may be anyone's, so no answer is given. The owner did answer; a client
        /// that writes into other owners' answers hides them this way.
        public static let spoiled = Kind(rawValue: "spoiled")

        /// The stable name.
        public var description: String { rawValue }
    }

    /// What kind of outcome it is.
    public let kind: Kind
    /// The owner the outcome is about, where one was known (the value's owner for `value`).
    public let owner: SelectionHolder?
    /// The value, for `value`.
    public let value: SelectionValue?
    /// For `tooLarge`: the size announced or received so far.
    public let bytes: Int?
    /// For `malformed`: what was wrong.
    public let reason: String?

    private init(
        _ kind: Kind, owner: SelectionHolder?, value: SelectionValue? = nil, bytes: Int? = nil, reason: String? = nil
    ) {
        (self.kind, self.owner, self.value, self.bytes, self.reason) = (kind, owner, value, bytes, reason)
    }

    /// Nobody owns the selection.
    public static let noOwner = ReadOutcome(.noOwner, owner: nil)
    /// The owner answered with `value`.
    public static func value(_ value: SelectionValue) -> ReadOutcome { ReadOutcome(.value, owner: value.owner, value: value) }
    /// The owner refused the conversion.
    public static func refused(owner: SelectionHolder?) -> ReadOutcome { ReadOutcome(.refused, owner: owner) }
    /// No (complete) answer came before the deadline.
    public static func timedOut(owner: SelectionHolder?) -> ReadOutcome { ReadOutcome(.timedOut, owner: owner) }
    /// The value exceeds the size cap.
    public static func tooLarge(owner: SelectionHolder?, bytes: Int) -> ReadOutcome {
        ReadOutcome(.tooLarge, owner: owner, bytes: bytes)
    }
    /// The answer broke the protocol.
    public static func malformed(owner: SelectionHolder?, reason: String) -> ReadOutcome {
        ReadOutcome(.malformed, owner: owner, reason: reason)
    }
    /// The selection changed owner while it was read.
    public static func ownerChanged(owner: SelectionHolder?) -> ReadOutcome { ReadOutcome(.ownerChanged, owner: owner) }
    /// The pass ended before the owner answered.
    public static func notAwaited(owner: SelectionHolder?) -> ReadOutcome { ReadOutcome(.notAwaited, owner: owner) }
    /// Another client wrote into the answer in every pass.
    public static func spoiled(owner: SelectionHolder?) -> ReadOutcome { ReadOutcome(.spoiled, owner: owner) }
}
