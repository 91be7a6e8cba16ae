import Synchronization

/// The last number a registry handed out, shared by every registry, so that
/// no two objects the library ever hands to C, of any type, get one number.
private let lastNumber = Atomic<UInt>(0)

/// The objects handed to C as opaque pointers, kept alive here until C gives
/// them back.
///
/// What C gets is not the object's address but a number handed out once and
/// never again (a 64-bit counter does not wrap): the allocator may put a new
/// object where a freed one was, but it cannot give it the freed one's number.
/// A pointer from C is therefore looked up, never dereferenced: one that was
/// never handed out, or whose object was already given back, is simply not
/// found, however many objects were registered since, so a stale or forged
/// pointer is an error code instead of a crash or a call on someone else's
/// handle. The registry owns the objects, and a lookup returns a strong
/// reference, so a call that races with `openudid_close` on another thread
/// still works on a live object.
final class Registry<Object: AnyObject & Sendable>: Sendable {
    private let objects = Mutex<[UInt: Object]>([:])

    /// Registers `object` and returns the pointer C gets for it.
    func register(_ object: Object) -> OpaquePointer {
        let number = lastNumber.add(1, ordering: .relaxed).newValue
        objects.withLock { $0[number] = object }
        // Never nil: the first number is 1.
        return OpaquePointer(bitPattern: number)!
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
