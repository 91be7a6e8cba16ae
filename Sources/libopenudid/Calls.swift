import FoundationEssentials
import Glibc
import OpenUDIDKit

/// Why a call from C failed: the code it returns and the message
/// `openudid_last_error` gives.
struct CallFailure: Error {
    let code: ErrorCode
    let message: String

    init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: OpenUDIDError) {
        self.init(ErrorCode(error.kind), error.message)
    }
}

/// Runs the body of a C function that returns a status: 0 when `body`
/// returns, the failure's code (with its message recorded) when it throws.
func status(_ body: () throws(CallFailure) -> Void) -> Int32 {
    do {
        try body()
        return 0
    } catch {
        return fail(error.code, error.message)
    }
}

/// The text of a C string argument; nil for NULL unless `required`.
///
/// - Parameters:
///   - pointer: The argument.
///   - name: The parameter's name in openudid.h, for the message.
///   - function: The C function, for the message.
///   - required: Whether NULL is an error.
func text(
    _ pointer: UnsafePointer<CChar>?, _ name: String, of function: String,
    required: Bool = false
) throws(CallFailure) -> String? {
    guard let pointer else {
        if required { throw CallFailure(.invalidArgument, "\(function): \(name) is NULL; pass a NUL-terminated UTF-8 string") }
        return nil
    }
    guard let text = String(validatingCString: pointer) else {
        throw CallFailure(.invalidArgument, "\(function): \(name) is not valid UTF-8")
    }
    return text
}

/// Checks an output pointer argument.
func required<T>(_ pointer: T?, _ name: String, of function: String) throws(CallFailure) -> T {
    guard let pointer else { throw CallFailure(.invalidArgument, "\(function): \(name) is NULL; pass where to put the result") }
    return pointer
}

/// A malloc'd copy of `bytes` and a NUL, for the caller to free with `openudid_free`.
func cString(copying bytes: some DataProtocol, of function: String) throws(CallFailure) -> UnsafeMutablePointer<CChar> {
    let count = bytes.count
    guard let copy = malloc(count + 1)?.assumingMemoryBound(to: CChar.self) else {
        throw CallFailure(.noMemory, "\(function): could not allocate \(count + 1) bytes for the answer")
    }
    UnsafeMutableRawBufferPointer(start: copy, count: count).copyBytes(from: bytes)
    copy[count] = 0
    return copy
}
