import CSystemShims
import DequeModule
import Foundation

/// A fixed set of dedicated threads for blocking work (decoding, inference), so that it never
/// occupies Swift's cooperative thread pool. Results come back through continuations.
///
/// The threads hold the job queue, not the pool: when the last reference to the pool goes (or
/// ``shutdown()`` is called) they finish the jobs already queued and end, so a pool rebuilt on
/// every reload leaves no thread behind.
public final class WorkerPool: Sendable {
    private let queue: JobQueue
    public let threadCount: Int

    /// With `lowPriority`, each thread runs at nice 10 and in the idle I/O class, so analysis
    /// yields to whatever the person is doing.
    public init(threads: Int, name: String, lowPriority: Bool = false) {
        threadCount = max(1, threads)
        let queue = JobQueue()
        self.queue = queue
        for index in 0..<threadCount {
            let threadName = "\(name)-\(index)"
            let thread = Thread {
                qsys_set_thread_name(threadName)
                if lowPriority { _ = qsys_lower_thread_priority(10) }
                queue.drain()
            }
            thread.name = threadName
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    deinit { queue.stop() }

    /// Lets the threads end once the jobs already queued are done. Jobs queued after this
    /// still run if a thread is left to take them, else they are never started: call it last.
    public func shutdown() { queue.stop() }

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
    public var pending: Int { queue.pending }

    /// Queues `job` without waiting for it (for callers on their own threads). A `background`
    /// job (a video's frame) starts only when no other job waits: a picture that arrives while
    /// videos are analysed goes ahead of their frames.
    func enqueue(background: Bool = false, _ job: @escaping @Sendable () -> Void) { queue.push(job, background: background) }
}

/// The jobs of one ``WorkerPool`` and the condition its threads wait on.
private final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    /// Jobs in order. A taken job leaves its deque at once, so nothing it captured (a video's
    /// run, its decoders and their open file) outlives the job: a hand-kept array that dropped
    /// taken jobs only once 64 had gathered kept up to 64 finished video runs alive, and the
    /// analysis worker grew with every video it judged (found by the soak, issue 16).
    private var jobs = Deque<@Sendable () -> Void>()
    /// Jobs that wait for `jobs` to be empty.
    private var background = Deque<@Sendable () -> Void>()
    private var stopping = false

    var pending: Int {
        condition.lock(); defer { condition.unlock() }
        return jobs.count + background.count
    }

    func push(_ job: @escaping @Sendable () -> Void, background isBackground: Bool = false) {
        condition.lock()
        if isBackground { background.append(job) } else { jobs.append(job) }
        condition.signal()
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Runs jobs until stopped and empty.
    func drain() {
        while true {
            condition.lock()
            while jobs.isEmpty && background.isEmpty && !stopping { condition.wait() }
            guard let job = jobs.popFirst() ?? background.popFirst() else {
                condition.unlock()
                return
            }
            condition.unlock()
            job()
        }
    }
}
