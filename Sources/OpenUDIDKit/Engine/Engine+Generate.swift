import FoundationEssentials
import Glibc

extension Engine {
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
        if configuration.requiresConsent, !hasConsent {
            return noConsentReport()
        }
        var gathered = gather(now: now, held: held)
        if let optOut = currentOptOut(gathered) {
            return optedOutReport(optOut, gathered: gathered, slot: slot, now: now)
        }
        gathered.held = held
        var resolution = vote(gathered, now: now)
        // A spoiled answer is an unknown ballot, not a lost one: the live tier
        // decides only if the winner would win whatever the spoiled clients
        // voted, as it settles early against silent ones (§5.1). Otherwise a
        // client that spoils the honest answers and serves its own would be
        // the only live ballot left, and every app that starts later would
        // take its identifier. Without the selections the app keeps its own
        // value or generates one, and reads the slots again as usual.
        if resolution.decidedBy == .live, !Resolution.isSettled(resolution, outstanding: gathered.spoiledClients) {
            let selections = gathered.candidates.filter { if case .selection = $0.source { true } else { false } }
            gathered.candidates.removeAll { if case .selection = $0.source { true } else { false } }
            gathered.rejected.append(
                Rejection(
                    "selections",
                    "the live vote is not decided: \(gathered.spoiledClients.count) X client(s) had their answers spoiled by another "
                        + "client, and could outvote the \(selections.count) record(s) read; they cast no ballot in this resolution",
                    code: "undecided"))
            resolution = vote(gathered, now: now)
        }

        // Apps started at once from nothing would each generate an identifier of
        // their own. Generating is serialised through a lock beside the file
        // slots: the holder looks at the file slots again and generates only if
        // they are still empty, and keeps the lock until its copies are written.
        var generationLock: FileLock?
        defer { generationLock?.release() }
        let acquired =
            resolution.origin == .generated && configuration.usesFiles
            ? FileLock.acquire(
                paths.generationLock, waitingAtMost: Self.generationWait, below: paths.dataHome, fileSystem: fileSystem) : nil
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
                gathered.sources = gathered.sources.map { $0.place == .fileSlot ? again.sources.first ?? $0 : $0 }
                resolution = vote(gathered, now: now)
            }
            // Someone else generated meanwhile: nothing left to serialise.
            if resolution.origin != .generated { lock.release() }
        }

        let record = SlotRecord(
            id: resolution.identifier, app: app.id, vendor: app.vendor, born: resolution.born,
            written: Milliseconds.since1970(now), optOut: false, generation: resolution.generation)
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
        let repairs = repair(pending, record: record, now: now)
        return Report(
            app: app, identifier: resolution.identifier, born: resolution.born, optOut: nil, resolution: resolution,
            sources: gathered.sources, rejected: gathered.rejected, repairs: repairs, mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, slot: slot,
            environment: SessionEnvironment.notes(configuration, sources: gathered.sources), generation: resolution.generation)
    }

    /// How long an app waits for another one that is generating an identifier;
    /// past that it generates its own rather than hang on a lock another app keeps.
    static let generationWait: Duration = .seconds(2)

    private func vote(_ gathered: Gathered, now: Date) -> Resolution {
        let local: SlotRecord? = if case .identifier(let record) = gathered.local { record } else { nil }
        return Resolution.resolve(
            candidates: gathered.candidates, local: local, held: gathered.held,
            keepsFiles: configuration.usesFiles, policy: configuration.policy, app: app.id,
            reset: gathered.reset
        ) { generation in
            // After a reset whose key is known, the new identifier is bound to it,
            // so that every app can tell it from one a display client made up.
            let born = Milliseconds.since1970(now)
            guard let key = gathered.reset.key, key.generation == generation else { return (Identifier.random(), born) }
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
