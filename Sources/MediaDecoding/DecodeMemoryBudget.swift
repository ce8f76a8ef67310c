#if canImport(Glibc)
import Glibc
#endif

/// The memory all decoders together may use at once. Each decode reserves what it will need
/// (the file's bytes plus the decoder's working memory, estimated from the header) before it
/// reads anything; a large picture waits until enough is free, so two huge pictures are decoded
/// one after the other instead of together. One budget is shared by every worker of an analyzer.
public final class DecodeMemoryBudget: @unchecked Sendable {
    /// Bytes that may be reserved at once.
    public let capacity: Int
    private var reserved = 0
    private var highWater = 0
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }

    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }

    /// Bytes reserved right now.
    public var inUse: Int { locked { reserved } }
    /// The most ever reserved at once.
    public var peak: Int { locked { highWater } }

    /// Runs `work` once `bytes` (at most the capacity) are reserved, blocking the calling
    /// thread until they are; releases them afterwards, whatever happens.
    public func withReservation<T, E: Error>(_ bytes: Int, _ work: () throws(E) -> T) throws(E) -> T {
        let amount = min(max(0, bytes), capacity)
        pthread_mutex_lock(&mutex)
        while reserved + amount > capacity { pthread_cond_wait(&condition, &mutex) }
        reserved += amount
        highWater = max(highWater, reserved)
        pthread_mutex_unlock(&mutex)
        defer {
            pthread_mutex_lock(&mutex)
            reserved -= amount
            pthread_cond_broadcast(&condition)
            pthread_mutex_unlock(&mutex)
        }
        return try work()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }
}
