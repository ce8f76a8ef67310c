#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a lock, used as `Synchronization.Mutex` is (`withLock { value in ... }`),
/// on a `pthread_mutex_t`.
///
/// Why not `Mutex`: on Linux it locks with raw futex calls that ThreadSanitizer does not
/// intercept, so `make test-tsan` reported every access made under it as a race (two threads in
/// `withLock` on the same state). A pthread mutex is what TSan understands, and costs the same
/// here (an uncontended lock is one atomic operation either way).
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; the lock is released however `body` ends.
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
