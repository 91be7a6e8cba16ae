import FoundationEssentials
import Glibc
import InputGate

extension OpenUDID {
    /// Everything the library ever wrote for this user, and whether it was removed.
    public struct Erasure: Sendable {
        /// The files removed (or, in a dry run, that would be): the shared
        /// slots and file mirror under `$XDG_DATA_HOME/openudid`, the opt-out
        /// marker, and each app's local caches and consent records.
        public let files: [String]
        /// The Secret Service items removed (or that would be), by label.
        public let keyringItems: [String]
        /// What could not be looked at or removed; empty when everything is gone.
        public let problems: [String]
        /// Copies that the keyring keeps of the items it deleted, each with where
        /// it is and how to remove it (KeePassXC moves deleted entries to its
        /// Recycle Bin); empty when the keyring keeps none.
        public let keptCopies: [String]
    }
}

extension OpenUDID.User {
    /// Removes every file slot, local cache, consent record, mirror file and
    /// item, and marker the library wrote for this user, in every namespace
    /// whatever `namespace` says: for a user who wants the identifier gone.
    /// Running apps should be stopped first, or they write their copies again
    /// at their next resolution; a resolution under way writes nothing back,
    /// since the removal holds each namespace's erasure lock (docs/PROTOCOL.md
    /// §9), whose files, which hold nothing, it removes last and does not list.
    ///
    /// - Parameter dryRun: List what would be removed, and remove nothing.
    /// - Returns: What was (or would be) removed, and what could not be.
    /// - Throws: `OpenUDIDError` when there is no home directory, or when an
    ///   erasure lock cannot be taken (nothing is removed then).
    public func forgetEverything(dryRun: Bool = false) throws(OpenUDIDError) -> OpenUDID.Erasure {
        let paths = try paths(namespaced: false)
        let fs = FileSystem.system
        var files: [String] = []
        var directories: [String] = []
        var problems: [String] = []
        // The erasure lock of the real namespace and of every namespace directory.
        let namespaces = paths.sharedHome + "/openudid/ns"
        var lockPaths = [paths.erasureLock]
        for name in Self.names(in: namespaces, fs: fs, problems: &problems) where StoragePaths.isValidNamespace(name) {
            lockPaths.append(namespaces + "/" + name + "/erase.lock")
        }
        let erasing = dryRun ? nil : try ErasureLock.take(lockPaths, below: paths.sharedHome, fileSystem: fs)
        defer { erasing?.finish() }
        // The library's own trees: everything in them is its.
        for root in Set([paths.sharedHome + "/openudid", paths.dataHome + "/openudid", paths.configHome + "/openudid"]).sorted() {
            Self.walk(root, fs: fs, files: &files, directories: &directories, problems: &problems)
        }
        files.removeAll { lockPaths.contains($0) }
        // Each app's own directory: only the library's names in it.
        files = (files + Self.appFiles(in: paths.dataHome, fs: fs, problems: &problems, where: Self.isLibraryFile)).sorted()

        var keyringItems: [String] = []
        var keptCopies: [String] = []
        if let address = secretServiceBus {
            do throws(StoreUnavailable) {
                let erased = try SecretServiceMirror(busAddress: address).everyItem(delete: !dryRun)
                keyringItems = erased.labels
                if let kept = erased.keptCopies { keptCopies.append(kept) }
            } catch {
                problems.append("the Secret Service: \(error.message)")
            }
        }
        if !dryRun {
            _ = Self.unlink(files, fs: fs, problems: &problems)
            // The lock files go last, before their directories.
            erasing?.finish()
            // Deepest first, so each is empty by its turn.
            for directory in directories.sorted(by: { $0.count > $1.count }) {
                if let problem = Self.removeDirectory(directory, fs: fs) { problems.append(problem) }
            }
        }
        return OpenUDID.Erasure(files: files, keyringItems: keyringItems, problems: problems, keptCopies: keptCopies)
    }

    /// The names of the lock files, which hold nothing.
    private static let lockNames: Set<String> = ["erase.lock", "generate.lock"]

    /// Removes the empty `directory`.
    ///
    /// An app that was resolving when its copies were erased may have made a lock
    /// file anew since, with the directories above it: those hold nothing, and the
    /// app writes nothing from that resolution (`ErasureFence`). Such files and
    /// directories are removed and the directory tried again, a few times.
    ///
    /// - Returns: Why the directory is still there, or `nil` once it is gone.
    private static func removeDirectory(_ directory: String, fs: FileSystem, depth: Int = 0) -> String? {
        var code: Int32 = 0
        for _ in 0..<3 {
            if fs.unlinkat(AT_FDCWD, directory, AT_REMOVEDIR) == 0 || errno == ENOENT { return nil }
            code = errno
            guard code == ENOTEMPTY || code == EEXIST, depth < 4, removeLockFiles(in: directory, fs: fs, depth: depth) else { break }
        }
        var problems: [String] = []
        let left = names(in: directory, fs: fs, problems: &problems)
        let holding = left.isEmpty ? "" : " (it holds \(left.prefix(3).joined(separator: ", "))\(left.count > 3 ? ", …" : ""))"
        return "\(directory): \(POSIX.message(code))\(holding)"
    }

    /// Removes what `directory` holds if that is only lock files and directories
    /// of them; returns whether it was.
    private static func removeLockFiles(in directory: String, fs: FileSystem, depth: Int) -> Bool {
        var problems: [String] = []
        let names = names(in: directory, fs: fs, problems: &problems)
        guard problems.isEmpty else { return false }
        for name in names {
            let path = POSIX.joined(directory, name)
            switch fs.kind(at: path) {
            case .success(.directory):
                guard removeDirectory(path, fs: fs, depth: depth + 1) == nil else { return false }
            case .success(.regular) where lockNames.contains(name):
                guard fs.unlink(path) == 0 || errno == ENOENT else { return false }
            case .success(nil), .failure:
                continue
            case .success:
                return false
            }
        }
        return true
    }

    /// Whether `name`, in an app's own directory, is one the library writes:
    /// its local cache (`openudid.json`, `openudid-<namespace>.json`, and their
    /// quarantined copies `….json.corrupt-<ms>`) or its consent record.
    static func isLibraryFile(_ name: String) -> Bool {
        guard name == "openudid.json" || name == "openudid-consent" || name.hasPrefix("openudid-") || name.hasPrefix("openudid.json.")
        else { return false }
        return name.hasSuffix(".json") || name.hasSuffix("-consent") || name.contains(".json.corrupt-")
    }

    /// Every file below `path`, links included as files and never followed.
    private static func walk(
        _ path: String, fs: FileSystem, files: inout [String], directories: inout [String], problems: inout [String]
    ) {
        switch fs.kind(at: path) {
        case .success(nil):
            return
        case .success(.directory):
            directories.append(path)
            for name in names(in: path, fs: fs, problems: &problems) {
                walk(POSIX.joined(path, name), fs: fs, files: &files, directories: &directories, problems: &problems)
            }
        case .success:
            files.append(path)
        case .failure(let error):
            problems.append("\(path): \(POSIX.message(error.code))")
        }
    }
}
