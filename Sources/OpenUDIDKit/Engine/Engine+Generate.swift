import FoundationEssentials
import Glibc

extension Engine {
    // MARK: Resolving

    /// Reads every source, holds the vote, and writes the winner wherever this app owns a copy.
    ///
    /// - Parameters:
    ///   - slot: The selection slot this app serves, if it participates (for the report).
    ///   - previous: This app's last resolution, if any: the identifier it holds
    ///     is its own ballot where no stored copy of its own answers, so that an
    ///     unreadable slot or a lost X server never makes it forget.
    ///   - selections: Where the selection slots are read: a connection of the
    ///     engine's own, or the one a participant serves its slot on.
    func resolve(slot: Int?, after previous: Report? = nil, selections: SelectionAccess = .own) -> Report {
        let now = Date()
        if configuration.requiresConsent, !hasConsent {
            return noConsentReport()
        }
        let held = previous?.heldRecord
        var gathered = gather(now: now, held: held, heldIsProvisional: previous?.provisional ?? false, selections: selections)
        if let optOut = currentOptOut(gathered) {
            return optedOutReport(optOut, gathered: gathered, slot: slot, now: now)
        }
        gathered.held = held
        gathered.heldIsProvisional = previous?.provisional ?? false
        var resolution = vote(gathered, now: now)
        // A spoiled answer is an unknown ballot, not a lost one (§6.3 item 6):
        // a client that spoils the honest answers and serves its own would
        // otherwise be the only live ballot left, and every app that starts
        // later would take its identifier. The app keeps its own value or
        // generates a provisional one, and reads the slots again as usual.
        if case .read(let key) = gathered.reset.key, resolution.generation > 0, key.generation != resolution.generation {
            gathered.rejected.append(
                Rejection(
                    paths.resetKey,
                    "\(quoted(paths.resetKey)) holds the key of generation \(key.generation), not of the current generation "
                        + "\(resolution.generation); the key is unknown, so no selection of its generation casts a ballot"))
        }
        if resolution.undecided {
            let selections = gathered.candidates.count { if case .selection = $0.source { true } else { false } }
            gathered.rejected.append(
                Rejection(
                    "selections",
                    "the live vote is not decided: \(gathered.spoiledClients.count) X client(s) had their answers spoiled by another "
                        + "client, and could outvote the \(selections) record(s) read; they cast no ballot in this resolution",
                    code: "undecided"))
        }

        // Apps started at once from nothing would each generate an identifier of
        // their own. Generating is serialised through a lock beside the file
        // slots: the holder looks at the file slots again and generates only if
        // they are still empty, and keeps the lock until its copies are written.
        var generationLock: FileLock?
        defer { generationLock?.release() }
        // A provisional identifier is written nowhere durable, so there is nothing to serialise.
        let generates = resolution.origin == .generated && !resolution.provisional && configuration.usesFiles
        let acquired = generates ? takeGenerationLock(gathered: &gathered, now: now) : nil
        if acquired == nil, generates {
            // Another app generated while this one waited: its record decides.
            resolution = vote(gathered, now: now)
        }
        if case .failure(let problem)? = acquired {
            gathered.rejected.append(Rejection(paths.generationLock, problem.message, code: "generation-lock"))
        }
        if case .success(let lock)? = acquired {
            generationLock = lock
            if readFileSlotsAgain(into: &gathered, now: now) { resolution = vote(gathered, now: now) }
            // Someone else generated meanwhile: nothing left to serialise.
            if resolution.origin != .generated { lock.release() }
        }

        var pending: [PendingRepair] = []
        if configuration.usesFiles {
            pending.append(PendingRepair(place: localCachePlace, current: localCacheRead(gathered.local)))
            pending.append(PendingRepair(place: fileSlot, current: gathered.ownFileSlot))
        }
        if let mirrorPlace, let read = gathered.mirrorRead {
            // The mirror is the vendor's, not one app's: which app wrote it last does
            // not count in the vote, so rewriting it for that alone would make every
            // app of a vendor rewrite it (an fsync, or a keyring write) on every resolution.
            pending.append(PendingRepair(place: mirrorPlace, current: read, ignoringWriter: true))
        }
        let repairs: [Repair]
        if let record = DurableRecord(resolution, app: app, now: now) {
            repairs = repair(pending, record: record, now: now)
        } else {
            let why =
                "the identifier is provisional (generated while the live vote was undecided), so it is kept out of every durable place"
            repairs = pending.map { .skipped($0.place.kind, why) }
        }
        return Report(
            app: app, identifier: resolution.identifier, born: resolution.born, optOut: nil, resolution: resolution,
            sources: gathered.sources, rejected: gathered.rejected, repairs: repairs, mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, mirrorDetail: gathered.mirrorDetail, slot: slot,
            environment: SessionEnvironment.notes(configuration, sources: gathered.sources), generation: resolution.generation)
    }

    /// Takes the generation lock to generate, or finds that another app has
    /// generated meanwhile and returns nil, with its file slot in `gathered`.
    ///
    /// While another app holds the lock, this one waits for a shared lock,
    /// which the holder's release lets every waiter take at once, and reads the
    /// file slots again under it: the holder's file slot is written by then.
    /// A hundred apps started at once from nothing used to take the exclusive
    /// lock one after the other, each to find the identifier the first one
    /// made; now they read it side by side. Only if the file slots are still
    /// empty, or hold nothing the vote takes, does an app go on to the
    /// exclusive lock (PROTOCOL §6.4).
    private func takeGenerationLock(gathered: inout Gathered, now: Date) -> Result<FileLock, FileLock.Failure>? {
        let path = paths.generationLock
        let giveUp = ContinuousClock.now + Self.generationWait
        let first = FileLock.acquire(path, waitingAtMost: .zero, below: paths.sharedHome, fileSystem: fileSystem)
        guard case .failure(let problem) = first, problem.kind == .timedOut else { return first }
        switch FileLock.acquire(
            path, mode: .shared, waitingAtMost: ContinuousClock.now.duration(to: giveUp), below: paths.sharedHome, fileSystem: fileSystem)
        {
        case .success(let shared):
            let found = readFileSlotsAgain(into: &gathered, now: now)
            shared.release()
            if found, vote(gathered, now: now).origin != .generated { return nil }
        case .failure(let problem):
            // Held the whole wait, or unusable: said as it is, and the app generates.
            return .failure(problem)
        }
        return FileLock.acquire(
            path, waitingAtMost: max(ContinuousClock.now.duration(to: giveUp), .zero), below: paths.sharedHome, fileSystem: fileSystem)
    }

    /// Reads the file slots again and, if they hold any record now, puts
    /// them in `gathered` in place of what was read before.
    ///
    /// - Returns: Whether they held any.
    private func readFileSlotsAgain(into gathered: inout Gathered, now: Date) -> Bool {
        var again = Gathered()
        gatherFileSlots(into: &again, now: now)
        guard !again.candidates.isEmpty else { return false }
        gathered.candidates.removeAll { if case .fileSlot = $0.source { true } else { false } }
        gathered.candidates += again.candidates
        gathered.ownFileSlot = again.ownFileSlot
        gathered.sources = gathered.sources.map { $0.place == .fileSlot ? again.sources.first ?? $0 : $0 }
        return true
    }

    /// How long an app waits for another one that is generating an identifier;
    /// past that it generates its own rather than hang on a lock another app keeps.
    static let generationWait: Duration = .seconds(2)

    private func vote(_ gathered: Gathered, now: Date) -> Resolution {
        let local: SlotRecord? = if case .identifier(let record) = gathered.local { record } else { nil }
        return Resolution.resolve(
            candidates: gathered.candidates, local: local, held: gathered.held, heldIsProvisional: gathered.heldIsProvisional,
            keepsFiles: configuration.usesFiles, privateFiles: !paths.filesShared, policy: configuration.policy, app: app.id,
            reset: gathered.reset, unknownClients: gathered.spoiledClients
        ) { generation in
            // After a reset whose key is known, the new identifier is bound to it,
            // so that every app can tell it from one a display client made up.
            let born = Milliseconds.since1970(now)
            guard let key = gathered.reset.key(of: generation) else { return (Identifier.random(), born) }
            return (key.identifier(born: born), born)
        }
    }

    /// The app's own opt-out (kept in its local cache, so only with files), or
    /// the user's for every app, which an app that keeps no files follows too.
    private func currentOptOut(_ gathered: Gathered) -> OptOut? {
        if configuration.usesFiles, case .optedOut = gathered.local { return .app }
        if userOptedOut { return .user }
        return nil
    }

    /// Whether the user's consent for this app is recorded.
    var hasConsent: Bool { fileSystem.exists(paths.consentFile(for: app)) }

    /// The report of an app that requires consent and has none: nothing read,
    /// nothing written, the all-zero identifier.
    private func noConsentReport() -> Report {
        let why = "the app requires the user's consent, and none is recorded"
        return Report(
            app: app, identifier: .optedOut, born: nil, optOut: .noConsent, resolution: nil,
            sources: [.selection, .fileSlot, .localCache, .mirror].map { .notUsed($0, why) },
            rejected: [], repairs: [], mirrorStore: nil, mirrorRecord: nil, slot: nil,
            environment: SessionEnvironment.notes(configuration, sources: []))
    }
}
