// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import FoundationEssentials
import Glibc
import OpenUDIDKit
import Synchronization
import XSelection

/// The process that opened the first handle. Its threads (libdispatch's
/// pool, the Swift runtime's, the library's own) are not in a child made by
/// `fork()`, whose calls would wait for them forever: such a child opens no
/// handle before `exec()`. Atomic, as a lock could be held at the fork.
private let openingProcess = Atomic<Int32>(0)

/// Whether this process is a child, made by `fork()`, of the process that
/// uses the library. Every call that takes a handle asks first, and says so
/// in words that need nothing of the runtime's: a lock a parent's thread held
/// at the fork (the library's, or the Swift runtime's, which describing a
/// value may take) is held for good in the child.
func isForkedChild() -> Bool {
    let opener = openingProcess.load(ordering: .relaxed)
    return opener != 0 && opener != getpid()
}

/// Opens a handle for `openudid_open` and `openudid_open_with`.
private func open(
    _ app: UnsafePointer<CChar>?, _ vendor: UnsafePointer<CChar>?, _ optionsPointer: OpaquePointer?,
    _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String
) -> Int32 {
    out?.pointee = nil
    return status { () throws(CallFailure) in
        let out = try required(out, "out", of: function)
        let (first, opener) = openingProcess.compareExchange(expected: 0, desired: getpid(), ordering: .relaxed)
        guard first || opener == getpid() else {
            throw CallFailure(
                .invalidArgument,
                function
                    + ": this process is a child, made by fork(), of a process that uses the library; call exec() before opening a handle")
        }
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
    // A child of a fork keeps the parent's handles as they are: freeing one
    // would stop a participation whose threads only the parent has.
    if isForkedChild() { return }
    handleRegistry.remove(pointer)?.close()
}
