// libFuzzer entry for the record parser (SlotRecord.parse), which reads bytes
// any process of the session may have written. Built by scripts/fuzz together
// with the model sources it needs.
import Foundation

/// A fixed clock, so a run is reproducible: 2025-06-15.
private let now = Date(timeIntervalSince1970: 1_750_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecordParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Data(bytes: data!, count: size) : Data()
    // The fast path for canonical records must agree with the general parser on every input.
    let fast = Result { () throws(RecordError) in try SlotRecord.parse(bytes, now: now) }
    let general = Result { () throws(RecordError) in try SlotRecord.parseGenerally(bytes, now: now) }
    precondition(fast == general, "the fast path and the general parser disagree")
    guard case .success(let record) = fast else { return 0 }
    // What the parser accepts must be a record it writes and reads back the same.
    precondition(record.id.hex.count == 40, "accepted an identifier that is not 40 hex digits")
    precondition(record.optOut == record.id.isOptedOut, "accepted an opt-out flag that disagrees with the id")
    let encoded = record.encoded()
    precondition(encoded.count <= SlotRecord.maximumSize, "accepted a record that encodes over the cap")
    guard let again = try? SlotRecord.parse(encoded, now: now) else {
        preconditionFailure("an accepted record does not parse after encoding: \(String(decoding: encoded, as: UTF8.self))")
    }
    precondition(again == record, "an accepted record changed in a round trip")
    return 0
}
