import FoundationEssentials
import Glibc
import InputGate

extension OpenUDID {
    /// What a user reset did (`User.reset()`).
    public struct Reset: Sendable {
        /// The new reset generation: every record of an older one is superseded.
        public let generation: Int64
        /// The files removed: file slots, local caches holding an identifier,
        /// file mirrors, and their quarantined copies.
        public let files: [String]
        /// The Secret Service items removed, by label.
        public let keyringItems: [String]
        /// What could not be looked at or removed. The reset still holds: a copy
        /// left behind belongs to an older generation and is superseded and
        /// overwritten by the next app that reads it.
        public let problems: [String]
    }
}

extension OpenUDID.User {
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
    /// Undoing a user-wide opt-out (`User.optIn()`) brings back the
    /// previous identifier; a reset is how a user asks for a new one.
    ///
    /// - Returns: The new generation, what was removed, and what could not be.
    /// - Throws: `OpenUDIDError` when there is no home directory, the namespace is
    ///   invalid, or the reset marker cannot be written (then nothing is reset:
    ///   the removed copies come back from the running apps that hold them).
    public func reset() throws(OpenUDIDError) -> OpenUDID.Reset {
        let paths = try paths()
        let fs = FileSystem.system
        // Apps' writes of their copies wait while the reset holds this, and drop
        // what they read before it (docs/PROTOCOL.md §9).
        let erasing = try ErasureLock.take([paths.erasureLock], below: paths.sharedHome, fileSystem: fs)
        defer { erasing.finish() }
        var problems: [String] = []
        let marker = ResetMarker(paths: paths, fileSystem: fs)
        var highest: Int64 = 0
        // With a marker to go by, a record more than one generation past it was
        // not written by a reset (PROTOCOL §6, `ahead`) and raises nothing.
        var ceiling = SlotRecord.maximumGeneration
        switch marker.read() {
        case .success(let generation):
            highest = generation
            if marker.exists { ceiling = min(generation + 1, ceiling) }
        case .failure(let problem) where problem.kind == .corrupt:
            // Its bytes are kept aside; the generations of the records below still count.
            do { try marker.quarantine() } catch { throw OpenUDIDError(error) }
        case .failure(let problem):
            throw OpenUDIDError(problem)
        }

        // Every copy of the identifier in files. Opted-out local caches are the
        // user's choice for that app, not a copy: they stay.
        var files: [String] = []
        for directory in [paths.slotsDirectory, paths.vendorsDirectory] {
            files += Self.names(in: directory, fs: fs, problems: &problems).filter(Self.isRecordFile).map { POSIX.joined(directory, $0) }
        }
        let cacheName = paths.localCacheName
        files += Self.appFiles(in: paths.dataHome, fs: fs, problems: &problems) { $0 == cacheName || $0.hasPrefix(cacheName + ".corrupt-") }
        var removable: [String] = []
        for file in files.sorted() {
            guard case .found(let bytes) = AtomicFile.read(file, below: paths.dataHome, fileSystem: fs),
                let record = try? SlotRecord.parse(bytes)
            else {
                removable.append(file)
                continue
            }
            if record.generation <= ceiling { highest = max(highest, record.generation) }
            let isOptOutChoice =
                record.optOut && !file.hasPrefix(paths.slotsDirectory + "/") && !file.hasPrefix(paths.vendorsDirectory + "/")
            if !isOptOutChoice { removable.append(file) }
        }

        // The mirror in the Secret Service, if one is on the bus.
        var keyringItems: [String] = []
        if let address = secretServiceBus {
            do throws(StoreUnavailable) {
                let (removed, keptCopies) = try SecretServiceMirror(busAddress: address, namespace: paths.namespace)
                    .removeEveryVendorItem()
                if let keptCopies { problems.append(keptCopies) }
                for item in removed {
                    keyringItems.append(item.label)
                    if let record = try? SlotRecord.parse(item.secret), record.generation <= ceiling {
                        highest = max(highest, record.generation)
                    }
                }
            } catch {
                problems.append("the Secret Service: \(error.message); its items are superseded and overwritten when next read")
            }
        }

        let removed = Self.unlink(removable, fs: fs, problems: &problems)

        // Last, so that an app resolving meanwhile and writing its old value back
        // hears of the reset after its write, and replaces it.
        // Generations are bounded (§3), and only a planted record or marker
        // reaches the bound. Every copy this reset could reach is gone, so it
        // starts again at 1: with a marker to go by, whatever is left above 2
        // is `ahead` and raises nothing, and the user can always reset.
        let next = highest < SlotRecord.maximumGeneration ? highest + 1 : 1
        // The key first: an app that hears of the marker finds the key of its
        // generation beside it, and binds the identifier it generates to it.
        do {
            try marker.write(ResetKey.random(generation: next))
            try marker.write(next)
        } catch { throw OpenUDIDError(error) }
        return OpenUDID.Reset(generation: next, files: removed, keyringItems: keyringItems, problems: problems)
    }

    /// Whether `name`, in the slots or vendors directory, is a record file the
    /// library writes: `<id>.json`, its quarantined copies, or a temporary file.
    private static func isRecordFile(_ name: String) -> Bool {
        name.hasSuffix(".json") || name.contains(".json.corrupt-") || name.hasPrefix(AtomicFile.temporaryPrefix)
    }
}
