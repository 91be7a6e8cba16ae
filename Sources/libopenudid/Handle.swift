import Dispatch
import FoundationEssentials
import Glibc
import OpenUDIDKit
import Synchronization
import XSelection

/// What `openudid *` stands for: an `OpenUDID` and, once asked for, its participation.
final class Handle: Sendable {
    let udid: OpenUDID
    private let state = Mutex<State>(.idle)

    /// Where the handle's participation stands.
    private enum State {
        case idle
        case running(Participating)
        case closed
    }

    init(_ udid: OpenUDID) {
        self.udid = udid
    }

    /// The running participation, if any.
    var participation: Participation? {
        state.withLock { state in
            if case .running(let participating) = state { return participating.participation }
            return nil
        }
    }

    /// Starts participating, calling `listener` (when given) with each change.
    ///
    /// - Parameter waitingForFirst: Whether to return once the first resolution
    ///   is served; otherwise it runs on the participation's thread, and the
    ///   listener hears its identifier.
    func participate(_ listener: ChangeListener?, waitingForFirst: Bool, function: String) throws(CallFailure) {
        try state.withLock { (state: inout State) throws(CallFailure) in
            try Self.checkIdle(state, function: function, app: udid.app.id)
            do throws(OpenUDIDError) {
                state = .running(try Participating(udid, listener: listener, waitingForFirst: waitingForFirst))
            } catch {
                throw CallFailure(error.kind == .tooManyParticipations ? .busy : ErrorCode(error.kind), "\(function): \(error.message)")
            }
        }
    }

    private static func checkIdle(_ state: State, function: String, app: String) throws(CallFailure) {
        guard case .idle = state else {
            throw CallFailure(
                .busy,
                "\(function): \(app) already participates through this handle; one participation per handle (openudid_close ends it)")
        }
    }

    /// Ends the participation: the selection slot is released, then no
    /// callback runs after this returns (unless called from that callback),
    /// and the listener's destroy function has run. It never waits for a
    /// resolution under way.
    func close() {
        let previous = state.withLock { state -> State in
            defer { state = .closed }
            return state
        }
        if case .running(let participating) = previous { participating.stop() }
    }
}

/// A participation that hands its changes to C.
final class Participating: Sendable {
    let participation: Participation
    private let listener: ChangeListener?

    /// Starts `udid`'s participation; with `waitingForFirst`, returns once the first resolution is served.
    init(_ udid: OpenUDID, listener: ChangeListener?, waitingForFirst: Bool) throws(OpenUDIDError) {
        self.listener = listener
        // From the participation's thread straight to the listener's.
        participation = try udid.participate(waitingForFirst: waitingForFirst) { change in listener?.enqueue(change.identifier.hex) }
    }

    /// Releases the slot at once, then waits for a callback under way: a
    /// callback that blocks must not keep the slot served in the app's name.
    func stop() {
        participation.close()
        listener?.stop()
    }
}

/// Calls a C callback with each new identifier, one call at a time and in
/// order, on a thread of its own: a callback that blocks (a Python one
/// waiting for its interpreter lock) holds up nobody else's work. When it
/// stops, it calls the destroy function with the context, once.
final class ChangeListener: @unchecked Sendable {
    typealias Callback = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void
    typealias Destroy = @convention(c) (UnsafeMutableRawPointer?) -> Void

    private let callback: Callback?
    // The caller's context, passed back untouched; the library never reads it.
    private let context: UnsafeMutableRawPointer?
    private let destroy: Destroy?
    /// Where the calls run, one at a time, in order.
    private let calls = EventLoop(name: "openudid-callback")
    // `stopped` and `calling` are guarded by `condition`.
    private let condition = Condition()
    private var stopped = false
    private var calling: pthread_t?

    /// A listener for `openudid_participate…`, or nil when there is neither
    /// a callback nor a destroy function, and so nothing to call.
    static func make(_ callback: Callback?, context: UnsafeMutableRawPointer?, destroy: Destroy? = nil) -> ChangeListener? {
        guard callback != nil || destroy != nil else { return nil }
        return ChangeListener(callback, context: context, destroy: destroy)
    }

    private init(_ callback: Callback?, context: UnsafeMutableRawPointer?, destroy: Destroy?) {
        self.callback = callback
        self.context = context
        self.destroy = destroy
    }

    /// Queues a call with `id`.
    func enqueue(_ id: String) {
        guard let callback else { return }
        calls.post { [self] in
            let calls = condition.withLock {
                guard !stopped else { return false }
                calling = pthread_self()
                return true
            }
            guard calls else { return }
            id.withCString { callback($0, context) }
            condition.withLock {
                calling = nil
                condition.broadcast()
            }
        }
    }

    /// Calls nothing more; waits for a call under way on another thread to
    /// return, then calls the destroy function. Called from inside the
    /// callback, it does not wait: the destroy function runs on the queue
    /// once the callback has returned. Only the first call does anything.
    func stop() {
        let fromCallback = condition.withLock { () -> Bool? in
            guard !stopped else { return nil }
            stopped = true
            while let thread = calling {
                if pthread_equal(thread, pthread_self()) != 0 { return true }
                condition.wait()
            }
            return false
        }
        guard let fromCallback else { return }
        if fromCallback {
            // After the callback under way, which the loop runs to its end first.
            calls.stop { [self] in self.destroy?(self.context) }
        } else {
            destroy?(context)
            calls.stop()
        }
    }
}

/// Every `openudid *` C holds.
let handleRegistry = Registry<Handle>()

/// The handle C's pointer stands for.
func handle(_ pointer: OpaquePointer?, of function: String) throws(CallFailure) -> Handle {
    if isForkedChild() {
        throw CallFailure(
            .invalidArgument,
            function + ": the handle belongs to the process that opened it, of which this process is a child made by fork(); "
                + "call exec() and open a handle there")
    }
    guard let pointer else { throw CallFailure(.invalidArgument, "\(function): handle is NULL; open one with openudid_open") }
    guard let handle = handleRegistry.object(pointer) else {
        throw CallFailure(.invalidArgument, "\(function): handle \(pointer) is not open (never opened, or already closed)")
    }
    return handle
}
