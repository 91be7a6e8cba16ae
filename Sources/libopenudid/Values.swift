// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import Glibc
import OpenUDIDKit

/// Copies `text` and its NUL into `out`, a buffer of `size` bytes.
private func copy(_ text: String, into out: UnsafeMutablePointer<CChar>?, size: Int, of function: String) throws(CallFailure) {
    let out = try required(out, "out", of: function)
    let bytes = Array(text.utf8CString)
    guard size >= bytes.count else {
        throw CallFailure(
            .bufferTooSmall,
            "\(function): the buffer holds \(size) bytes; the answer needs \(bytes.count) "
                + "(\(bytes.count - 1) characters and a NUL)")
    }
    bytes.withUnsafeBufferPointer { out.update(from: $0.baseAddress!, count: $0.count) }
}

/// Fails when a buffer of `size` bytes cannot hold an answer of `needed` bytes, NUL included.
private func checkRoom(_ size: Int, for needed: Int, of function: String) throws(CallFailure) {
    guard size >= needed else {
        throw CallFailure(
            .bufferTooSmall,
            "\(function): the buffer holds \(size) bytes; the answer needs \(needed) (\(needed - 1) characters and a NUL)")
    }
}

/// `openudid_value`: the shared identifier, 40 hex digits.
@c @implementation
public func openudid_value(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?) -> Int32 {
    value(pointer, out, Int(OPENUDID_VALUE_SIZE), function: "openudid_value")
}

/// `openudid_value_n`: the shared identifier into a buffer of `size` bytes.
@c @implementation
public func openudid_value_n(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    value(pointer, out, size, function: "openudid_value_n")
}

private func value(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?, _ size: Int, function: String) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: function)
        _ = try required(out, "out", of: function)
        // Bad input changes nothing: no resolution for an answer that cannot be given.
        try checkRoom(size, for: Int(OPENUDID_VALUE_SIZE), of: function)
        try copy(handle.udid.value().hex, into: out, size: size, of: function)
    }
}

/// `openudid_app_value`: the value derived for this app alone, a UUID.
@c @implementation
public func openudid_app_value(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?) -> Int32 {
    appValue(pointer, out, Int(OPENUDID_APP_VALUE_SIZE), function: "openudid_app_value")
}

/// `openudid_app_value_n`: the app-scoped value into a buffer of `size` bytes.
@c @implementation
public func openudid_app_value_n(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    appValue(pointer, out, size, function: "openudid_app_value_n")
}

private func appValue(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<CChar>?, _ size: Int, function: String) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: function)
        _ = try required(out, "out", of: function)
        try checkRoom(size, for: Int(OPENUDID_APP_VALUE_SIZE), of: function)
        try copy(handle.udid.appScopedValue().uuidString.lowercased(), into: out, size: size, of: function)
    }
}

/// `openudid_refresh`: resolves again now.
@c @implementation
public func openudid_refresh(_ pointer: OpaquePointer?) -> Int32 {
    status { () throws(CallFailure) in
        let handle = try handle(pointer, of: "openudid_refresh")
        if let participation = handle.participation {
            participation.refresh()
        } else {
            _ = handle.udid.resolve(refresh: true)
        }
    }
}

/// `openudid_report_json`: the latest resolution as JSON, for the caller to free.
@c @implementation
public func openudid_report_json(_ pointer: OpaquePointer?) -> UnsafeMutablePointer<CChar>! {
    let found: Handle
    do {
        found = try handle(pointer, of: "openudid_report_json")
    } catch {
        _ = fail(error.code, error.message)
        return nil
    }
    do {
        return try cString(copying: found.udid.resolve().json(), of: "openudid_report_json")
    } catch {
        _ = fail(error.code, error.message)
        return nil
    }
}
