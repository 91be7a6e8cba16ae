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

        /// The user's paths; the namespace is checked here, unless the paths are for every namespace.
        func paths(namespaced: Bool = true) throws(OpenUDIDError) -> StoragePaths {
            let namespace = namespaced ? self.namespace : nil
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
            let identity: AppIdentity
            do { identity = try AppIdentity(app) } catch { throw OpenUDIDError(error) }
            let paths = try paths()
            let erasing = try ErasureLock.take([paths.erasureLock], below: paths.sharedHome)
            defer { erasing.finish() }
            do {
                try FileSlotStore(paths: paths).remove(app: identity.id)
                try LocalCache(app: identity, paths: paths).remove()
            } catch {
                throw OpenUDIDError(error)
            }
        }
    }
}

// MARK: - What the erasing commands share

extension OpenUDID.User {
    /// The names in `directory`, sorted; none when it does not exist, and a
    /// problem when it cannot be listed (or is a link, which is never followed).
    static func names(in directory: String, fs: FileSystem, problems: inout [String]) -> [String] {
        switch fs.listing(directory, { $0.names }) {
        case .success(let names):
            return names.sorted()
        case .failure(let error):
            if error.code != ENOENT { problems.append("\(directory): \(POSIX.message(error.code))") }
            return []
        }
    }

    /// The files with a name `wanted` takes in each app's own directory of the
    /// data home (`<data>/<app-id>/`); a link there is not an app's directory.
    static func appFiles(
        in dataHome: String, fs: FileSystem, problems: inout [String], where wanted: (String) -> Bool
    ) -> [String] {
        var files: [String] = []
        for app in names(in: dataHome, fs: fs, problems: &problems) where AppIdentity.isValid(app) {
            let directory = POSIX.joined(dataHome, app)
            guard case .success(.directory) = fs.kind(at: directory) else { continue }
            files += names(in: directory, fs: fs, problems: &problems).filter(wanted).map { POSIX.joined(directory, $0) }
        }
        return files
    }

    /// Removes `files` (one already gone is removed too) and returns those removed;
    /// each that could not be is a problem.
    static func unlink(_ files: [String], fs: FileSystem, problems: inout [String]) -> [String] {
        files.filter { file in
            if fs.unlink(file) == 0 || errno == ENOENT { return true }
            problems.append("\(file): \(POSIX.message(errno))")
            return false
        }
    }

    /// The session bus when a Secret Service answers on it; nil when there is no keyring to clear.
    var secretServiceBus: String? {
        guard case .success(let address) = SessionBus.address(in: environment), SecretServiceMirror.probe(busAddress: address).canHoldMirror
        else { return nil }
        return address
    }
}
