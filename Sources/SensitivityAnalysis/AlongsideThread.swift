import Foundation
import Locking
import CSystemShims

/// One piece of work run on a thread of its own while the caller does another, joined with
/// ``wait()``: a plain thread, not Swift's cooperative pool (the caller blocks) nor libdispatch's
/// shared queues.
///
/// Used for a stream frame's two models. Two runnable threads also get twice one thread's share
/// of a busy machine's cores, so the verdict's wall time stays nearer its CPU time under load.
final class AlongsideThread<Value: Sendable, Failure: Error>: Sendable {
    private let outcome = Locked<Result<Value, Failure>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    private init() {}

    /// Starts `work` on a new thread (with the stack the analysis threads have).
    static func start(_ work: @escaping @Sendable () throws(Failure) -> Value) -> AlongsideThread {
        let alongside = AlongsideThread()
        let thread = Thread {
            qsys_set_thread_name("alongside")
            let result = Result { () throws(Failure) in try work() }
            alongside.outcome.withLock { $0 = result }
            alongside.done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        return alongside
    }

    /// Waits for the work to end and returns what it came to.
    func wait() -> Result<Value, Failure> {
        done.wait()
        return outcome.withLock { $0! }
    }
}
