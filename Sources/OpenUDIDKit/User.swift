import FoundationEssentials
import Glibc
import InputGate

extension OpenUDID {
    /// The operations that act for the user across apps: opting out for every
    /// app, resetting the identifier, removing an app's copies, erasing
    /// everything. No handle of an app is needed; all of them take the same two
    /// parameters, given once.
    ///
    /// ```swift
    /// try OpenUDID.User().optOut()              // every app reports zeros
    /// let reset = try OpenUDID.User().reset()   // every app moves to a new identifier
    /// ```
    public struct User: Sendable {
        /// The namespace the apps use (`Configuration.namespace`), or nil for real use.
        public var namespace: String?
        /// Where to find the data and config directories and the session bus.
        public var environment: [String: String]

        /// The user of this process's environment, or of the one given.
        ///
        /// - Parameters:
        ///   - namespace: The namespace the apps use, or nil for real use.
        ///   - environment: Where to find `HOME`, the XDG directories and the session bus.
        public init(namespace: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
            self.namespace = namespace
            self.environment = environment
        }

        /// The user's paths; the namespace is checked here.
        private func paths() throws(OpenUDIDError) -> StoragePaths {
            do { return try StoragePaths(environment: environment, namespace: namespace) } catch { throw OpenUDIDError(error) }
        }

        /// Opts the user out for every participating app: each reports the
        /// all-zero identifier and keeps no copy (a marker in `$XDG_CONFIG_HOME/openudid/`).
        ///
        /// The marker is the same in every namespace: a user who opts out means it everywhere.
        ///
        /// - Throws: `OpenUDIDError` when there is no home directory, the namespace
        ///   is invalid, or the marker cannot be written.
        public func optOut() throws(OpenUDIDError) {
            let paths = try paths()
            let stamp = "opted out at \(Milliseconds.iso8601(Milliseconds.since1970(Date())))\n"
            do { try AtomicFile.write(Data(stamp.utf8), to: paths.optOutMarker, below: paths.configHome) } catch {
                throw OpenUDIDError(error)
            }
        }

        /// Undoes `optOut()`: the apps return to the identifier they had (`reset()` gives a new one).
        ///
        /// - Throws: `OpenUDIDError` when there is no home directory, the namespace
        ///   is invalid, or the marker cannot be removed.
        public func optIn() throws(OpenUDIDError) {
            let paths = try paths()
            do { try AtomicFile.remove(paths.optOutMarker, below: paths.configHome) } catch { throw OpenUDIDError(error) }
        }

        /// Whether the user opted out for every app; false when that cannot be told.
        public var isOptedOut: Bool {
            guard let paths = try? paths() else { return false }
            return FileSystem.system.exists(paths.optOutMarker)
        }

        /// Resets the shared identifier in `namespace`: every participating app,
        /// running or not, moves to a new identifier and never back to the old one.
        ///
        /// It removes every copy of the identifier it can reach (the file slots, each
        /// app's local cache, the vendors' mirrors in files and in the Secret Service)
        /// and then writes the next reset generation to `<data>/openudid/reset`. Every
        /// record of an older generation is *superseded* from then on (docs/PROTOCOL.md
        /// §9): running apps notice the marker within a second and move to a new
        /// identifier, which the first of them generates; an app that was not running
        /// does so on its next start; a copy this call could not remove (a locked
        /// keyring) casts no ballot and is overwritten when next read. Opt-outs and
        /// consent are choices, not copies, and stay as they are.
        ///
        /// - Returns: The new generation, what was removed, and what could not be.
        /// - Throws: `OpenUDIDError` when there is no home directory, the namespace is
        ///   invalid, or the reset marker cannot be written (then nothing is reset:
        ///   the removed copies come back from the running apps that hold them).
        public func reset() throws(OpenUDIDError) -> Reset {
            try OpenUDID.resetEverywhere(namespace: namespace, environment: environment)
        }

        /// Deletes what uninstalling `app` together with its data would: its file
        /// slot and its local cache in `namespace`. Nothing of other apps, and nothing
        /// of the vendor mirror, is touched. Stopping the app's process is the
        /// caller's business: the removal holds the namespace's erasure lock
        /// (docs/PROTOCOL.md §9), so a resolution that was under way writes nothing
        /// back, but an app left running writes its copies again at its next resolution.
        ///
        /// - Parameter app: The app id.
        /// - Throws: `OpenUDIDError` for an invalid id or namespace, when a file cannot
        ///   be removed, or when the erasure lock cannot be taken (nothing is removed then).
        public func removeApp(_ app: String) throws(OpenUDIDError) {
            try OpenUDID.removeApp(app, namespace: namespace, environment: environment)
        }

        /// Removes every file slot, local cache, consent record, mirror file and
        /// item, and marker the library wrote for this user, in every namespace
        /// whatever `namespace` says: for a user who wants the identifier gone.
        /// Running apps should be stopped first, or they write their copies again
        /// at their next resolution; a resolution under way writes nothing back.
        ///
        /// - Parameter dryRun: List what would be removed, and remove nothing.
        /// - Returns: What was (or would be) removed, and what could not be.
        /// - Throws: `OpenUDIDError` when there is no home directory, or when an
        ///   erasure lock cannot be taken (nothing is removed then).
        public func forgetEverything(dryRun: Bool = false) throws(OpenUDIDError) -> Erasure {
            try OpenUDID.forgetEverything(dryRun: dryRun, environment: environment)
        }
    }
}
