import Foundation

/// A fixed number of slots shared among callers in turn: a caller that asks for many slots
/// at once waits behind every other caller's next request, never in front of it.
///
/// ```swift
/// let share = FairShare(slots: 2)
/// let verdict = try await share.run(caller: ":1.42") { await judge(picture) }
/// ```
///
/// A slot that comes free goes to the waiting caller with the fewest slots in use (among equals,
/// another caller before the one whose work just ended, then the one waiting longest), each
/// caller's own requests in the order they came. A task cancelled while it waits leaves
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
    /// Slots in use, by caller.
    private var running: [String: Int] = [:]
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
        defer { release(caller) }
        return try await work()
    }

    /// Work running now, and requests waiting (for tests and status).
    public var load: (running: Int, waiting: Int) {
        lock.withLock { (busy, queues.values.reduce(0) { $0 + $1.count }) }
    }

    private func acquire(_ caller: String) async throws {
        try Task.checkCancellation()
        if takeFreeSlot(caller) { return }
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
    private func takeFreeSlot(_ caller: String) -> Bool {
        lock.withLock {
            guard busy < slots && order.isEmpty else { return false }
            busy += 1
            running[caller, default: 0] += 1
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
                running[caller, default: 0] += 1
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

    private func release(_ caller: String) {
        let next = lock.withLock { () -> Waiter? in
            running[caller, default: 1] -= 1
            if running[caller] == 0 { running[caller] = nil }
            // The waiting caller with the fewest slots in use; among equals another caller before
            // the one whose work just ended, then the first in line.
            func key(_ i: Int) -> (Int, Int, Int) { (running[order[i]] ?? 0, order[i] == caller ? 1 : 0, i) }
            guard let index = order.indices.min(by: { key($0) < key($1) }) else {
                busy -= 1
                return nil
            }
            // The slot passes straight to it (busy stays the same).
            let chosen = order.remove(at: index)
            var queue = queues[chosen]!
            let waiter = queue.removeFirst()
            if queue.isEmpty { queues[chosen] = nil } else {
                queues[chosen] = queue
                order.append(chosen)
            }
            running[chosen, default: 0] += 1
            return waiter
        }
        next?.continuation.resume()
    }
}
