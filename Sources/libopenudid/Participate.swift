// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import OpenUDIDKit

/// `openudid_participate`: takes part in the session until `openudid_close`.
@c @implementation
public func openudid_participate(
    _ pointer: OpaquePointer?,
    _ onChange: (@convention(c) (UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void)?,
    _ context: UnsafeMutableRawPointer?
) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_participate")
        try handle.participate(onChange.map { ChangeListener($0, context: context) })
    }
}

/// `openudid_opt_out`: opts this app out until `openudid_opt_in`.
@c @implementation
public func openudid_opt_out(_ pointer: OpaquePointer?) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_opt_out")
        do throws(OpenUDIDError) { try handle.udid.optOut() } catch { throw CallFailure(error) }
        handle.participation?.refresh()
    }
}

/// `openudid_opt_in`: undoes `openudid_opt_out`.
@c @implementation
public func openudid_opt_in(_ pointer: OpaquePointer?) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_opt_in")
        do throws(OpenUDIDError) { try handle.udid.optIn() } catch { throw CallFailure(error) }
        handle.participation?.refresh()
    }
}

/// `openudid_grant_consent`: records the user's consent for this app.
@c @implementation
public func openudid_grant_consent(_ pointer: OpaquePointer?) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_grant_consent")
        do throws(OpenUDIDError) { try handle.udid.grantConsent() } catch { throw CallFailure(error) }
        handle.participation?.refresh()
    }
}

/// `openudid_withdraw_consent`: withdraws it and erases the app's copies.
@c @implementation
public func openudid_withdraw_consent(_ pointer: OpaquePointer?) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_withdraw_consent")
        do throws(OpenUDIDError) { try handle.udid.withdrawConsent() } catch { throw CallFailure(error) }
        handle.participation?.refresh()
    }
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
