import Foundation

/// A fixed number of slots shared among callers in turn: a caller that asks for many slots
/// at once waits behind every other caller's next request, never in front of it.
///
/// ```swift
/// let share = FairShare(slots: 2)
/// let verdict = try await share.run(caller: ":1.42") { await judge(picture) }
/// ```
///
/// Waiting callers are served round-robin (the caller after the one served last goes next),
/// each caller's own requests in the order they came. A task cancelled while it waits leaves
/// the queue at once with a `CancellationError`.
public final class FairShare: @unchecked Sendable {
    /// Work run at once.
    public let slots: Int

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private let lock = NSLock()
    private var busy = 0
    private var queues: [String: [Waiter]] = [:]
    /// Callers with waiters, in turn order: the next slot goes to the first.
    private var order: [String] = []
    private var nextID: UInt64 = 0

    public init(slots: Int) {
        self.slots = max(1, slots)
    }

    /// Runs `work` once a slot is this caller's turn; the slot is free again when it returns.
    public func run<T: Sendable>(caller: String, _ work: @Sendable () async throws -> T) async throws -> T {
        try await acquire(caller)
        defer { release() }
        return try await work()
    }

    /// Work running now, and requests waiting (for tests and status).
    public var load: (running: Int, waiting: Int) {
        lock.withLock { (busy, queues.values.reduce(0) { $0 + $1.count }) }
    }

    private func acquire(_ caller: String) async throws {
        try Task.checkCancellation()
        if takeFreeSlot() { return }
        let id = lock.withLock { () -> UInt64 in
            nextID += 1
            return nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enqueue(caller, Waiter(id: id, continuation: continuation))
            }
        } onCancel: {
            removeWaiter(caller, id)?.continuation.resume(throwing: CancellationError())
        }
    }

    /// A slot at once, when one is free and nobody waits.
    private func takeFreeSlot() -> Bool {
        lock.withLock {
            guard busy < slots && order.isEmpty else { return false }
            busy += 1
            return true
        }
    }

    /// Queues the waiter behind its caller's others, or resumes it at once (a slot came free,
    /// or its task was cancelled before it could wait).
    private func enqueue(_ caller: String, _ waiter: Waiter) {
        enum Outcome { case queued, run, cancelled }
        let outcome = lock.withLock { () -> Outcome in
            if Task.isCancelled { return .cancelled }
            if busy < slots && order.isEmpty {
                busy += 1
                return .run
            }
            if queues[caller] == nil { order.append(caller) }
            queues[caller, default: []].append(waiter)
            return .queued
        }
        switch outcome {
        case .queued: break
        case .run: waiter.continuation.resume()
        case .cancelled: waiter.continuation.resume(throwing: CancellationError())
        }
    }

    private func removeWaiter(_ caller: String, _ id: UInt64) -> Waiter? {
        lock.withLock {
            guard var queue = queues[caller], let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
            let found = queue.remove(at: index)
            if queue.isEmpty {
                queues[caller] = nil
                order.removeAll { $0 == caller }
            } else {
                queues[caller] = queue
            }
            return found
        }
    }

    private func release() {
        lock.lock()
        guard !order.isEmpty else {
            busy -= 1
            lock.unlock()
            return
        }
        // The slot passes straight to the next caller in turn (busy stays the same).
        let caller = order.removeFirst()
        var queue = queues[caller]!
        let waiter = queue.removeFirst()
        if queue.isEmpty { queues[caller] = nil } else {
            queues[caller] = queue
            order.append(caller)
        }
        lock.unlock()
        waiter.continuation.resume()
    }
}
