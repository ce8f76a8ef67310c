import CSystemShims
import Foundation

/// A fixed set of dedicated threads for blocking work (decoding, inference), so that it never
/// occupies Swift's cooperative thread pool. Results come back through continuations.
public final class WorkerPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var stopping = false
    public let threadCount: Int

    /// With `lowPriority`, each thread runs at nice 10 and in the idle I/O class, so analysis
    /// yields to whatever the person is doing.
    public init(threads: Int, name: String, lowPriority: Bool = false) {
        threadCount = max(1, threads)
        for index in 0..<threadCount {
            let threadName = "\(name)-\(index)"
            let thread = Thread { [unowned self] in
                qsys_set_thread_name(threadName)
                if lowPriority { _ = qsys_lower_thread_priority(10) }
                self.loop()
            }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    deinit {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Runs `work` on one of the pool's threads and returns its result.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            enqueue {
                do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    /// Jobs waiting for a thread.
    public var pending: Int {
        condition.lock(); defer { condition.unlock() }
        return jobs.count - head
    }

    /// Queues `job` without waiting for it (for callers on their own threads).
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while head == jobs.count && !stopping { condition.wait() }
            if head == jobs.count && stopping { condition.unlock(); return }
            let job = jobs[head]
            head += 1
            if head > 64 && head * 2 > jobs.count { jobs.removeFirst(head); head = 0 }
            condition.unlock()
            job()
        }
    }
}
