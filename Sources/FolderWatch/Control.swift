import Glibc
import PollSupport
import Synchronization
import Locking

/// What other threads ask of the inotify thread.
enum Command: Sendable {
    case setRoots([WatchRoot])
    case rescan
    case retryWhenReadable(String)
}

/// The state shared between a `FolderWatcher` (any thread) and its inotify thread.
///
/// Other threads never call libinotifytools: they queue a command and wake the inotify thread,
/// which polls the ``WakePipe`` next to the inotify descriptor.
final class Control: Sendable {
    let stopRequested = Atomic<Bool>(false)
    let watchedDirectories = Atomic<Int>(0)
    private let commands = Locked<[Command]>([])
    /// Polled by the inotify thread next to the inotify descriptor.
    let wakePipe: WakePipe

    init() throws(FolderWatchError) {
        do { wakePipe = try WakePipe() } catch {
            throw FolderWatchError(code: error.code, message: "Cannot create the pipe used to wake the watcher thread. "
                + "The process may have too many open files; raise its limit (ulimit -n).", operation: "pipe")
        }
    }

    /// Wakes the inotify thread out of poll().
    func wake() { wakePipe.wake() }

    /// Empties the pipe (inotify thread).
    func drainWake() { wakePipe.drain() }

    func enqueue(_ command: Command) {
        commands.withLock { $0.append(command) }
        wake()
    }

    func takeCommands() -> [Command] {
        commands.withLock { queue in
            let taken = queue
            queue.removeAll()
            return taken
        }
    }

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }
}

/// `poll()`'s timeout for waking at `instant`: -1 (wait without one) for nil, 0 once it has
/// passed, else the milliseconds left, rounded up so that the wake is never early.
func pollTimeout(until instant: ContinuousClock.Instant?) -> Int32 {
    guard let instant else { return -1 }
    let remaining = instant - ContinuousClock.now
    if remaining <= .zero { return 0 }
    return Int32(clamping: (remaining.nanoseconds + 999_999) / 1_000_000)
}

/// libinotifytools has one global instance per process: at most one watcher may use it at a time.
let inotifyToolsInUse = Atomic<Bool>(false)
