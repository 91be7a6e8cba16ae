import Dispatch
import FoundationEssentials
import Glibc
import OpenUDIDKit
import Synchronization

/// What `openudid *` stands for: an `OpenUDID` and, once asked for, its participation.
final class Handle: Sendable {
    let udid: OpenUDID
    private let state = Mutex<State>(.idle)
    /// The process that opened the handle. A child made by `fork()` has a
    /// copy of it, but not the threads its participation runs on, and its
    /// locks as they were at the fork: the child must not wait on either.
    let process = getpid()

    /// Where the handle's participation stands.
    private enum State {
        case idle
        /// `openudid_participate_async` is making the first resolution.
        case starting
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

    /// Starts participating, calling `listener` (when given) with each change;
    /// returns once the first resolution is served.
    func participate(_ listener: ChangeListener?, function: String) throws(CallFailure) {
        try state.withLock { (state: inout State) throws(CallFailure) in
            try Self.checkIdle(state, function: function, app: udid.app.id)
            state = .running(Participating(udid.participate(), listener: listener))
        }
    }

    /// Starts participating on a thread of the library's and returns at once;
    /// `listener` hears the first identifier when the first resolution is done.
    func participateInBackground(_ listener: ChangeListener?, function: String) throws(CallFailure) {
        try state.withLock { (state: inout State) throws(CallFailure) in
            try Self.checkIdle(state, function: function, app: udid.app.id)
            state = .starting
        }
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let participation = self.udid.participate()
            let kept = state.withLock { state -> Bool in
                guard case .starting = state else { return false }
                state = .running(Participating(participation, listener: listener))
                return true
            }
            // Closed meanwhile: nothing of it may outlive the handle.
            if !kept { participation.stop() }
        }
    }

    private static func checkIdle(_ state: State, function: String, app: String) throws(CallFailure) {
        guard case .idle = state else {
            throw CallFailure(
                .busy,
                "\(function): \(app) already participates through this handle; one participation per handle (openudid_close ends it)")
        }
    }

    /// Ends the participation: no callback runs after this returns (unless
    /// called from that callback), and the selection slot is released. A
    /// participation still starting is stopped as soon as it is made.
    func close() {
        let running = state.withLock { state -> Participating? in
            defer { state = .closed }
            if case .running(let participating) = state { return participating }
            return nil
        }
        running?.stop()
    }
}

/// A participation with the task that hands its changes to C.
final class Participating: Sendable {
    let participation: Participation
    private let listener: ChangeListener?
    private let forwarding: Task<Void, Never>?

    init(_ participation: Participation, listener: ChangeListener?) {
        self.participation = participation
        self.listener = listener
        if let listener {
            let changes = participation.changes
            forwarding = Task.detached {
                for await change in changes {
                    listener.enqueue(change.identifier.hex)
                }
            }
        } else {
            forwarding = nil
        }
    }

    func stop() {
        listener?.stop()
        participation.stop()
        forwarding?.cancel()
    }
}

/// Calls a C callback with each new identifier, one call at a time and in
/// order, on a serial queue of its own: a callback that blocks (a Python one
/// waiting for its interpreter lock) holds up nobody else's work.
final class ChangeListener: @unchecked Sendable {
    typealias Callback = @convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void

    private let callback: Callback
    // The caller's context, passed back untouched; the library never reads it.
    private let context: UnsafeMutableRawPointer?
    private let queue = DispatchQueue(label: "openudid.on_change")
    // `stopped` and `calling` are guarded by `condition`.
    private let condition = Condition()
    private var stopped = false
    private var calling: pthread_t?

    init(_ callback: @escaping Callback, context: UnsafeMutableRawPointer?) {
        self.callback = callback
        self.context = context
    }

    /// Queues a call with `id`.
    func enqueue(_ id: String) {
        queue.async { [self] in
            condition.withLock {
                guard !stopped else { return false }
                calling = pthread_self()
                return true
            } ? call(id) : ()
        }
    }

    private func call(_ id: String) {
        id.withCString { callback($0, context) }
        condition.withLock {
            calling = nil
            condition.broadcast()
        }
    }

    /// Calls nothing more; waits for a call under way on another thread to return.
    func stop() {
        condition.withLock {
            stopped = true
            while let thread = calling, pthread_equal(thread, pthread_self()) == 0 {
                condition.wait()
            }
        }
    }
}

/// Every `openudid *` C holds.
let handleRegistry = Registry<Handle>()

/// The handle C's pointer stands for.
func handle(_ pointer: OpaquePointer?, of function: String) throws(CallFailure) -> Handle {
    guard let pointer else { throw CallFailure(.invalidArgument, "\(function): handle is NULL; open one with openudid_open") }
    guard let handle = handleRegistry.object(pointer) else {
        throw CallFailure(.invalidArgument, "\(function): handle \(pointer) is not open (never opened, or already closed)")
    }
    guard handle.process == getpid() else {
        throw CallFailure(
            .invalidArgument,
            "\(function): handle \(pointer) belongs to process \(handle.process), of which this process is a child made by fork(); call exec() and open a handle there"
        )
    }
    return handle
}
