import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import XSelection

extension Engine {
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
        var mirrorDetail: String?
        var held: SlotRecord?
        /// Whether `held` is provisional (§6.4): a live ballot, standing for no stored copy.
        var heldIsProvisional = false
        /// The X clients whose answers were spoiled by another client's writes
        /// (docs/PROTOCOL.md §5): each may have a ballot no one could read.
        var spoiledClients: Set<UInt32> = []
        /// What the user's reset marker and key say.
        var reset = ResetEvidence()
        /// The generation the user's reset marker names (0 when there is none or it cannot be read).
        var resetGeneration: Int64 { reset.generation }
    }

    /// Where a resolution reads the selection slots.
    enum SelectionAccess {
        /// On a connection of the engine's own (a one-shot resolution).
        case own
        /// On the connection the app serves its slot on (a participant).
        case through(any SelectionReading)
        /// Nowhere this time, and why (a participant whose server is gone).
        case none(String)
    }

    /// Reads every source. `held` is the app's value from its last resolution,
    /// which the selection pass needs to know when it may settle early.
    func gather(
        now: Date, held: SlotRecord? = nil, heldIsProvisional: Bool = false, selections access: SelectionAccess = .own
    ) -> Gathered {
        // The selection pass spends most of its time waiting for other processes
        // to answer; it runs on the reader's thread while the files and the
        // mirror are read here, not after it. The pass may end early once the
        // ballots in hand settle the vote, and the file slots and cache are
        // part of that hand.
        let durableInHand = DurableInHand()
        let settled = settlement(durableInHand: durableInHand, held: held, heldIsProvisional: heldIsProvisional, now: now)
        let selectionPass = beginSelections(access, now: now, settled: settled)
        var gathered = Gathered()
        // Before anything is read: an erasure from now on makes this resolution's
        // writes of the app's own copies stop (ErasureFence).
        erasureFence.pin()
        // The user's reset applies to every app, those that keep no files too.
        gatherResetGeneration(into: &gathered)
        if configuration.usesFiles {
            gatherFileSlots(into: &gathered, now: now)
            gatherLocalCache(into: &gathered, now: now)
        } else {
            gathered.sources.append(.notUsed(.fileSlot, "files are turned off"))
            gathered.sources.append(.notUsed(.localCache, "files are turned off"))
            gathered.ownFileSlot = .unavailable(StoreUnavailable(.io, "files are turned off"))
            gathered.local = .unavailable(StoreUnavailable(.io, "files are turned off"))
        }
        // The mirror is left out of settling (§5.1): it can only make the durable
        // tier decide. Not so with private files, where it is part of the app's
        // own live ballot: the pass then settles only once the mirror is read.
        if paths.filesShared { durableInHand.hold(gathered) }
        gatherMirror(into: &gathered, now: now)
        if !paths.filesShared { durableInHand.hold(gathered) }
        // Selections first, as if they had been read first: the same order every time.
        var part = Gathered()
        finishSelections(selectionPass, into: &part, now: now, settled: settled)
        gathered.candidates = part.candidates + gathered.candidates
        gathered.rejected = part.rejected + gathered.rejected
        gathered.sources = part.sources + gathered.sources
        gathered.spoiledClients = part.spoiledClients
        return gathered
    }

    /// Whether the selection readings in hand, with the file slots and local
    /// cache once they are read, settle the vote against the X clients that
    /// still owe an answer (`Resolution.isSettled`). Nothing is settled before
    /// the files are read: a durable ballot there may be what settles it.
    private func settlement(
        durableInHand: DurableInHand, held: SlotRecord?, heldIsProvisional: Bool, now: Date
    ) -> @Sendable ([SelectionSlots.Reading], Set<UInt32>) -> Bool {
        let keepsFiles = configuration.usesFiles
        let privateFiles = !paths.filesShared
        let policy = configuration.policy
        let app = app.id
        return { readings, outstanding in
            guard let durable = durableInHand.candidates.withLock({ $0 }) else { return false }
            let resolution = Resolution.resolve(
                candidates: durable.candidates + readings.compactMap(\.candidate), local: nil, held: held,
                heldIsProvisional: heldIsProvisional, keepsFiles: keepsFiles, privateFiles: privateFiles,
                policy: policy, app: app, reset: durable.reset
            ) { _ in (Identifier.random(), Milliseconds.since1970(now)) }
            return Resolution.isSettled(resolution, outstanding: outstanding)
        }
    }

    /// A selection pass under way on the reader's thread, or why there is none.
    private enum SelectionPass {
        case reading(Pending<[SelectionSlots.Reading]>, own: Bool)
        case done(SourceStatus)
    }

    private typealias Settled = @Sendable ([SelectionSlots.Reading], Set<UInt32>) -> Bool

    /// Starts the pass over every slot on the reader's thread.
    private func beginSelections(_ access: SelectionAccess, now: Date, settled: Settled?) -> SelectionPass {
        guard let display = configuration.displayName else {
            let why = configuration.usesSelections ? "no X display (DISPLAY is unset)" : "selections are turned off"
            return .done(configuration.usesSelections ? .unavailable(.selection, why) : .notUsed(.selection, why))
        }
        let reader: any SelectionReading
        switch access {
        case .through(let through): reader = through
        case .none(let why): return .done(.unavailable(.selection, why))
        case .own:
            do throws(XSelectionError) {
                reader = try connectedReader(display)
            } catch {
                dropReader()
                return .done(.unavailable(.selection, error.message))
            }
        }
        let (slots, deadline) = (slots, configuration.readDeadline)
        let pending = reader.beginPasses { passes throws(XSelectionError) in
            try slots.readAll(with: passes, deadline: deadline, now: now, settled: settled)
        }
        return .reading(pending, own: { if case .own = access { true } else { false } }())
    }

    /// Waits for the pass and puts what it read into `gathered`. An own
    /// connection whose server went away since the last pass is opened again
    /// once, and the pass made again.
    private func finishSelections(_ pass: SelectionPass, into gathered: inout Gathered, now: Date, settled: Settled?) {
        var readings: Result<[SelectionSlots.Reading], XSelectionError>
        switch pass {
        case .done(let status):
            gathered.sources.append(status)
            return
        case .reading(let pending, let own):
            readings = pending.wait()
            if case .failure = readings, own {
                dropReader()
                if case .reading(let again, _) = beginSelections(.own, now: now, settled: settled) { readings = again.wait() }
            }
        }
        switch readings {
        case .failure(let error):
            if case .reading(_, true) = pass { dropReader() }
            gathered.sources.append(.unavailable(.selection, error.message))
        case .success(let readings):
            var count = 0
            for reading in readings {
                switch reading.result {
                case .success:
                    count += 1
                    if let candidate = reading.candidate { gathered.candidates.append(candidate) }
                case .failure(let rejection):
                    gathered.rejected.append(rejection)
                    if rejection.code == .spoiled, let client = reading.holder?.client.rawValue {
                        gathered.spoiledClients.insert(client)
                    }
                }
            }
            gathered.sources.append(.read(.selection, records: count))
        }
    }

    /// Reads the user's reset generation and its key. A marker that cannot be
    /// read names no generation: the generations the durable records carry
    /// still supersede older ones.
    private func gatherResetGeneration(into gathered: inout Gathered) {
        let marker = ResetMarker(paths: paths, fileSystem: fileSystem)
        let (key, problem) = marker.key()
        if let problem {
            gathered.rejected.append(
                Rejection(marker.keyPath, problem + "; the key is unknown, so no selection of its generation casts a ballot"))
        }
        switch marker.read() {
        case .success(0):
            // A sandbox's own directory, which no reset on the host writes: finding
            // no marker there, the app cannot know of the user's resets (§6, §9).
            let none: ResetEvidence.Marker = paths.filesShared ? .absent : .unreadable
            gathered.reset = ResetEvidence(marker: marker.exists ? .present(0) : none, key: key)
        case .success(let generation):
            gathered.reset = ResetEvidence(marker: .present(generation), key: key)
        case .failure(let problem):
            gathered.reset = ResetEvidence(marker: .unreadable, key: key)
            gathered.rejected.append(Rejection(marker.path, problem.message))
        }
    }

    func gatherFileSlots(into gathered: inout Gathered, now: Date) {
        let listing: FileSlotStore.Listing
        do {
            listing = try fileSlots.list(including: app.id, now: now)
        } catch {
            gathered.sources.append(.unavailable(.fileSlot, error.message))
            gathered.ownFileSlot = .unavailable(error)
            return
        }
        var count = 0
        gathered.candidates.reserveCapacity(gathered.candidates.count + listing.entries.count)
        for entry in listing.entries {
            if entry.app == app.id { gathered.ownFileSlot = entry.content }
            // Named only in a rejection: most resolutions have none.
            var place: String { (try? fileSlots.path(for: entry.app)) ?? entry.app }
            switch entry.content {
            case .absent:
                continue
            case .unavailable(let problem):
                gathered.rejected.append(Rejection(place, problem.message, code: problem.code))
            case .found(let bytes):
                let parsed = entry.parsed ?? Result { () throws(RecordError) in try SlotRecord.parse(bytes, now: now) }
                switch parsed {
                case .success(let record):
                    gathered.candidates.append(Candidate(record, from: .fileSlot(app: entry.app)))
                    count += 1
                case .failure(let error):
                    gathered.rejected.append(Rejection(place, error.description, code: error.token))
                    if entry.app == app.id { gathered.ownFileSlot = .unavailable(StoreUnavailable(.corrupt, error.description)) }
                }
            }
        }
        if let report = listing.report { gathered.rejected.append(Rejection(fileSlots.directory, report, code: "too-many-files")) }
        guard listing.scanStopped else {
            gathered.sources.append(.read(.fileSlot, records: count))
            return
        }
        // The listing stopped before the end of the directory: the records read
        // (the app's own slot, read by name, among them) still vote, but what the
        // rest holds is unknown. An own slot found absent is left unwritten, as an
        // unreadable one is: a slot past the stop may hold the identifier, and one
        // generated for want of it must not be published beside it (docs/PROTOCOL.md §5).
        let why =
            "\(fileSlots.directory) holds more than \(FileSlotStore.scanLimit) entries and its listing stopped early, "
            + "so what the rest holds is unknown (\(count) valid record(s) read); remove the files that are not slots"
        gathered.sources.append(.unavailable(.fileSlot, why))
        if gathered.ownFileSlot == .absent { gathered.ownFileSlot = .unavailable(StoreUnavailable(.io, why)) }
    }

    private func gatherLocalCache(into gathered: inout Gathered, now: Date) {
        let content = localCache.read(now: now)
        gathered.local = content
        switch content {
        case .absent, .optedOut:
            gathered.sources.append(.read(.localCache, records: 0))
        case .identifier(let record):
            gathered.candidates.append(Candidate(record, from: .localCache))
            gathered.sources.append(.read(.localCache, records: 1))
        case .unavailable(let problem):
            gathered.rejected.append(Rejection(localCache.path, problem.message, code: problem.code))
            gathered.sources.append(.unavailable(.localCache, problem.message))
        }
    }

    private func gatherMirror(into gathered: inout Gathered, now: Date) {
        guard let mirror, let place = mirrorPlace else {
            gathered.sources.append(.notUsed(.mirror, "no mirror chosen"))
            return
        }
        gathered.mirrorName = mirror.name
        gathered.mirrorDetail = (mirror as? FileVendorMirror)?.passedOver.map { "the Secret Service was passed over: \($0)" }
        let read = place.read()
        gathered.mirrorRead = read
        switch read {
        case .absent:
            gathered.sources.append(.read(.mirror, records: 0))
        case .unavailable(let problem):
            gathered.sources.append(.unavailable(.mirror, problem.message))
        case .found(let bytes):
            do {
                let record = try SlotRecord.parse(bytes, now: now)
                gathered.mirrorRecord = record
                gathered.candidates.append(Candidate(record, from: .vendorMirror(store: mirror.name, vendor: app.vendor)))
                gathered.sources.append(.read(.mirror, records: 1))
            } catch {
                gathered.rejected.append(Rejection(place.location, error.description, code: error.token))
                gathered.mirrorRead = .unavailable(StoreUnavailable(.corrupt, error.description))
                gathered.sources.append(.read(.mirror, records: 0))
            }
        }
    }

}

/// The records a pass has in hand besides its selections (the file slots and
/// local cache, and the mirror where files are private) and the user's reset
/// evidence, handed from the thread that reads the files to the one reading
/// selections; nil until the files are read.
private final class DurableInHand: Sendable {
    let candidates = Mutex<(candidates: [Candidate], reset: ResetEvidence)?>(nil)

    /// Hands over what `gathered` holds so far.
    func hold(_ gathered: Engine.Gathered) {
        let held = (gathered.candidates, gathered.reset)
        candidates.withLock { $0 = held }
    }
}
