import FoundationEssentials
import XSelection

/// Cancels a `GCancellable` when a deadline passes.
///
/// Cancelling makes every pending libsecret/GDBus `_sync` call return at once, so a
/// daemon that hangs (or a bus that never answers) cannot hold the caller. The
/// deadlines of every call of the process are kept by one loop (`EventLoop`),
/// not a thread per call, nor a Dispatch timer: Dispatch's global queues, once
/// used, make libdispatch wake the process once a second for good.
final class DeadlineTimer: @unchecked Sendable {
    // Nothing changes after init (`timer` is set once, within it), and GCancellable
    // and GMainContext are thread-safe. The timer's job holds this object, so the
    // cancellable and the context outlive the job, whether it ran or was cancelled.
    let cancellable: OpaquePointer
    let duration: Duration
    private let library: LibSecret
    private let context: OpaquePointer?
    private var timer = 0

    /// The loop that keeps every call's deadline, made at the first call.
    private static let clock = EventLoop(name: "openudid-deadline")

    /// A timer that cancels its cancellable when `duration` has passed, and wakes
    /// `context` so that a wait for a signal in it ends too.
    init(_ duration: Duration, library: LibSecret, waking context: OpaquePointer?) {
        self.duration = duration
        self.library = library
        cancellable = library.gCancellableNew()!
        self.context = library.gMainContextRef(context)
        timer = Self.clock.schedule(after: duration) { [self] in
            library.gCancellableCancel(cancellable)
            library.gMainContextWakeup(self.context)
        }
    }

    deinit {
        library.gObjectUnref(UnsafeMutableRawPointer(cancellable))
        library.gMainContextUnref(context)
    }

    /// Whether the deadline passed (nothing else cancels the cancellable).
    var fired: Bool { library.gCancellableIsCancelled(cancellable) != 0 }

    /// How the deadline reads in a message: "2 s", "0.5 s".
    var description: String { Milliseconds.seconds(duration) }

    /// Stops the timer; the cancellable and the context go with this object.
    func finish() {
        Self.clock.cancel(timer)
    }
}
