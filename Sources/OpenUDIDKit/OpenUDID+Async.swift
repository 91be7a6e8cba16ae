import Dispatch
import FoundationEssentials

extension OpenUDID {
    /// The shared identifier, resolved without blocking the caller's thread.
    ///
    /// Call this form from a UI event loop (the main actor, a GTK or Qt main
    /// thread through a task): the first resolution reads the X server, files
    /// and the Secret Service, and a slow keyring can hold it for seconds. The
    /// work runs on a thread of the library's; the caller's thread is free
    /// meanwhile. The synchronous `value(refresh:)` stays for scripts and
    /// command-line tools.
    ///
    /// - Parameter refresh: Resolve again instead of returning the cached value.
    /// - Returns: The shared identifier (`Identifier.optedOut` when opted out).
    public func value(refresh: Bool = false) async -> Identifier {
        await resolve(refresh: refresh).identifier
    }

    /// The app-scoped value (see the synchronous `appScopedValue(refresh:)`),
    /// resolved without blocking the caller's thread.
    ///
    /// - Parameter refresh: Resolve again instead of using the cached resolution.
    /// - Returns: A version-4 UUID; the nil UUID when opted out.
    public func appScopedValue(refresh: Bool = false) async -> UUID {
        await resolve(refresh: refresh).appScoped
    }

    /// Resolves (or returns the cached resolution) with its full provenance,
    /// without blocking the caller's thread; see `value(refresh:)` for when to
    /// use which form.
    ///
    /// - Parameter refresh: Resolve again instead of returning the cached report.
    /// - Returns: The report, as the synchronous `resolve(refresh:)` gives it.
    public func resolve(refresh: Bool = false) async -> Report {
        if !refresh, let report = cachedReport { return report }
        return await offThread { self.resolve(refresh: refresh) }
    }

    /// Takes part in the session (see the synchronous `participate()`),
    /// without blocking the caller's thread for the first resolution.
    ///
    /// A window can open at once and show the identifier when this returns.
    ///
    /// - Returns: The participation, its first resolution done.
    /// - Throws: What the synchronous `participate()` throws.
    public func participate() async throws(OpenUDIDError) -> Participation {
        let result = await offThread { () -> Result<Participation, OpenUDIDError> in
            do throws(OpenUDIDError) { return .success(try self.participate()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}

extension Participation {
    /// Resolves again now and publishes the result (see the synchronous
    /// `refresh()`), without blocking the caller's thread.
    public func refresh() async {
        await offThread { self.refresh() }
    }
}

/// Runs `work` on a thread of the library's and returns its result, leaving
/// the caller's thread free meanwhile.
private func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: work()) }
    }
}
