// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import FoundationEssentials
import Glibc
import OpenUDIDKit
import XSelection

/// Opens a handle for `openudid_open` and `openudid_open_with`.
private func open(
    _ app: UnsafePointer<CChar>?, _ vendor: UnsafePointer<CChar>?, _ optionsPointer: OpaquePointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String
) -> Int32 {
    out?.pointee = nil
    return status { () throws(CallFailure) in
        let out = try required(out, "out", of: function)
        let app = try text(app, "app", of: function, required: true)!
        let vendor = try text(vendor, "vendor", of: function)
        var configuration = OpenUDID.Configuration()
        if optionsPointer != nil {
            configuration = try options(optionsPointer, of: function).configuration.withLock { $0 }
            // The environment as it is now, as for a handle opened without options.
            configuration.environment = ProcessInfo.processInfo.environment
        }
        let udid: OpenUDID
        do throws(OpenUDIDError) {
            udid = try OpenUDID(app: app, vendor: vendor, configuration: configuration)
        } catch {
            throw CallFailure(error)
        }
        // A display the app named must be there, as `openudid --display` says
        // at once; $DISPLAY may come and go, and the app works from its files meanwhile.
        if let display = configuration.display, configuration.usesSelections {
            do throws(XSelectionError) {
                try SelectionReader(display: display).close()
            } catch {
                throw CallFailure(.displayUnavailable, "\(function): \(error.message)")
            }
        }
        out.pointee = handleRegistry.register(Handle(udid))
    }
}

/// `openudid_open`: a handle for `app` with the default options.
@c @implementation
public func openudid_open(
    _ app: UnsafePointer<CChar>?, _ vendor: UnsafePointer<CChar>?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    open(app, vendor, nil, out, function: "openudid_open")
}

/// `openudid_open_with`: a handle for `app` with `options`.
@c @implementation
public func openudid_open_with(
    _ app: UnsafePointer<CChar>?, _ vendor: UnsafePointer<CChar>?, _ options: OpaquePointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    open(app, vendor, options, out, function: "openudid_open_with")
}

/// `openudid_close`: ends the participation and frees the handle; NULL, closed and unknown handles are ignored.
@c @implementation
public func openudid_close(_ pointer: OpaquePointer?) {
    handleRegistry.remove(pointer)?.close()
}
