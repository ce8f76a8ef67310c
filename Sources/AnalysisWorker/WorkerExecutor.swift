import CSystemShims
import Foundation

/// The analysis worker's task executor: a few threads of its own that run the worker's async
/// work (its request loop, each file's task, the continuations of the analysis's thread pools),
/// so that nothing of it waits on libdispatch's global queues.
///
/// Why: libdispatch's thread-pool monitor (its internal workqueue on Linux) wakes every second
/// and, when a global queue has work waiting (a task not yet run: under load, or while its
/// threads are busy), opens `/proc/TID/stat` of each of its threads to count the runnable
/// ones; when that open fails, it crashes the process on purpose (`DISPATCH_CLIENT_CRASH`,
/// "workq: registered worker exited prematurely", a bare `ud2`: SIGILL, no message). The
/// worker's Landlock seal refuses every path but the fonts, so each such tick killed it: the
/// SIGILL on a 120-s video in loaded test runs (reproduced pinned to one busy core; the crash
/// report showed `_dispatch_workq_monitor_pools` in a `default-qos.overcommit` thread). Opening
/// /proc to the worker would show it every process's command line; keeping its work off those
/// queues leaves the monitor nothing to look at.
final class WorkerExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0

    /// Starts `threads` threads named `name-N`.
    init(threads: Int, name: String) {
        for index in 0..<max(1, threads) {
            let threadName = "\(name)-\(index)"
            let thread = Thread { [self] in
                qsys_set_thread_name(threadName)
                drain()
            }
            thread.name = threadName
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Jobs waiting for a thread.
    var waiting: Int {
        condition.lock(); defer { condition.unlock() }
        return jobs.count - head
    }

    /// Runs jobs, forever (the worker's threads end with its process).
    private func drain() {
        while true {
            condition.lock()
            while head == jobs.count { condition.wait() }
            let job = jobs[head]
            head += 1
            if head > 64 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
