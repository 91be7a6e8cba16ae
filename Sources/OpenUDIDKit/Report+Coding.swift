import FoundationEssentials
import Glibc

extension Report: Codable {
    private enum CodingKeys: String, CodingKey {
        case id, appScoped, app, vendor, optedOut, born, generation, slot, origin, provisional, decidedBy, votes, agreeing, disagreeing,
            ignored, conflicts, replaced, disagreement, sources, rejected, repairs, mirror, environment
    }

    private enum MirrorKeys: String, CodingKey { case store, record, detail }

    private struct DisagreementFields: Codable {
        var local: Identifier
        var consensus: Identifier
    }

    /// A record's wire fields (§3), `generation` only when it is not 0.
    private struct RecordFields: Codable {
        var v: Int
        var id: Identifier
        var app: String
        var vendor: String
        var born: Int64
        var written: Int64
        var optOut: Bool
        var generation: Int64?

        init(_ record: SlotRecord) {
            (v, id, app, vendor, born) = (record.version, record.id, record.app, record.vendor, record.born)
            (written, optOut, generation) = (record.written, record.optOut, record.generation == 0 ? nil : record.generation)
        }

        var record: SlotRecord {
            SlotRecord(
                version: v, id: id, app: app, vendor: vendor, born: born, written: written, optOut: optOut,
                generation: generation ?? 0)
        }
    }

    /// Writes every key of §12, with `null` where a value is absent, so that a
    /// reader finds the same keys in every report.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identifier, forKey: .id)
        try container.encode(appScoped.uuidString.lowercased(), forKey: .appScoped)
        try container.encode(app.id, forKey: .app)
        try container.encode(app.vendor, forKey: .vendor)
        try container.encode(optOut, forKey: .optedOut)
        try container.encode(born, forKey: .born)
        try container.encode(generation, forKey: .generation)
        try container.encode(slot, forKey: .slot)
        try container.encode(origin, forKey: .origin)
        try container.encode(provisional, forKey: .provisional)
        try container.encode(decidedBy, forKey: .decidedBy)
        try container.encode(votes, forKey: .votes)
        try container.encode(agreeing, forKey: .agreeing)
        try container.encode(disagreeing, forKey: .disagreeing)
        try container.encode(ignored, forKey: .ignored)
        try container.encode(conflicts, forKey: .conflicts)
        try container.encode(replaced, forKey: .replaced)
        try container.encode(disagreement.map { DisagreementFields(local: $0.local, consensus: $0.consensus) }, forKey: .disagreement)
        try container.encode(sources, forKey: .sources)
        try container.encode(rejected, forKey: .rejected)
        try container.encode(repairs, forKey: .repairs)
        var mirror = container.nestedContainer(keyedBy: MirrorKeys.self, forKey: .mirror)
        try mirror.encode(mirrorStore?.description, forKey: .store)
        try mirror.encode(mirrorRecord.map(RecordFields.init), forKey: .record)
        try mirror.encode(mirrorDetail, forKey: .detail)
        try container.encode(environment, forKey: .environment)
    }

    /// Reads a report back from its JSON. `appScoped` and `disagreement` follow
    /// from the other keys and are not read; a missing `generation` is 0, a
    /// missing `provisional` false and a missing `environment` empty, as in
    /// reports of versions before them.
    ///
    /// - Throws: `DecodingError` when a key is missing, or a value is not one §12 allows.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let appID = try container.decode(String.self, forKey: .app)
        let vendor = try container.decode(String.self, forKey: .vendor)
        do {
            app = try AppIdentity(appID, vendor: vendor)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .app, in: container, debugDescription: error.description)
        }
        identifier = try container.decode(Identifier.self, forKey: .id)
        optOut = try container.decodeIfPresent(OptOut.self, forKey: .optedOut)
        born = try container.decodeIfPresent(Int64.self, forKey: .born)
        generation = try container.decodeIfPresent(Int64.self, forKey: .generation) ?? 0
        slot = try container.decodeIfPresent(Int.self, forKey: .slot)
        origin = try container.decode(Origin.self, forKey: .origin)
        provisional = try container.decodeIfPresent(Bool.self, forKey: .provisional) ?? false
        decidedBy = try container.decodeIfPresent(Tier.self, forKey: .decidedBy)
        votes = try container.decode([Vote].self, forKey: .votes)
        agreeing = try container.decode([Ballot].self, forKey: .agreeing)
        disagreeing = try container.decode([Ballot].self, forKey: .disagreeing)
        ignored = try container.decode([Ignored].self, forKey: .ignored)
        conflicts = try container.decode([Conflict].self, forKey: .conflicts)
        replaced = try container.decodeIfPresent(Identifier.self, forKey: .replaced)
        sources = try container.decode([SourceStatus].self, forKey: .sources)
        rejected = try container.decode([Rejection].self, forKey: .rejected)
        repairs = try container.decode([Repair].self, forKey: .repairs)
        let mirror = try container.nestedContainer(keyedBy: MirrorKeys.self, forKey: .mirror)
        if let store = try mirror.decodeIfPresent(String.self, forKey: .store) {
            guard let choice = MirrorChoice(name: store) else {
                throw DecodingError.dataCorruptedError(forKey: .store, in: mirror, debugDescription: "unknown mirror store \(store)")
            }
            mirrorStore = choice
        } else {
            mirrorStore = nil
        }
        mirrorRecord = try mirror.decodeIfPresent(RecordFields.self, forKey: .record)?.record
        mirrorDetail = try mirror.decodeIfPresent(String.self, forKey: .detail)
        environment = try container.decodeIfPresent([EnvironmentNote].self, forKey: .environment) ?? []
    }

    /// The JSON text `openudid get --json` prints: keys sorted, indented.
    package func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("{}".utf8)
    }
}
