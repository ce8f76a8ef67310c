import Foundation

/// Runs blocking work (a wait for a process, a pipe read) on a thread of its own and hands the
/// result back to an async caller, so the wait holds none of Swift's shared threads.
///
/// Swift Testing runs test bodies on the cooperative pool, one thread per core (2 on the CI
/// machine). A synchronous end-to-end test that waited 30 s for an agent held one of the two for
/// those 30 s: two such tests stopped every other test, async ones included, and the suite's wall
/// time was the sum of its blocking tests halved. The end-to-end suites are async and wait
/// through this instead.
public func offPool<T: Sendable>(_ name: String = "test-wait", _ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, Error>) in
        let thread = Thread { done.resume(with: Result { try work() }) }
        thread.name = name
        thread.start()
    }
}

/// ``offPool(_:_:)`` for work that cannot fail.
public func offPool<T: Sendable>(_ name: String = "test-wait", _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        let thread = Thread { done.resume(returning: work()) }
        thread.name = name
        thread.start()
    }
}
