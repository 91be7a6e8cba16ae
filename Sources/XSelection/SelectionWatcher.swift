import CX11
import Glibc

/// Reports, through XFixes, when the owner of any of a set of selections
/// changes, when an owner's window is destroyed, and when an owner's client
/// disconnects.
///
/// The watcher subscribes before it looks at the current owners, so no change
/// can slip between the snapshot in `initialOwners` and the first event.
public final class SelectionWatcher: Sendable {
    /// What happened to a selection.
    public enum Change: Sendable, Equatable {
        /// A client set a new owner (nil: the selection was given up).
        case newOwner(SelectionHolder?)
        /// The owner's window was destroyed; the selection now has no owner.
        case ownerWindowDestroyed
        /// The owner's client disconnected (it exited or was killed); the selection now has no owner.
        case ownerClientClosed
    }

    /// One report from the watcher.
    public enum Event: Sendable, Equatable {
        /// `selection` changed at server time `time`.
        case changed(SelectionName, Change, time: XTimestamp)
        /// The server went away; the watcher has stopped.
        case connectionLost(XSelectionError)
    }

    /// The display watched.
    public let display: String
    /// The owners when the subscription began (nil: no owner).
    public let initialOwners: [SelectionName: SelectionHolder?]
    /// The changes, in server order.
    public let events: AsyncStream<Event>

    private let thread: ServiceThread<WatcherCore>

    /// Connects to `display` (or `$DISPLAY`) and starts watching `selections`.
    ///
    /// Opening takes at most two seconds, as for `SelectionReader.init(display:)`.
    ///
    /// - Throws: `XSelectionError` when the display cannot be opened or lacks XFixes.
    public init(display: String? = nil, selections: [SelectionName]) throws(XSelectionError) {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        let unique = Array(Set(selections)).sorted()
        self.events = stream
        let (thread, info) = try ServiceThread.start(
            name: "XSelection.SelectionWatcher", display: display,
            make: { () throws(XSelectionError) in
                let core = try WatcherCore(display: display, selections: unique, events: continuation)
                let owners = try core.subscribe()
                return (core, Started(name: core.connection.name, owners: owners))
            }, failed: { continuation.finish() }, run: { core, thread in core.run(thread) })
        self.thread = thread
        self.display = info.name
        self.initialOwners = info.owners
    }

    deinit { close() }

    /// Stops watching and closes the connection; `events` then finishes.
    /// Releasing the watcher does the same.
    ///
    /// Returns once the connection is closed (or after two seconds), so a
    /// program may exit right after it.
    public func close() {
        thread.stop { core in core.stopRequested = true }
    }
}

private struct Started: Sendable {
    var name: String
    var owners: [SelectionName: SelectionHolder?]
}

/// The watching side; lives on the watcher's thread only.
final class WatcherCore {
    let connection: Connection
    var stopRequested = false
    private let selections: [SelectionName]
    private let events: AsyncStream<SelectionWatcher.Event>.Continuation
    private var names: [UInt: SelectionName] = [:]

    init(display: String?, selections: [SelectionName], events: AsyncStream<SelectionWatcher.Event>.Continuation) throws(XSelectionError) {
        connection = try Connection(name: display)
        self.selections = selections
        self.events = events
        guard try connection.setUpFixes() != nil else { throw .missingFixes(connection.name) }
    }

    /// Subscribes to every selection, then reads the current owners.
    func subscribe() throws(XSelectionError) -> [SelectionName: SelectionHolder?] {
        let atoms = try connection.atoms(selections.map(\.rawValue))
        for (name, atom) in zip(selections, atoms) {
            names[atom] = name
            connection.selectOwnerChanges(of: atom, on: connection.root, true)
        }
        let owners = try connection.selectionOwners(atoms, deadline: .now + .seconds(5))
        return Dictionary(uniqueKeysWithValues: zip(selections, owners))
    }

    func run(_ thread: ServiceThread<WatcherCore>) {
        while !stopRequested {
            guard connection.isAlive else {
                events.yield(.connectionLost(.connectionLost(connection.name)))
                break
            }
            while let raw = connection.pollEvent() {
                handle(raw)
                free(raw)
            }
            guard connection.isAlive else { continue }
            let ready = connection.waitReadable(until: nil, extraFD: thread.wakePipe.readFD)
            if ready.extra { thread.runJobs(self) }
        }
        connection.close()
        events.finish()
    }

    private func handle(_ raw: UnsafeMutablePointer<xcb_generic_event_t>) {
        // The gate keeps the server's reports alone: any client may send an event to the root window.
        guard case .ownerChange(let selection, let change, let time, _)? = connection.event(raw), let name = names[selection] else {
            return
        }
        events.yield(.changed(name, change, time: XTimestamp(UInt32(truncatingIfNeeded: time))))
    }
}
