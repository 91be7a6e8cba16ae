import FoundationEssentials
import Glibc
import XSelection

/// Every occupied place where participants keep the identifier: the live
/// selection slots and the file slots. What `openudid slots` prints.
package struct Survey: Sendable {
    /// One occupied slot.
    package struct Entry: Sendable {
        /// `selection` or `file`.
        package let kind: String
        /// The selection slot number, for selection slots.
        package let slot: Int?
        /// The selection owner, for selection slots.
        package let holder: SelectionHolder?
        /// The record, or why it was rejected.
        package let record: Result<SlotRecord, Rejection>
    }

    /// The occupied slots, selection slots first (by number), then file slots (by app).
    package let entries: [Entry]
    /// Sources that could not be read.
    package let unavailable: [SourceStatus]

    /// Looks at every slot of `configuration`'s namespace: the selection slots unless
    /// `usesSelections` is off, the file slots unless `usesFiles` is off. A source turned
    /// off is neither listed nor counted as unavailable.
    package static func take(configuration: OpenUDID.Configuration = .init()) throws(OpenUDIDError) -> Survey {
        let paths: StoragePaths
        do { paths = try StoragePaths(environment: configuration.environment, namespace: configuration.namespace) } catch {
            throw OpenUDIDError(error)
        }
        let slots = SelectionSlots(namespace: configuration.namespace, count: configuration.slotCount)
        var entries: [Entry] = []
        var unavailable: [SourceStatus] = []
        let now = Date()
        if let display = configuration.displayName {
            do throws(XSelectionError) {
                let reader = try SelectionReader(display: display)
                defer { reader.close() }
                let deadline = configuration.readDeadline
                let readings = try reader.beginPasses { passes throws(XSelectionError) in
                    try slots.readAll(with: passes, deadline: deadline, now: now)
                }.wait().get()
                for reading in readings {
                    entries.append(Entry(kind: "selection", slot: reading.index, holder: reading.holder, record: reading.result))
                }
            } catch {
                unavailable.append(.unavailable(.selection, error.message))
            }
        } else if configuration.usesSelections {
            unavailable.append(.unavailable(.selection, "no X display (DISPLAY is unset)"))
        }
        guard configuration.usesFiles else { return Survey(entries: entries, unavailable: unavailable) }
        let store = FileSlotStore(paths: paths)
        do {
            for entry in try store.list().entries {
                let place = (try? store.path(for: entry.app)) ?? entry.app
                switch entry.content {
                case .absent: continue
                case .unavailable(let problem):
                    entries.append(
                        Entry(kind: "file", slot: nil, holder: nil, record: .failure(Rejection(place, problem.message, code: problem.code)))
                    )
                case .found(let bytes):
                    do {
                        entries.append(Entry(kind: "file", slot: nil, holder: nil, record: .success(try SlotRecord.parse(bytes, now: now))))
                    } catch {
                        entries.append(
                            Entry(
                                kind: "file", slot: nil, holder: nil,
                                record: .failure(Rejection(place, error.description, code: error.token))))
                    }
                }
            }
        } catch {
            unavailable.append(.unavailable(.fileSlot, error.message))
        }
        return Survey(entries: entries, unavailable: unavailable)
    }
}
