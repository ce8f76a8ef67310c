import Glibc
import Synchronization

/// What other threads ask of the inotify thread.
enum Command: Sendable {
    case setRoots([WatchRoot])
    case rescan
}

/// The state shared between a `FolderWatcher` (any thread) and its inotify thread.
///
/// Other threads never call libinotifytools: they queue a command and write a byte to a pipe
/// whose read end (`wakeDescriptor`) the inotify thread polls next to the inotify descriptor.
final class Control: Sendable {
    let stopRequested = Atomic<Bool>(false)
    let watchedDirectories = Atomic<Int>(0)
    private let commands = Mutex<[Command]>([])
    /// Read end of the wake-up pipe (polled by the inotify thread).
    let wakeDescriptor: Int32
    /// Write end of the wake-up pipe.
    private let wakeWriter: Int32

    /// Both ends are non-blocking and close-on-exec; they are closed when the last reference goes
    /// away, i.e. after the thread has exited.
    init() throws(FolderWatchError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            throw FolderWatchError(code: code, message: "Cannot create the pipe used to wake the watcher thread. "
                + "The process may have too many open files; raise its limit (ulimit -n).", operation: "pipe")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, fcntl(end, F_GETFD) | FD_CLOEXEC)
        }
        wakeDescriptor = ends[0]
        wakeWriter = ends[1]
    }

    deinit {
        close(wakeDescriptor)
        close(wakeWriter)
    }

    /// Wakes the inotify thread out of poll(). A full pipe already means "wake up".
    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    /// Empties the pipe (inotify thread).
    func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeDescriptor, &buffer, buffer.count) > 0 {}
    }

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
