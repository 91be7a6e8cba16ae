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
    // `cancellable` never changes after init and GCancellable is thread-safe.
    // The timer's job holds its own references to it and to the context,
    // dropped with the job, whether it ran or was cancelled.
    let cancellable: OpaquePointer
    let duration: Duration
    private let library: LibSecret
    private let timer: Int

    /// The loop that keeps every call's deadline, made at the first call.
    private static let clock = EventLoop(name: "openudid-deadline")

    /// A timer that cancels its cancellable when `duration` has passed, and wakes
    /// `context` so that a wait for a signal in it ends too.
    init(_ duration: Duration, library: LibSecret, waking context: OpaquePointer?) {
        self.duration = duration
        self.library = library
        let cancellable = library.gCancellableNew()!
        self.cancellable = cancellable
        let held = GObjects(library, cancellable: cancellable, context: context)
        timer = Self.clock.schedule(after: duration) {
            library.gCancellableCancel(held.cancellable)
            library.gMainContextWakeup(held.context)
        }
    }

    /// References to the cancellable and the context, dropped with the timer's job.
    private final class GObjects: @unchecked Sendable {
        let library: LibSecret
        let cancellable: OpaquePointer
        let context: OpaquePointer?

        init(_ library: LibSecret, cancellable: OpaquePointer, context: OpaquePointer?) {
            self.library = library
            self.cancellable = cancellable
            self.context = library.gMainContextRef(context)
            _ = library.gObjectRef(UnsafeMutableRawPointer(cancellable))
        }

        deinit {
            library.gObjectUnref(UnsafeMutableRawPointer(cancellable))
            library.gMainContextUnref(context)
        }
    }

    /// Whether the deadline passed (nothing else cancels the cancellable).
    var fired: Bool { library.gCancellableIsCancelled(cancellable) != 0 }

    /// How the deadline reads in a message: "2 s", "0.5 s".
    var description: String {
        Milliseconds.seconds(duration)
    }

    /// Stops the timer and drops the caller's reference.
    func finish() {
        Self.clock.cancel(timer)
        library.gObjectUnref(UnsafeMutableRawPointer(cancellable))
    }
}
