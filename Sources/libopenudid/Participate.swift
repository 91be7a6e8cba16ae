// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import OpenUDIDKit

/// `openudid_participate`: takes part in the session until `openudid_close`.
@c @implementation
public func openudid_participate(
    _ pointer: OpaquePointer?, _ onChange: openudid_change_func?, _ context: UnsafeMutableRawPointer?
) -> Int32 {
    participate(pointer, onChange, context, nil, inBackground: false, function: "openudid_participate")
}

/// `openudid_participate_async`: the same, returning at once; `on_change` hears the first identifier.
@c @implementation
public func openudid_participate_async(
    _ pointer: OpaquePointer?, _ onChange: openudid_change_func?, _ context: UnsafeMutableRawPointer?
) -> Int32 {
    participate(pointer, onChange, context, nil, inBackground: true, function: "openudid_participate_async")
}

/// `openudid_participate_full`: `openudid_participate` with a destroy function for the context.
@c @implementation
public func openudid_participate_full(
    _ pointer: OpaquePointer?, _ onChange: openudid_change_func?, _ context: UnsafeMutableRawPointer?, _ destroy: openudid_destroy_notify?
) -> Int32 {
    participate(pointer, onChange, context, destroy, inBackground: false, function: "openudid_participate_full")
}

/// `openudid_participate_async_full`: `openudid_participate_async` with a destroy function for the context.
@c @implementation
public func openudid_participate_async_full(
    _ pointer: OpaquePointer?, _ onChange: openudid_change_func?, _ context: UnsafeMutableRawPointer?, _ destroy: openudid_destroy_notify?
) -> Int32 {
    participate(pointer, onChange, context, destroy, inBackground: true, function: "openudid_participate_async_full")
}

/// Starts the participation of the handle `pointer` names for one of the
/// `openudid_participate…` functions; on failure nothing is called, `destroy` included.
private func participate(
    _ pointer: OpaquePointer?, _ onChange: openudid_change_func?, _ context: UnsafeMutableRawPointer?, _ destroy: openudid_destroy_notify?,
    inBackground: Bool, function: String
) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: function)
        let listener = ChangeListener.make(onChange, context: context, destroy: destroy)
        try handle.participate(listener, waitingForFirst: !inBackground, function: function)
    }
}

/// `openudid_opt_out`: opts this app out until `openudid_opt_in`.
@c @implementation
public func openudid_opt_out(_ pointer: OpaquePointer?) -> Int32 {
    changeChoice(pointer, "openudid_opt_out") { udid throws(OpenUDIDError) in try udid.optOut() }
}

/// `openudid_opt_in`: undoes `openudid_opt_out`.
@c @implementation
public func openudid_opt_in(_ pointer: OpaquePointer?) -> Int32 {
    changeChoice(pointer, "openudid_opt_in") { udid throws(OpenUDIDError) in try udid.optIn() }
}

/// `openudid_grant_consent`: records the user's consent for this app.
@c @implementation
public func openudid_grant_consent(_ pointer: OpaquePointer?) -> Int32 {
    changeChoice(pointer, "openudid_grant_consent") { udid throws(OpenUDIDError) in try udid.grantConsent() }
}

/// `openudid_withdraw_consent`: withdraws it and erases the app's copies.
@c @implementation
public func openudid_withdraw_consent(_ pointer: OpaquePointer?) -> Int32 {
    changeChoice(pointer, "openudid_withdraw_consent") { udid throws(OpenUDIDError) in try udid.withdrawConsent() }
}

/// `openudid_has_consent`: 1 when the user's consent is recorded, 0 when not.
@c @implementation
public func openudid_has_consent(_ pointer: OpaquePointer?) -> Int32 {
    do throws(CallFailure) {
        return try handle(pointer, of: "openudid_has_consent").udid.hasConsent ? 1 : 0
    } catch {
        return fail(error.code, error.message)
    }
}

/// Runs `change` on the handle `pointer` names, for the C function `function`,
/// then lets a participating handle publish what changed at once.
private func changeChoice(
    _ pointer: OpaquePointer?, _ function: String, _ change: (OpenUDID) throws(OpenUDIDError) -> Void
) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: function)
        do throws(OpenUDIDError) { try change(handle.udid) } catch { throw CallFailure(error) }
        handle.participation?.refresh()
    }
}
