/// Where a connection's thread delivers what it reports: an `AsyncStream`
/// for the public API, or a function called on the connection's thread for
/// a caller in the package that runs its own loop (a participant), which then
/// needs neither a task nor a thread of Swift concurrency to hear of it.
package struct EventSink<Event: Sendable>: Sendable {
    private let deliver: @Sendable (Event) -> Void
    private let end: @Sendable () -> Void

    /// Delivers into `continuation`; `finish` finishes the stream.
    init(_ continuation: AsyncStream<Event>.Continuation) {
        deliver = { continuation.yield($0) }
        end = { continuation.finish() }
    }

    /// Calls `handler` with every event, on the connection's thread; the handler
    /// should only hand the event on, since the thread serves the connection.
    package init(_ handler: @escaping @Sendable (Event) -> Void) {
        deliver = handler
        end = {}
    }

    func yield(_ event: Event) { deliver(event) }

    func finish() { end() }
}
