// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import OpenUDIDKit

/// `openudid_opt_out_everywhere`: opts the user out for every app.
@c @implementation
public func openudid_opt_out_everywhere() -> Int32 {
    status { () throws(CallFailure) in
        do throws(OpenUDIDError) { try OpenUDID.optOutEverywhere() } catch { throw CallFailure(error) }
    }
}

/// `openudid_opt_in_everywhere`: undoes `openudid_opt_out_everywhere`.
@c @implementation
public func openudid_opt_in_everywhere() -> Int32 {
    status { () throws(CallFailure) in
        do throws(OpenUDIDError) { try OpenUDID.optInEverywhere() } catch { throw CallFailure(error) }
    }
}

/// `openudid_is_opted_out_everywhere`: 1 when the user opted out for every app.
@c @implementation
public func openudid_is_opted_out_everywhere() -> Int32 {
    OpenUDID.isOptedOutEverywhere() ? 1 : 0
}

/// `openudid_reset_everywhere`: gives every app a new identifier.
@c @implementation
public func openudid_reset_everywhere(_ ns: UnsafePointer<CChar>?, _ generation: UnsafeMutablePointer<CLongLong>?) -> Int32 {
    var left: [String] = []
    let code = status { () throws(CallFailure) in
        let namespace = try text(ns, "ns", of: "openudid_reset_everywhere")
        do throws(OpenUDIDError) {
            let reset = try OpenUDID.resetEverywhere(namespace: namespace)
            generation?.pointee = CLongLong(reset.generation)
            left = reset.problems
        } catch {
            throw CallFailure(error)
        }
    }
    if code == 0, !left.isEmpty { LastError.set("openudid_reset_everywhere: left in place: " + left.joined(separator: "; ")) }
    return code
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
        do throws(OpenUDIDError) { try OpenUDID.removeApp(app, namespace: namespace) } catch { throw CallFailure(error) }
    }
}
