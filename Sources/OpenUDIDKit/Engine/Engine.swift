import Foundation
import Synchronization
import XSelection

/// Gathers candidates from every source, holds the vote, and repairs what the
/// app owns. One engine per `OpenUDID` instance; calls are serialised by the
/// owner of the engine.
final class Engine: @unchecked Sendable {
    // Everything mutable (`reader`, `mirrorStore`) is touched only with `lock` held.
    private let lock = NSLock()
    let app: AppIdentity
    let configuration: OpenUDID.Configuration
    let paths: StoragePaths
    let slots: SelectionSlots
    let fileSlots: FileSlotStore
    let localCache: LocalCache
    private var reader: SelectionReader?
    private var mirrorChoice: (any VendorMirrorStore)??

    init(app: AppIdentity, configuration: OpenUDID.Configuration) throws(OpenUDIDError) {
        guard (1...10_000).contains(configuration.slotCount) else {
            throw OpenUDIDError(.invalidOption, "slot count \(configuration.slotCount) is out of range; use 1 to 10000")
        }
        self.app = app
        self.configuration = configuration
        do {
            paths = try StoragePaths(environment: configuration.environment, namespace: configuration.namespace)
        } catch {
            throw OpenUDIDError(error)
        }
        slots = SelectionSlots(namespace: configuration.namespace, count: configuration.slotCount)
        fileSlots = FileSlotStore(paths: paths)
        localCache = LocalCache(app: app, paths: paths)
    }

    /// The mirror store, chosen once (the automatic choice asks the session bus).
    var mirror: (any VendorMirrorStore)? {
        lock.withLock {
            if let chosen = mirrorChoice { return chosen }
            let chosen = Self.store(for: configuration.mirror, paths: paths, environment: configuration.environment)
            mirrorChoice = .some(chosen)
            return chosen
        }
    }

    static func store(for choice: MirrorChoice, paths: StoragePaths, environment: [String: String]) -> (any VendorMirrorStore)? {
        switch choice {
        case .none: return nil
        case .file: return FileVendorMirror(paths: paths)
        case .secretService: return SecretServiceMirror(busAddress: busAddress(environment), namespace: paths.namespace)
        case .automatic:
            // A locked or hung keyring still counts: it may hold the mirror, it just
            // cannot be read now (the report says so), and falling back to files
            // would fork the vendor's value.
            let address = busAddress(environment)
            switch SecretServiceMirror.probe(busAddress: address) {
            case .ready, .locked, .unresponsive: return SecretServiceMirror(busAddress: address, namespace: paths.namespace)
            case .unusable, .unreachable: return FileVendorMirror(paths: paths)
            }
        }
    }

    /// The session bus of `environment`, so a handle configured with another
    /// environment (a test, the lab) talks to that environment's Secret Service.
    private static func busAddress(_ environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return "unix:path=\(runtime)/bus" }
        return nil
    }

    /// Whether the user opted out for every app.
    var userOptedOut: Bool {
        var status = stat()
        return lstat(paths.optOutMarker, &status) == 0
    }

    // MARK: Reading

    /// Everything read from every source in one resolution.
    struct Gathered {
        var candidates: [Candidate] = []
        var rejected: [Rejection] = []
        var sources: [SourceStatus] = []
        var local: LocalCache.Content = .absent
        var ownFileSlot: StoreRead = .absent
        var mirrorRead: StoreRead?
        var mirrorRecord: SlotRecord?
        var mirrorName: String?
        var held: SlotRecord?
    }

    func gather(now: Date) -> Gathered {
        // The selection pass spends most of its time waiting for other processes
        // to answer; the files and the mirror are read meanwhile, not after it.
        let group = DispatchGroup()
        let selections = Mutex<(candidates: [Candidate], rejected: [Rejection], sources: [SourceStatus])>(([], [], []))
        DispatchQueue.global(qos: .userInitiated).async(group: group) { [self] in
            var part = Gathered()
            gatherSelections(into: &part, now: now)
            selections.withLock { $0 = (part.candidates, part.rejected, part.sources) }
        }
        var gathered = Gathered()
        if configuration.usesFiles {
            gatherFileSlots(into: &gathered, now: now)
            gatherLocalCache(into: &gathered, now: now)
        } else {
            gathered.sources.append(SourceStatus("file-slots", .notUsed("files are turned off")))
            gathered.sources.append(SourceStatus("local-cache", .notUsed("files are turned off")))
            gathered.ownFileSlot = .unavailable(StoreUnavailable(.io, "files are turned off"))
            gathered.local = .unavailable(StoreUnavailable(.io, "files are turned off"))
        }
        gatherMirror(into: &gathered, now: now)
        group.wait()
        // Selections first, as if they had been read first: the same order every time.
        selections.withLock { part in
            gathered.candidates = part.candidates + gathered.candidates
            gathered.rejected = part.rejected + gathered.rejected
            gathered.sources = part.sources + gathered.sources
        }
        return gathered
    }

    private func gatherSelections(into gathered: inout Gathered, now: Date) {
        guard let display = configuration.displayName else {
            let why = configuration.usesSelections ? "no X display (DISPLAY is unset)" : "selections are turned off"
            gathered.sources.append(SourceStatus("selections", configuration.usesSelections ? .unavailable(why) : .notUsed(why)))
            return
        }
        do throws(XSelectionError) {
            let reader = try connectedReader(display)
            let readings: [SelectionSlots.Reading]
            do throws(XSelectionError) {
                readings = try slots.readAll(with: reader, deadline: configuration.readDeadline, now: now)
            } catch {
                // The server went away since the last pass: reconnect once.
                dropReader()
                readings = try slots.readAll(with: try connectedReader(display), deadline: configuration.readDeadline, now: now)
            }
            var count = 0
            for reading in readings {
                switch reading.result {
                case .success(let record):
                    count += 1
                    gathered.candidates.append(
                        Candidate(record, from: .selection(slot: reading.index, client: reading.holder?.client.rawValue ?? 0)))
                case .failure(let rejection):
                    gathered.rejected.append(rejection)
                }
            }
            gathered.sources.append(SourceStatus("selections", .read(records: count)))
        } catch {
            dropReader()
            gathered.sources.append(SourceStatus("selections", .unavailable(error.message)))
        }
    }

    private func connectedReader(_ display: String) throws(XSelectionError) -> SelectionReader {
        lock.lock()
        defer { lock.unlock() }
        if let reader { return reader }
        let opened = try SelectionReader(display: display)
        reader = opened
        return opened
    }

    func connectedReaderForOwners(_ display: String) throws(XSelectionError) -> SelectionReader {
        try connectedReader(display)
    }

    private func dropReader() {
        lock.withLock {
            reader?.close()
            reader = nil
        }
    }

    private func gatherFileSlots(into gathered: inout Gathered, now: Date) {
        let listing: FileSlotStore.Listing
        do {
            listing = try fileSlots.list(including: app.id)
        } catch {
            gathered.sources.append(SourceStatus("file-slots", .unavailable(error.message)))
            gathered.ownFileSlot = .unavailable(error)
            return
        }
        var count = 0
        for entry in listing.entries {
            if entry.app == app.id { gathered.ownFileSlot = entry.content }
            let place = (try? fileSlots.path(for: entry.app)) ?? entry.app
            switch entry.content {
            case .absent:
                continue
            case .unavailable(let problem):
                gathered.rejected.append(Rejection(place, problem.message))
            case .found(let bytes):
                do {
                    let record = try SlotRecord.parse(bytes, now: now)
                    gathered.candidates.append(Candidate(record, from: .fileSlot(app: entry.app)))
                    count += 1
                } catch {
                    gathered.rejected.append(Rejection(place, error.description, code: error.token))
                    if entry.app == app.id { gathered.ownFileSlot = .unavailable(StoreUnavailable(.corrupt, error.description)) }
                }
            }
        }
        if let report = listing.report { gathered.rejected.append(Rejection(fileSlots.directory, report, code: "too-many-files")) }
        gathered.sources.append(SourceStatus("file-slots", .read(records: count)))
    }

    private func gatherLocalCache(into gathered: inout Gathered, now: Date) {
        let content = localCache.read(now: now)
        gathered.local = content
        switch content {
        case .absent, .optedOut:
            gathered.sources.append(SourceStatus("local-cache", .read(records: 0)))
        case .identifier(let record):
            gathered.candidates.append(Candidate(record, from: .localCache))
            gathered.sources.append(SourceStatus("local-cache", .read(records: 1)))
        case .unavailable(let problem):
            gathered.rejected.append(Rejection(localCache.path, problem.message))
            gathered.sources.append(SourceStatus("local-cache", .unavailable(problem.message)))
        }
    }

    private func gatherMirror(into gathered: inout Gathered, now: Date) {
        guard let mirror else {
            gathered.sources.append(SourceStatus("mirror", .notUsed("no mirror chosen")))
            return
        }
        gathered.mirrorName = mirror.name
        let read = mirror.read(vendor: app.vendor)
        gathered.mirrorRead = read
        let place = "\(mirror.name) mirror of \(app.vendor)"
        switch read {
        case .absent:
            gathered.sources.append(SourceStatus("mirror", .read(records: 0)))
        case .unavailable(let problem):
            gathered.sources.append(SourceStatus("mirror", .unavailable(problem.message)))
        case .found(let bytes):
            do {
                let record = try SlotRecord.parse(bytes, now: now)
                gathered.mirrorRecord = record
                gathered.candidates.append(Candidate(record, from: .vendorMirror(store: mirror.name, vendor: app.vendor)))
                gathered.sources.append(SourceStatus("mirror", .read(records: 1)))
            } catch {
                gathered.rejected.append(Rejection(place, error.description, code: error.token))
                gathered.mirrorRead = .unavailable(StoreUnavailable(.corrupt, error.description))
                gathered.sources.append(SourceStatus("mirror", .read(records: 0)))
            }
        }
    }

    // MARK: Resolving

    /// Reads every source, holds the vote, and writes the winner wherever this app owns a copy.
    ///
    /// - Parameters:
    ///   - slot: The selection slot this app serves, if it participates (for the report).
    ///   - held: The identifier this app holds from its last resolution, if any:
    ///     its own ballot where no stored copy of its own answers, so that an
    ///     unreadable slot or a lost X server never makes it forget.
    func resolve(slot: Int?, held: SlotRecord? = nil) -> Report {
        let now = Date()
        var gathered = gather(now: now)
        if let optOut = currentOptOut(gathered) {
            return optedOutReport(optOut, gathered: gathered, slot: slot, now: now)
        }
        gathered.held = held
        var resolution = vote(gathered, now: now)

        // Apps started at once from nothing would each generate an identifier of
        // their own. Generating is serialised through a lock beside the file
        // slots: the holder looks at the file slots again and generates only if
        // they are still empty, and keeps the lock until its copies are written.
        var generationLock: FileLock?
        defer { generationLock?.release() }
        let acquired =
            resolution.origin == .generated && configuration.usesFiles
            ? FileLock.acquire(paths.generationLock, waitingAtMost: Self.generationWait, below: paths.dataHome) : nil
        if case .failure(let problem)? = acquired {
            gathered.rejected.append(Rejection(paths.generationLock, problem.message, code: "generation-lock"))
        }
        if case .success(let lock)? = acquired {
            generationLock = lock
            var again = Gathered()
            gatherFileSlots(into: &again, now: now)
            if !again.candidates.isEmpty {
                gathered.candidates.removeAll { if case .fileSlot = $0.source { true } else { false } }
                gathered.candidates += again.candidates
                gathered.ownFileSlot = again.ownFileSlot
                gathered.sources = gathered.sources.map { $0.name == "file-slots" ? again.sources.first ?? $0 : $0 }
                resolution = vote(gathered, now: now)
            }
            // Someone else generated meanwhile: nothing left to serialise.
            if resolution.origin != .generated { lock.release() }
        }

        let record = SlotRecord(
            id: resolution.identifier, app: app.id, vendor: app.vendor, born: resolution.born,
            written: Milliseconds.since1970(now), optOut: false)
        var repairs: [Repair] = []
        if configuration.usesFiles {
            repairs.append(
                repairFile(
                    "local cache", current: localCacheRead(gathered.local), record: record,
                    quarantine: { () throws(StoreUnavailable) in _ = try localCache.quarantine(now: now) },
                    write: { () throws(StoreUnavailable) in try localCache.write(record.id, born: record.born, at: now) }))
            repairs.append(
                repairFile(
                    "file slot", current: gathered.ownFileSlot, record: record,
                    quarantine: { () throws(StoreUnavailable) in _ = try fileSlots.quarantine(app: app.id, now: now) },
                    write: { () throws(StoreUnavailable) in try fileSlots.write(record.encoded(), app: app.id) }))
        }
        if let mirror, let read = gathered.mirrorRead {
            let mirrorRecord = SlotRecord(
                id: record.id, app: app.id, vendor: app.vendor, born: record.born,
                written: record.written, optOut: false)
            // The mirror is the vendor's, not one app's: which app wrote it last does
            // not count in the vote, so rewriting it for that alone would make every
            // app of a vendor rewrite it (an fsync, or a keyring write) on every resolution.
            repairs.append(
                repairFile(
                    "mirror", current: read, record: mirrorRecord, ignoringWriter: true,
                    quarantine: { () throws(StoreUnavailable) in
                        if let file = mirror as? FileVendorMirror { _ = try file.quarantine(vendor: app.vendor, now: now) }
                    }, write: { () throws(StoreUnavailable) in try mirror.write(mirrorRecord.encoded(), vendor: app.vendor) }))
        }
        return Report(
            app: app, identifier: resolution.identifier, born: resolution.born, optOut: nil, resolution: resolution,
            sources: gathered.sources, rejected: gathered.rejected, repairs: repairs, mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, slot: slot)
    }

    /// How long an app waits for another one that is generating an identifier;
    /// past that it generates its own rather than hang on a lock another app keeps.
    static let generationWait: Duration = .seconds(2)

    private func vote(_ gathered: Gathered, now: Date) -> Resolution {
        let local: SlotRecord? = if case .identifier(let record) = gathered.local { record } else { nil }
        return Resolution.resolve(
            candidates: gathered.candidates, local: local, held: gathered.held,
            keepsFiles: configuration.usesFiles, policy: configuration.policy, app: app.id
        ) {
            (Identifier.random(), Milliseconds.since1970(now))
        }
    }

    private func currentOptOut(_ gathered: Gathered) -> OptOut? {
        guard configuration.usesFiles else { return nil }
        if case .optedOut = gathered.local { return .app }
        if userOptedOut { return .user }
        return nil
    }

    private func localCacheRead(_ content: LocalCache.Content) -> StoreRead {
        switch content {
        case .absent: .absent
        case .identifier(let record), .optedOut(let record): .found(record.encoded())
        case .unavailable(let problem): .unavailable(problem)
        }
    }

    /// Writes `record` unless the place already holds it, or cannot be read:
    /// a store whose content is unknown is never overwritten. A corrupt file is
    /// moved aside first, so its bytes are not lost.
    private func repairFile(
        _ place: String, current: StoreRead, record: SlotRecord, ignoringWriter: Bool = false,
        quarantine: () throws(StoreUnavailable) -> Void,
        write: () throws(StoreUnavailable) -> Void
    ) -> Repair {
        switch current {
        case .found(let bytes):
            // An opted-out record carries no identifier, so its times do not matter.
            if let held = try? SlotRecord.parse(bytes), held.id == record.id, held.optOut == record.optOut,
                held.born == record.born || record.optOut, ignoringWriter || held.app == record.app,
                held.vendor == record.vendor
            {
                return Repair(place, .unchanged)
            }
        case .absent:
            break
        case .unavailable(let problem) where problem.kind == .corrupt:
            do { try quarantine() } catch { return Repair(place, .failed(error.message)) }
        case .unavailable(let problem):
            return Repair(place, .skipped("its content is unknown (\(problem.message)), so it is left as it is"))
        }
        do {
            try write()
            return Repair(place, .written)
        } catch {
            return Repair(place, .failed(error.message))
        }
    }

    private func optedOutReport(_ optOut: OptOut, gathered: Gathered, slot: Int?, now: Date) -> Report {
        // An opted-out app publishes that it opted out, so others do not count
        // a stale value for it; its local cache and the mirror are left alone.
        let milliseconds = Milliseconds.since1970(now)
        let record = SlotRecord(id: .optedOut, app: app.id, vendor: app.vendor, born: milliseconds, written: milliseconds, optOut: true)
        let repair = repairFile(
            "file slot", current: gathered.ownFileSlot, record: record,
            quarantine: { () throws(StoreUnavailable) in _ = try fileSlots.quarantine(app: app.id, now: now) },
            write: { () throws(StoreUnavailable) in try fileSlots.write(record.encoded(), app: app.id) })
        return Report(
            app: app, identifier: .optedOut, born: nil, optOut: optOut, resolution: nil, sources: gathered.sources,
            rejected: gathered.rejected, repairs: [repair], mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, slot: slot)
    }

    /// The record this app serves in its selection slot for `report`.
    func slotRecord(for report: Report) -> SlotRecord {
        let now = Milliseconds.since1970(Date())
        if report.optOut != nil {
            return SlotRecord(id: .optedOut, app: app.id, vendor: app.vendor, born: now, written: now, optOut: true)
        }
        return SlotRecord(id: report.identifier, app: app.id, vendor: app.vendor, born: report.born ?? now, written: now, optOut: false)
    }
}

extension Engine {
    /// The slots nobody owns now, lowest first (one round trip).
    func freeSlots() throws(XSelectionError) -> [Int] {
        guard let display = configuration.displayName else { return [] }
        let reader = try connectedReaderForOwners(display)
        let owners = try reader.owners(of: slots.names)
        return (0..<slots.count).filter { index in
            guard let holder = owners[slots.name(index)] else { return true }
            return holder == nil
        }
    }
}
