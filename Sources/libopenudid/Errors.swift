// The exported functions carry the C names that include/openudid.h declares.
// swift-format-ignore-file: AlwaysUseLowerCamelCase

import COpenUDID
import Glibc
import OpenUDIDKit

/// The error codes of openudid.h, with the static text `openudid_strerror` gives.
enum ErrorCode: Int32, CaseIterable {
    case invalidArgument = -1
    case invalidApp = -2
    case invalidNamespace = -3
    case noHome = -4
    case storeUnavailable = -5
    /// `OPENUDID_EDISPLAY`: the display the options name cannot be opened.
    case displayUnavailable = -6
    case bufferTooSmall = -7
    case busy = -8
    case noMemory = -9

    /// The code for a Swift API error; a kind this version does not know is a
    /// store that could not be used, the most general failure the header names.
    init(_ kind: OpenUDIDError.Kind) {
        switch kind {
        case .invalidApp: self = .invalidApp
        case .invalidNamespace: self = .invalidNamespace
        case .noHome: self = .noHome
        case .storeUnavailable: self = .storeUnavailable
        case .invalidOption: self = .invalidArgument
        default: self = .storeUnavailable
        }
    }

    /// What the code means, for `openudid_strerror`: a literal, so it lives as
    /// long as the library and is NUL-terminated.
    var text: StaticString {
        switch self {
        case .invalidArgument: "invalid argument (a NULL pointer, a handle that is not open, or a value out of range)"
        case .invalidApp: "invalid app id or vendor"
        case .invalidNamespace: "invalid namespace"
        case .noHome: "no usable home directory"
        case .storeUnavailable: "a store could not be written"
        case .displayUnavailable: "the X display cannot be opened"
        case .bufferTooSmall: "the buffer is too small"
        case .busy: "the handle already participates, or the process runs a participation for every slot"
        case .noMemory: "out of memory"
        }
    }
}

/// The calling thread's last error message (`openudid_last_error`): a
/// malloc'd copy per thread, freed when the thread ends or the next error
/// replaces it.
enum LastError {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { free($0) }
        return key
    }()

    /// Records `message` for this thread.
    static func set(_ message: String) {
        let copy = strdup(message)
        free(pthread_getspecific(key))
        pthread_setspecific(key, copy)
    }

    /// This thread's message, or nil.
    static var current: UnsafePointer<CChar>? {
        pthread_getspecific(key).map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
    }
}

/// Records `message` as this thread's last error and returns `code` for C.
func fail(_ code: ErrorCode, _ message: String) -> Int32 {
    LastError.set(message)
    return code.rawValue
}

/// Records a Swift API error as this thread's last error and returns its code.
func fail(_ error: OpenUDIDError) -> Int32 {
    fail(ErrorCode(error.kind), error.message)
}

/// The static C string of a literal.
func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// `openudid_strerror`: a static description of `code`.
@c @implementation
public func openudid_strerror(_ code: Int32) -> UnsafePointer<CChar>! {
    if code == 0 { return cString("success") }
    guard let known = ErrorCode(rawValue: code) else { return cString("unknown error") }
    return cString(known.text)
}

/// `openudid_last_error`: what this thread's last failed call went wrong with.
@c @implementation
public func openudid_last_error() -> UnsafePointer<CChar>! {
    LastError.current ?? cString("")
}

/// `openudid_version`: the library's version.
@c @implementation
public func openudid_version() -> UnsafePointer<CChar>! {
    versionString
}

/// The package's version as a C string that lives as long as the process.
/// Written once, at first use, and never again; only read after that.
nonisolated(unsafe) private let versionString: UnsafePointer<CChar> = UnsafePointer(strdup(OPENUDID_VERSION)!)

/// `openudid_free`: frees a string the library returned.
@c @implementation
public func openudid_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}
