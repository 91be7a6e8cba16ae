import FoundationEssentials
import Glibc
import Synchronization
import XSelection

/// One app's handle on the identifier that cooperating apps share in a user session.
///
/// ```swift
/// let udid = try OpenUDID(app: "com.acme.notes")
/// let id = udid.value()                      // an Identifier: 40 lowercase hex digits
/// let participation = try udid.participate() // serve a slot, follow changes
/// for await change in participation.changes { print(change.identifier) }
/// ```
///
/// Resolution reads every selection slot in one pass, every app's file slot,
/// this app's local cache and its vendor's mirror, holds the vote described
/// in docs/PROTOCOL.md, and writes the winner wherever this app keeps a copy.
/// The first resolution is cached; later calls are free unless they ask for a
/// refresh. Safe to use from any thread.
public final class OpenUDID: Sendable {
    /// The app this handle speaks for.
    public let app: AppIdentity
    /// How this handle finds and keeps the identifier.
    public let configuration: Configuration

    let engine: Engine
    private let cached = Mutex<Report?>(nil)
    private let resolving = Mutex(())
    /// While the handle participates: resolves through the participation and
    /// returns its report (nil once it has stopped).
    let participating = Mutex<(@Sendable () -> Report?)?>(nil)
    /// The thread the `async` calls resolve on, made at the first one: not
    /// Dispatch's pool, whose first use makes libdispatch wake the process
    /// once a second for good (see `EventLoop`).
    private let worker = Mutex<EventLoop?>(nil)

    /// Creates a handle for `app`.
    ///
    /// - Parameters:
    ///   - app: A reverse-DNS application id such as `com.acme.notes`.
    ///   - vendor: The vendor whose mirror the app shares; by default the id's first two parts (`com.acme`), or three under a hosting prefix (`io.github.alice`; docs/PROTOCOL.md §1).
    ///   - configuration: Display, namespace, policy and mirror; the defaults suit a desktop session.
    /// - Throws: `OpenUDIDError` for an invalid app id, vendor or namespace, or when there is no home directory.
    public init(app: String, vendor: String? = nil, configuration: Configuration = Configuration()) throws(OpenUDIDError) {
        do {
            self.app = try AppIdentity(app, vendor: vendor)
        } catch {
            throw OpenUDIDError(error)
        }
        self.configuration = configuration
        self.engine = try Engine(app: self.app, configuration: configuration)
    }

    /// The identifier shared by every participating app, resolved on first use
    /// and cached afterwards.
    ///
    /// - Parameter refresh: Resolve again instead of returning the cached value.
    /// - Returns: The shared identifier (`Identifier.optedOut` when opted out);
    ///   its `hex` is 40 lowercase hex digits.
    public func value(refresh: Bool = false) -> Identifier {
        resolve(refresh: refresh).identifier
    }

    /// A value derived for this app alone from the shared identifier, which
    /// cannot be correlated with another app's (docs/PROTOCOL.md §11).
    ///
    /// Use it wherever an identifier is shown or sent: the shared one is
    /// readable by every app of the session.
    ///
    /// - Parameter refresh: Resolve again instead of using the cached resolution.
    /// - Returns: A version-4 UUID; the nil UUID when opted out.
    public func appScopedValue(refresh: Bool = false) -> UUID {
        resolve(refresh: refresh).appScoped
    }

    /// Resolves (or returns the cached resolution) with its full provenance.
    ///
    /// Never throws: a source that cannot be read is reported in `Report.sources`
    /// and is never overwritten.
    ///
    /// - Parameter refresh: Resolve again instead of returning the cached report.
    public func resolve(refresh: Bool = false) -> Report {
        if !refresh, let report = cached.withLock({ $0 }) { return report }
        // A participating handle resolves through its participation, on the
        // connection it serves on: one X client per participant.
        if let participating = participating.withLock({ $0 }), let report = participating() { return report }
        return resolving.withLock { _ in
            if !refresh, let report = cached.withLock({ $0 }) { return report }
            let report = engine.resolve(slot: nil, after: cached.withLock { $0 })
            cached.withLock { $0 = report }
            return report
        }
    }

    /// The cached resolution, if there is one.
    var cachedReport: Report? { cached.withLock { $0 } }

    /// Drops the cached resolution: a choice changed on disk.
    func forget() {
        cached.withLock { $0 = nil }
    }

    /// Updates the cache with a resolution made elsewhere (by a participation).
    func remember(_ report: Report) {
        cached.withLock { $0 = report }
    }

    /// Runs `work` on the handle's own thread for `async` calls, and returns its
    /// result, the caller's thread (or task) free meanwhile.
    func onWorker<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        let loop = worker.withLock { worker in
            if let loop = worker { return loop }
            let loop = EventLoop(name: "openudid-async")
            worker = loop
            return loop
        }
        return await withCheckedContinuation { continuation in
            if !loop.post({ continuation.resume(returning: work()) }) { continuation.resume(returning: work()) }
        }
    }

    /// Serializes resolutions of this handle.
    func exclusively<T>(_ body: () throws -> T) rethrows -> T {
        try resolving.withLock { _ in try body() }
    }

    // MARK: Consent

    /// Whether the user's consent for this app is recorded (see `Configuration.requiresConsent`).
    public var hasConsent: Bool { engine.hasConsent }

    /// Records the user's consent for this app, kept beside its local cache
    /// until withdrawn; the next resolution takes part.
    ///
    /// - Throws: `OpenUDIDError` when the record cannot be written.
    public func grantConsent() throws(OpenUDIDError) {
        let stamp = "consent granted at \(Milliseconds.iso8601(Milliseconds.since1970(Date())))\n"
        do {
            try AtomicFile.write(
                Data(stamp.utf8), to: engine.paths.consentFile(for: app), below: engine.paths.dataHome,
                fileSystem: engine.fileSystem)
        } catch {
            throw OpenUDIDError(error)
        }
        cached.withLock { $0 = nil }
    }

    /// Withdraws the user's consent for this app and erases the app's copies
    /// of the identifier (its file slot and local cache) as removing the app
    /// would; a participation stops serving its slot at its next resolution
    /// (`Participation.refresh()`). The vendor's mirror item is deleted too when
    /// it carries this app's id (this app wrote it) or cannot be read; the
    /// vendor's other apps that take part write it again in their own name.
    /// A keyring may keep a deleted item (KeePassXC moves it to its Recycle Bin).
    ///
    /// The withdrawal is atomic with respect to the app's own writes, in this
    /// process or any other: it holds the namespace's erasure lock while it
    /// deletes (docs/PROTOCOL.md §9), so once it returns no copy comes back, even
    /// from a resolution that was under way.
    ///
    /// - Throws: `OpenUDIDError` when a file cannot be removed, the erasure lock
    ///   cannot be taken (nothing is removed then), or the mirror item may carry
    ///   this app's id and cannot be deleted (its message says where it stays).
    public func withdrawConsent() throws(OpenUDIDError) {
        let erasing = try ErasureLock.take(
            [engine.paths.erasureLock], below: engine.paths.sharedHome, fileSystem: engine.fileSystem)
        defer { erasing.finish() }
        do {
            try AtomicFile.remove(engine.paths.consentFile(for: app), below: engine.paths.dataHome, fileSystem: engine.fileSystem)
            try engine.fileSlots.remove(app: app.id)
            try engine.localCache.remove()
            try engine.removeMirrorWrittenByThisApp()
        } catch {
            throw OpenUDIDError(error)
        }
        cached.withLock { $0 = nil }
    }

    // MARK: Opt-out

    /// Opts this app out: it reports the all-zero identifier, publishes that it
    /// opted out, no longer votes, and forgets its cached copy. Reversible with `optIn()`.
    ///
    /// - Throws: `OpenUDIDError` when the app's local cache cannot be written.
    public func optOut() throws(OpenUDIDError) {
        do { try engine.localCache.optOut() } catch { throw OpenUDIDError(error) }
        cached.withLock { $0 = nil }
    }

    /// Undoes `optOut()`; the next resolution fetches the consensus again.
    public func optIn() throws(OpenUDIDError) {
        if case .optedOut = engine.localCache.read() {
            do { try engine.localCache.remove() } catch { throw OpenUDIDError(error) }
        }
        cached.withLock { $0 = nil }
    }
}
