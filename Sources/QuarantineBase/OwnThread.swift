import Foundation

/// Runs blocking work (a thread's start or stop handshake, a lock that is waited for) on a
/// thread of its own and awaits the result, so that no thread of Swift's cooperative pool ever
/// waits on a semaphore.
package func onOwnThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.name = name
        thread.stackSize = 1 << 18
        thread.start()
    }
}
