/// A record offered to the vote, with where it was found.
///
/// Where a record comes from decides whose ballot it is: every X client, app
/// and vendor mirror gets at most one, however many records it publishes.
package struct Candidate: Sendable, Hashable, CustomStringConvertible {
    /// Where a record was found.
    package enum Source: Sendable, Hashable, CustomStringConvertible {
        /// A `_OPENUDID_SLOT_<slot>` selection owned by the X client (connection)
        /// `client`: the client part of the owner window's id, the bits above
        /// the resource mask, which names the connection that owns it now.
        case selection(slot: Int, client: UInt32)
        /// The fallback file slot of `app`.
        case fileSlot(app: String)
        /// The resolving app's own local cache.
        case localCache
        /// The mirror of `vendor` in the store named `store` (`"secret-service"`, `"file"`).
        case vendorMirror(store: String, vendor: String)
        /// The value the resolving app holds in memory from its last resolution.
        case held

        /// Where the record was found, for reports: `slot 3 (X client 0x1a00000)`.
        package var description: String {
            switch self {
            case .selection(let slot, let client):
                return "slot \(slot) (X client 0x\(String(client, radix: 16)))"
            case .fileSlot(let app):
                return "file slot of \(quoted(app))"
            case .localCache:
                return "local cache"
            case .vendorMirror(let store, let vendor):
                return "\(store) mirror of \(quoted(vendor))"
            case .held:
                return "value held in memory"
            }
        }

        /// The kind of place, as reports name it: `selection`, `file-slot`,
        /// `local-cache`, `mirror` or `held`.
        package var kind: String {
            switch self {
            case .selection: "selection"
            case .fileSlot: "file-slot"
            case .localCache: "local-cache"
            case .vendorMirror: "mirror"
            case .held: "held"
            }
        }
    }

    /// The record, already validated by `SlotRecord.parse(_:now:)`.
    package var record: SlotRecord
    /// Where it was found.
    package var source: Source

    /// Pairs a record with where it was found.
    ///
    /// - Parameters:
    ///   - record: A validated record.
    ///   - source: Where it was found.
    package init(_ record: SlotRecord, from source: Source) {
        self.record = record
        self.source = source
    }

    /// The identifier, where it was found and which app wrote it, for reports.
    package var description: String {
        "\(record.id) from \(source), written by \(quoted(record.app))"
    }
}

extension Candidate {
    /// A total order on candidates that depends on nothing but their content:
    /// by source (`sourceKey()`), then by encoded record.
    ///
    /// Every tie the voting rule cannot break on meaning is broken by this
    /// order, which is what makes the outcome independent of the order
    /// candidates were gathered in. Strings compare by UTF-8 bytes, since
    /// Swift's `<` treats canonically equivalent strings as equal. Encoding a
    /// record costs more than the rest of the comparison, and two candidates
    /// rarely share a source, so records are encoded only then.
    ///
    /// - Parameter sourceKeys: This candidate's and `other`'s `sourceKey()`, computed once by the caller.
    func precedes(_ other: Candidate, sourceKeys: ([UInt8], [UInt8])) -> Bool {
        if sourceKeys.0 != sourceKeys.1 { return sourceKeys.0.lexicographicallyPrecedes(sourceKeys.1) }
        return record.encoded().lexicographicallyPrecedes(other.record.encoded())
    }

    /// The source's part of the order: a tag, then fixed-width numbers or
    /// length-prefixed strings, so no source's key is a prefix of another's.
    func sourceKey() -> [UInt8] {
        var key: [UInt8] = []
        func append(_ value: UInt64) {
            for shift in stride(from: 56, through: 0, by: -8) { key.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        func append(_ text: String) {
            // Length first, so that one string being a prefix of another cannot blur field boundaries.
            append(UInt64(text.utf8.count))
            key.append(contentsOf: text.utf8)
        }
        switch source {
        case .selection(let slot, let client):
            key.append(0)
            // Flipping the sign bit makes the unsigned byte order match signed order.
            append(UInt64(bitPattern: Int64(slot)) ^ (1 << 63))
            append(UInt64(client))
        case .fileSlot(let app):
            key.append(1)
            append(app)
        case .localCache:
            key.append(2)
        case .vendorMirror(let store, let vendor):
            key.append(3)
            append(store)
            append(vendor)
        case .held:
            key.append(4)
        }
        return key
    }
}
