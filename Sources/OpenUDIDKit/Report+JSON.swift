import Foundation

extension Report {
    /// The report as a JSON object, the format `openudid get --json` prints
    /// (documented in docs/PROTOCOL.md, "Reports").
    public var jsonObject: [String: Any] {
        var object: [String: Any] = [
            "id": identifier.hex,
            "appScoped": appScoped.uuidString.lowercased(),
            "app": app.id,
            "vendor": app.vendor,
            "optedOut": optOut?.rawValue ?? NSNull(),
            "born": born.map { NSNumber(value: $0) } ?? NSNull(),
            "slot": slot.map { NSNumber(value: $0) } ?? NSNull(),
            "sources": sources.map(\.jsonObject),
            "rejected": rejected.map { ["place": $0.place, "reason": $0.reason, "code": $0.code] },
            "repairs": repairs.map(\.jsonObject),
            "mirror": [
                "store": mirrorStore ?? NSNull(),
                "record": mirrorRecord.map(\.jsonObject) ?? NSNull(),
            ] as [String: Any],
        ]
        if let resolution {
            object["origin"] = resolution.origin.name
            object["votes"] = resolution.tally.map { ["id": $0.identifier.hex, "votes": $0.votes, "born": NSNumber(value: $0.born)] as [String: Any] }
            object["agreeing"] = resolution.agreeing.map(\.jsonObject)
            object["disagreeing"] = resolution.disagreeing.map(\.jsonObject)
            object["decidedBy"] = resolution.decidedBy?.token ?? NSNull()
            object["ignored"] = resolution.ignored.map { ignored -> [String: Any] in
                var entry: [String: Any] = ["candidate": ignored.candidate.jsonObject, "reason": ignored.reason.token]
                if let counted = ignored.reason.counted { entry["counted"] = counted.description }
                return entry
            }
            object["conflicts"] = resolution.conflicts.map { ["app": $0.app, "claims": $0.claims.map(\.jsonObject)] as [String: Any] }
            object["replaced"] = resolution.replaced?.hex ?? NSNull()
            object["disagreement"] = resolution.disagreement.map { ["local": $0.local.hex, "consensus": $0.consensus.hex] } ?? NSNull()
        } else {
            object["origin"] = "opted-out"
        }
        return object
    }

    /// The JSON text of `jsonObject`, with sorted keys.
    public func json() -> Data {
        (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.sortedKeys, .prettyPrinted])) ?? Data("{}".utf8)
    }
}

extension Resolution.Origin {
    /// The name used in reports: `consensus`, `generated`, `kept-local`.
    public var name: String {
        switch self {
        case .consensus: "consensus"
        case .generated: "generated"
        case .keptLocal: "kept-local"
        }
    }
}

extension Resolution.Tier {
    /// The name used in reports: `durable` or `live`.
    public var token: String {
        switch self {
        case .durable: "durable"
        case .live: "live"
        }
    }
}

extension Resolution.Ignored.Reason {
    /// The name used in reports: `same-client`, `same-app`, `same-vendor`,
    /// `opted-out`, `misplaced` or `outranked` (docs/PROTOCOL.md section 12).
    public var token: String {
        switch self {
        case .sameClient: "same-client"
        case .sameApp: "same-app"
        case .sameVendor: "same-vendor"
        case .optedOut: "opted-out"
        case .misplaced: "misplaced"
        case .outranked: "outranked"
        }
    }

    /// The ballot counted instead, where the reason names one.
    public var counted: Candidate.Source? {
        switch self {
        case .sameClient(let source), .sameApp(let source), .sameVendor(let source): source
        case .optedOut, .misplaced, .outranked: nil
        }
    }
}

extension SlotRecord {
    /// The record as a JSON object (the wire fields).
    public var jsonObject: [String: Any] {
        (try? JSONSerialization.jsonObject(with: encoded())) as? [String: Any] ?? [:]
    }
}

extension Candidate {
    var jsonObject: [String: Any] {
        ["source": source.description, "kind": source.kind, "app": record.app, "id": record.id.hex, "born": NSNumber(value: record.born)]
    }
}

extension SourceStatus {
    var jsonObject: [String: Any] {
        switch state {
        case .read(let records): ["name": name, "state": "read", "records": records]
        case .unavailable(let why): ["name": name, "state": "unavailable", "detail": why]
        case .notUsed(let why): ["name": name, "state": "not-used", "detail": why]
        }
    }
}

extension Repair {
    var jsonObject: [String: Any] {
        switch outcome {
        case .written: ["place": place, "outcome": "written"]
        case .unchanged: ["place": place, "outcome": "unchanged"]
        case .skipped(let why): ["place": place, "outcome": "skipped", "detail": why]
        case .failed(let why): ["place": place, "outcome": "failed", "detail": why]
        }
    }
}
