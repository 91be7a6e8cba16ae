import Glibc

/// A mutex with a condition variable, on POSIX threads (FoundationEssentials,
/// which the library links, has no `NSCondition`).
final class Condition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the mutex held.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for `broadcast`; call with the mutex held (inside `withLock`).
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes every waiter; call with the mutex held.
    func broadcast() { pthread_cond_broadcast(condition) }
}
