import FoundationEssentials
import Glibc
import XSelection

/// The selection slots of one namespace: their names, and how records are
/// read from them and served in them (docs/PROTOCOL.md, "Slots").
struct SelectionSlots: Sendable {
    /// The target (and type) under which a participant serves its record.
    static let recordTarget = "_OPENUDID_RECORD"
    /// The rejection code of a slot whose answer another client wrote into (§5).
    /// The text targets a participant also serves, and readers accept as record types.
    static let textTypes: Set<String> = ["_OPENUDID_RECORD", "UTF8_STRING", "STRING", "TEXT"]

    let prefix: String
    let count: Int

    init(namespace: String?, count: Int) {
        prefix = namespace.map { "_OPENUDID_\($0)_SLOT_" } ?? "_OPENUDID_SLOT_"
        self.count = count
    }

    func name(_ index: Int) -> SelectionName { SelectionName(prefix + String(index)) }

    /// The selection that serialises generating where no files are kept:
    /// `_OPENUDID_GENERATING` (`_OPENUDID_<NAMESPACE>_GENERATING`).
    var generationLock: SelectionName {
        SelectionName(String(prefix.dropLast("SLOT_".count)) + "GENERATING")
    }

    var names: [SelectionName] { (0..<count).map(name) }

    func index(of name: SelectionName) -> Int? {
        guard name.rawValue.hasPrefix(prefix), let index = Int(name.rawValue.dropFirst(prefix.count)),
            (0..<count).contains(index)
        else { return nil }
        return index
    }

    /// What a participant serves for its record.
    static func payloads(for record: SlotRecord) -> [SelectionPayload] {
        let bytes = Array(record.encoded())
        return [
            SelectionPayload(target: recordTarget, type: recordTarget, bytes: bytes),
            SelectionPayload(target: "UTF8_STRING", type: "UTF8_STRING", bytes: bytes)
        ]
    }

    /// One occupied slot as read.
    struct Reading: Sendable {
        var index: Int
        var holder: SelectionHolder?
        var result: Result<SlotRecord, Rejection>

        /// The ballot this reading casts, when it holds a record.
        var candidate: Candidate? {
            guard case .success(let record) = result else { return nil }
            return Candidate(record, from: .selection(slot: index, client: holder?.client.rawValue ?? 0))
        }
    }

    /// Reads every slot in one pipelined pass; slots whose owner refuses the
    /// record target are asked again for `UTF8_STRING`, which simpler
    /// implementations (a Tk script) may be all they serve.
    ///
    /// With `settled`, the pass ends as soon as it says the readings in hand
    /// (given with the X clients still owing an answer) settle the vote;
    /// the slots not waited for are rejected with the code `not-awaited`.
    func readAll(
        with reader: Passes, deadline: Duration, now: Date,
        settled: (@Sendable (_ readings: [Reading], _ outstanding: Set<UInt32>) -> Bool)? = nil
    ) throws(XSelectionError) -> [Reading] {
        let started = ContinuousClock.now
        var options = SelectionReader.Options(deadline: deadline, maxBytes: SlotRecord.maximumSize)
        // A participant claims its slot again whenever its record changes
        // (docs/PROTOCOL.md §2), so an answer stands until XFixes reports a
        // change of the slot's owner: a pass asks only the slots that changed.
        options.reusesUnchangedValues = true
        if let settled {
            options.settled = { progress in
                settled(
                    readings(from: progress.answered, deadline: deadline, now: now),
                    Set(progress.outstanding.values.map(\.client.rawValue)))
            }
        }
        var outcomes = try reader.read(names, target: Self.recordTarget, options: options)
        let refused = outcomes.filter { $0.value.kind == .refused }.map(\.key)
        let remaining = deadline - (ContinuousClock.now - started)
        if !refused.isEmpty, remaining > .milliseconds(10) {
            var retryOptions = SelectionReader.Options(deadline: remaining, maxBytes: SlotRecord.maximumSize)
            retryOptions.reusesUnchangedValues = true
            let retry = try reader.read(refused, target: "UTF8_STRING", options: retryOptions)
            outcomes.merge(retry) { _, new in new }
        }
        return readings(from: outcomes, deadline: deadline, now: now)
    }

    /// What `outcomes` hold for the vote, in slot order: a record or a rejection per occupied slot.
    func readings(from outcomes: [SelectionName: ReadOutcome], deadline: Duration, now: Date) -> [Reading] {
        var readings: [Reading] = []
        for (name, outcome) in outcomes where outcome.kind != .noOwner {
            guard let index = index(of: name) else { continue }
            let place = "selection \(name)"
            func rejected(_ reason: String, _ code: Rejection.Code, at location: String = place) {
                readings.append(Reading(index: index, holder: outcome.owner, result: .failure(Rejection(location, reason, code: code))))
            }
            guard let value = outcome.value else {
                switch outcome.kind {
                case .refused: rejected("the owner refused to give a record", .refused)
                case .timedOut: rejected("no answer within \(deadline)", .noAnswer)
                case .tooLarge:
                    rejected("a record of \(outcome.bytes ?? 0) bytes, over the \(SlotRecord.maximumSize)-byte cap", .tooLarge)
                case .ownerChanged: rejected("the slot changed owner while it was read, so whose answer it was is not known", .ownerChanged)
                case .notAwaited:
                    rejected("not waited for: the answers in hand settled the vote, which this slot could not change", .notAwaited)
                case .spoiled:
                    rejected(
                        "another client wrote into the owner's answer each time it was asked, so the bytes could be anyone's", .spoiled)
                default: rejected(outcome.reason ?? "the answer could not be read (\(outcome.kind))", .unreadable)
                }
                continue
            }
            let location = "\(place) (\(value.owner))"
            guard value.format == 8, Self.textTypes.contains(value.type) else {
                rejected("served type \(value.type) format \(value.format), not 8-bit text", .wrongType, at: location)
                continue
            }
            do {
                let record = try SlotRecord.parse(Data(value.bytes), now: now)
                readings.append(Reading(index: index, holder: value.owner, result: .success(record)))
            } catch {
                rejected(error.description, Rejection.Code(rawValue: error.token), at: location)
            }
        }
        return readings.sorted { $0.index < $1.index }
    }
}
