import Synchronization

/// The objects handed to C as opaque pointers, kept alive here until C gives
/// them back.
///
/// A pointer from C is looked up, never dereferenced: one that was never
/// handed out, or whose object was already given back, is simply not found,
/// so a stale or forged pointer is an error code instead of a crash. The
/// registry owns the objects, and a lookup returns a strong reference, so a
/// call that races with `openudid_close` on another thread still works on a
/// live object.
final class Registry<Object: AnyObject & Sendable>: Sendable {
    private let objects = Mutex<[UInt: Object]>([:])

    /// Registers `object` and returns the pointer C gets for it.
    func register(_ object: Object) -> OpaquePointer {
        let pointer = Unmanaged.passUnretained(object).toOpaque()
        objects.withLock { $0[UInt(bitPattern: pointer)] = object }
        return OpaquePointer(pointer)
    }

    /// The object C's `pointer` stands for, if it is registered.
    func object(_ pointer: OpaquePointer?) -> Object? {
        guard let pointer else { return nil }
        let key = UInt(bitPattern: UnsafeRawPointer(pointer))
        return objects.withLock { $0[key] }
    }

    /// Unregisters the object `pointer` stands for and returns it (nil when it was not registered).
    func remove(_ pointer: OpaquePointer?) -> Object? {
        guard let pointer else { return nil }
        let key = UInt(bitPattern: UnsafeRawPointer(pointer))
        return objects.withLock { $0.removeValue(forKey: key) }
    }
}
