import FoundationEssentials
import Glibc
import Synchronization

/// A record the app may write to its durable places: its file slot, its local
/// cache, its vendor's mirror. It is made only from a decided resolution (or
/// the app's opt-out), so no call site can put a provisional identifier where
/// it would outrank a later decided majority (docs/PROTOCOL.md §6.4).
struct DurableRecord {
    let record: SlotRecord

    /// The record of `resolution`'s identifier, written by `app` at `now`; nil when it is provisional.
    init?(_ resolution: Resolution, app: AppIdentity, now: Date) {
        guard !resolution.provisional else { return nil }
        record = SlotRecord(
            id: resolution.identifier, app: app.id, vendor: app.vendor, born: resolution.born,
            written: Milliseconds.since1970(now), optOut: false, generation: resolution.generation)
    }

    /// The opted-out record `app` publishes at `now`: a choice, never a guess.
    init(optedOut app: AppIdentity, generation: Int64, now: Date) {
        let milliseconds = Milliseconds.since1970(now)
        record = SlotRecord(
            id: .optedOut, app: app.id, vendor: app.vendor, born: milliseconds, written: milliseconds, optOut: true,
            generation: generation)
    }
}

extension Engine {
    func localCacheRead(_ content: LocalCache.Content) -> StoreRead {
        switch content {
        case .absent: .absent
        case .identifier(let record), .optedOut(let record): .found(record.encoded())
        case .unavailable(let problem): .unavailable(problem)
        }
    }

    /// Writes `record` to `place` unless the place already holds it, or cannot be
    /// read: a place whose content is unknown is never overwritten. Content that is
    /// not a valid record is moved aside first, so its bytes are not lost.
    ///
    /// - Parameters:
    ///   - current: What reading `place` gave in this resolution.
    ///   - ignoringWriter: Whether a copy written by another app counts as the same
    ///     (the vendor's mirror, which is not one app's).
    func repair(
        _ place: any RecordPlace, current: StoreRead, record durable: DurableRecord, ignoringWriter: Bool = false, now: Date
    ) -> Repair {
        let record = durable.record
        switch current {
        case .found(let bytes):
            if Self.holds(bytes, record, ignoringWriter: ignoringWriter) { return .unchanged(place.kind) }
        case .absent:
            break
        case .unavailable(let problem) where problem.kind == .corrupt:
            do { _ = try place.quarantine(now: now) } catch { return .failed(place.kind, error.message) }
        case .unavailable(let problem):
            return .skipped(place.kind, "its content is unknown (\(problem.message)), so it is left as it is")
        }
        do {
            try place.write(record.encoded())
            return .written(place.kind)
        } catch {
            return .failed(place.kind, error.message)
        }
    }

    /// Whether `bytes` already hold `record`, as far as the protocol compares (section 7).
    static func holds(_ bytes: Data, _ record: SlotRecord, ignoringWriter: Bool) -> Bool {
        guard let held = try? SlotRecord.parse(bytes) else { return false }
        return same(held, record, ignoringWriter: ignoringWriter)
    }

    /// Whether two records say the same, as far as the protocol compares (section
    /// 7): everything but `written`, and `born` only where there is an identifier.
    /// A participant claims its slot again exactly when this is false (section 2).
    static func same(_ held: SlotRecord, _ record: SlotRecord, ignoringWriter: Bool = false) -> Bool {
        // An opted-out record carries no identifier, so its times do not matter.
        held.id == record.id && held.optOut == record.optOut && (held.born == record.born || record.optOut)
            && held.generation == record.generation && (ignoringWriter || held.app == record.app) && held.vendor == record.vendor
    }

    /// One place to repair: where, what reading it gave, and whether its writer counts.
    struct PendingRepair {
        let place: any RecordPlace
        let current: StoreRead
        var ignoringWriter = false
    }

    /// Repairs every place, in the order given, and reports them in that order.
    func repair(_ pending: [PendingRepair], record: DurableRecord, now: Date) -> [Repair] {
        pending.map { repair($0.place, current: $0.current, record: record, ignoringWriter: $0.ignoringWriter, now: now) }
    }

    func optedOutReport(_ optOut: OptOut, gathered: Gathered, slot: Int?, now: Date) -> Report {
        // An opted-out app publishes that it opted out, so others do not count
        // a stale value for it; its local cache and the mirror are left alone.
        let record = DurableRecord(optedOut: app, generation: gathered.resetGeneration, now: now)
        let repairs = configuration.usesFiles ? [repair(fileSlot, current: gathered.ownFileSlot, record: record, now: now)] : []
        return Report(
            app: app, identifier: .optedOut, born: nil, optOut: optOut, resolution: nil, sources: gathered.sources,
            rejected: gathered.rejected, repairs: repairs, mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, mirrorDetail: gathered.mirrorDetail, slot: slot,
            environment: SessionEnvironment.notes(configuration, sources: gathered.sources), generation: gathered.resetGeneration)
    }

}
