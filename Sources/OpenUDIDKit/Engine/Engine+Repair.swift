import FoundationEssentials
import Glibc

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
        _ place: any RecordPlace, current: StoreRead, record: SlotRecord, ignoringWriter: Bool = false, now: Date
    ) -> Repair {
        switch current {
        case .found(let bytes):
            // An opted-out record carries no identifier, so its times do not matter.
            if let held = try? SlotRecord.parse(bytes), held.id == record.id, held.optOut == record.optOut,
                held.born == record.born || record.optOut, held.generation == record.generation,
                ignoringWriter || held.app == record.app, held.vendor == record.vendor
            {
                return Repair(place.name, .unchanged)
            }
        case .absent:
            break
        case .unavailable(let problem) where problem.kind == .corrupt:
            do { _ = try place.quarantine(now: now) } catch { return Repair(place.name, .failed(error.message)) }
        case .unavailable(let problem):
            return Repair(place.name, .skipped("its content is unknown (\(problem.message)), so it is left as it is"))
        }
        do {
            try place.write(record.encoded())
            return Repair(place.name, .written)
        } catch {
            return Repair(place.name, .failed(error.message))
        }
    }

    func optedOutReport(_ optOut: OptOut, gathered: Gathered, slot: Int?, now: Date) -> Report {
        // An opted-out app publishes that it opted out, so others do not count
        // a stale value for it; its local cache and the mirror are left alone.
        let milliseconds = Milliseconds.since1970(now)
        let record = SlotRecord(
            id: .optedOut, app: app.id, vendor: app.vendor, born: milliseconds, written: milliseconds, optOut: true,
            generation: gathered.resetGeneration)
        let repairs = configuration.usesFiles ? [repair(fileSlot, current: gathered.ownFileSlot, record: record, now: now)] : []
        return Report(
            app: app, identifier: .optedOut, born: nil, optOut: optOut, resolution: nil, sources: gathered.sources,
            rejected: gathered.rejected, repairs: repairs, mirrorStore: gathered.mirrorName,
            mirrorRecord: gathered.mirrorRecord, slot: slot,
            environment: SessionEnvironment.notes(configuration, sources: gathered.sources), generation: gathered.resetGeneration)
    }

}
