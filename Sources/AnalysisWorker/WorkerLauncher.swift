import Foundation
import Locking

/// The one thread every analysis worker is started from. A worker dies when the thread that
/// started it ends (`PR_SET_PDEATHSIG` is tied to that thread, not to the process), so workers
/// are never started from a thread that ends sooner than the analysis (the thread that loads the
/// models, a task's thread): this one lives until the ``SandboxedAnalysis`` that owns it goes.
final class WorkerLauncher: Sendable {
    private final class Jobs: Sendable {
        let queue = Locked<(jobs: [@Sendable () -> Void], stopped: Bool)>(([], false))
        let ready = DispatchSemaphore(value: 0)
    }
    private let jobs = Jobs()

    init(name: String) {
        let jobs = self.jobs
        let thread = Thread {
            while true {
                jobs.ready.wait()
                let (job, stopped) = jobs.queue.withLock { q -> ((@Sendable () -> Void)?, Bool) in
                    (q.jobs.isEmpty ? nil : q.jobs.removeFirst(), q.stopped)
                }
                if let job { job() } else if stopped { return }
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { stop() }

    /// Ends the thread once the jobs queued are done (its workers then die with it).
    func stop() {
        jobs.queue.withLock { $0.stopped = true }
        jobs.ready.signal()
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        jobs.queue.withLock { $0.jobs.append(job) }
        jobs.ready.signal()
    }

    /// Runs `work` on the launcher's thread, waiting for it (callers on their own threads).
    func runWaiting<T: Sendable>(_ work: @escaping @Sendable () throws(SandboxedAnalysis.Problem) -> T) throws(SandboxedAnalysis.Problem) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<T, SandboxedAnalysis.Problem>?>(nil)
        enqueue {
            let outcome = Result { () throws(SandboxedAnalysis.Problem) in try work() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Runs `work` on the launcher's thread.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws(SandboxedAnalysis.Problem) -> T) async throws(SandboxedAnalysis.Problem) -> T {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, SandboxedAnalysis.Problem>, Never>) in
            enqueue { continuation.resume(returning: Result { () throws(SandboxedAnalysis.Problem) in try work() }) }
        }
        return try outcome.get()
    }
}
