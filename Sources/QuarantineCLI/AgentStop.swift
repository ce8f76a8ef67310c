import Foundation
import Locking
import ServiceLifecycle
import UnixSignals

/// A stop of `quarantine agent` (SIGTERM, SIGINT), trapped before anything else of the agent's
/// start, so that a stop at any point ends it with exit status 0.
///
/// The command blocks SIGTERM and SIGINT on its main thread before any other thread starts
/// (``blockStopSignals()``, from `Quarantine.prepareProcess()`): a stop sent while the process is
/// still loading is held by the kernel, never taken as the default action (death by the signal,
/// or nothing at all if ignored). ``trap()`` then reads the stop signals (a dispatch signal
/// source: a signalfd) from the first instant of ``AgentCommand/run()``. A stop that arrives
/// while the agent starts (waiting for a writable file system or a busy database, opening or
/// migrating the database) is remembered and ends the start there, with 0; one that arrives
/// once its service group runs, or even just before, shuts the group down gracefully
/// (``Watcher``, a service of the group, returns when a stop was asked, whenever that was).
final class AgentStop: Sendable {
    private struct State {
        var signal: UnixSignal?
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }

    private let state = Locked(State())

    /// The signal of the stop asked, nil while none was.
    var requested: UnixSignal? { state.withLock { $0.signal } }

    /// Blocks SIGTERM and SIGINT in the calling thread (the main thread, before any other
    /// starts: every thread made afterwards inherits it): until ``trap()`` reads them, a stop
    /// waits in the kernel.
    static func blockStopSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts reading SIGTERM and SIGINT (once this returns, none is missed, one already waiting
    /// included); the first one is the stop asked.
    func trap() async {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        Task { [self] in
            for await signal in signals { request(signal) }
        }
    }

    /// Notes a stop (the first signal counts) and wakes whoever waits for one.
    func request(_ signal: UnixSignal) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.signal == nil { state.signal = signal }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once a stop was asked (at once if one was already), or the task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.signal != nil || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// A service of the agent's group that returns when a stop was asked (the group is then
    /// shut down gracefully: ``ServiceGroupConfiguration/ServiceConfiguration/successTerminationBehavior``),
    /// or when the group shuts down for another reason.
    struct Watcher: Service {
        let stop: AgentStop

        func run() async {
            let stop = self.stop
            await cancelWhenGracefulShutdown { await stop.wait() }
        }
    }
}
