// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import FoundationEssentials
import Glibc
import OpenUDIDKit

/// `openudid_opt_out_everywhere`: opts the user out for every app.
@c @implementation
public func openudid_opt_out_everywhere() -> Int32 {
    status { () throws(CallFailure) in
        do throws(OpenUDIDError) { try OpenUDID.User().optOut() } catch { throw CallFailure(error) }
    }
}

/// `openudid_opt_in_everywhere`: undoes `openudid_opt_out_everywhere`.
@c @implementation
public func openudid_opt_in_everywhere() -> Int32 {
    status { () throws(CallFailure) in
        do throws(OpenUDIDError) { try OpenUDID.User().optIn() } catch { throw CallFailure(error) }
    }
}

/// `openudid_is_opted_out_everywhere`: 1 when the user opted out for every app.
@c @implementation
public func openudid_is_opted_out_everywhere() -> Int32 {
    OpenUDID.User().isOptedOut ? 1 : 0
}

/// `openudid_reset_everywhere`: gives every app a new identifier.
///
/// Copies it could not remove are superseded by the new generation, so the
/// call succeeds, and the last error stays as it was.
@c @implementation
public func openudid_reset_everywhere(_ ns: UnsafePointer<CChar>?, _ generation: UnsafeMutablePointer<Int64>?) -> Int32 {
    status { () throws(CallFailure) in
        let namespace = try text(ns, "ns", of: "openudid_reset_everywhere")
        do throws(OpenUDIDError) {
            // Not `generation?.pointee = try …`: with NULL that would not reset at all.
            let reset = try OpenUDID.User(namespace: namespace).reset()
            generation?.pointee = reset.generation
        } catch {
            throw CallFailure(error)
        }
    }
}

/// The flags `openudid_forget_everything` knows.
private let forgetFlags = UInt32(OPENUDID_FORGET_DRY_RUN)

/// `openudid_forget_everything`: removes (or lists) everything the library wrote for the user.
@c @implementation
public func openudid_forget_everything(_ flags: UInt32, _ listing: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    let function = "openudid_forget_everything"
    listing?.pointee = nil
    return status { () throws(CallFailure) in
        guard flags & ~forgetFlags == 0 else {
            throw CallFailure(
                .invalidArgument,
                "\(function): flags 0x\(String(flags, radix: 16)) name an unknown flag; pass 0 or OPENUDID_FORGET_DRY_RUN")
        }
        let dryRun = flags & UInt32(OPENUDID_FORGET_DRY_RUN) != 0
        let erasure: OpenUDID.Erasure
        do throws(OpenUDIDError) { erasure = try OpenUDID.User().forgetEverything(dryRun: dryRun) } catch { throw CallFailure(error) }
        if let listing {
            listing.pointee = try json(ForgetListing(erasure, dryRun: dryRun), of: function)
        }
        if !dryRun, !erasure.problems.isEmpty {
            throw CallFailure(.storeUnavailable, "\(function): left in place: " + erasure.problems.joined(separator: "; "))
        }
    }
}

/// What `openudid_forget_everything` lists, as JSON.
private struct ForgetListing: Encodable {
    let dryRun: Bool
    let files: [String]
    let keyringItems: [String]
    let problems: [String]

    init(_ erasure: OpenUDID.Erasure, dryRun: Bool) {
        self.dryRun = dryRun
        files = erasure.files
        keyringItems = erasure.keyringItems
        problems = erasure.problems
    }
}

/// `value` as JSON in a string for the caller to free with `openudid_free`.
private func json(_ value: some Encodable, of function: String) throws(CallFailure) -> UnsafeMutablePointer<CChar> {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(value) else {
        throw CallFailure(.noMemory, "\(function): the listing could not be encoded as JSON")
    }
    return try cString(copying: data, of: function)
}

/// `openudid_remove_app`: deletes the app's file slot and local cache.
@c @implementation
public func openudid_remove_app(_ app: UnsafePointer<CChar>?) -> Int32 {
    removeApp(app, nil, function: "openudid_remove_app")
}

/// `openudid_remove_app_in`: the same for an app of namespace `ns`.
@c @implementation
public func openudid_remove_app_in(_ app: UnsafePointer<CChar>?, _ ns: UnsafePointer<CChar>?) -> Int32 {
    removeApp(app, ns, function: "openudid_remove_app_in")
}

private func removeApp(_ app: UnsafePointer<CChar>?, _ ns: UnsafePointer<CChar>?, function: String) -> Int32 {
    status { () throws(CallFailure) in
        let app = try text(app, "app", of: function, required: true)!
        let namespace = try text(ns, "ns", of: function)
        do throws(OpenUDIDError) { try OpenUDID.User(namespace: namespace).removeApp(app) } catch { throw CallFailure(error) }
    }
}
