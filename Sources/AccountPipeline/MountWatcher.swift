import Foundation
import Locking
import PollSupport

/// Tells when this process's mount table changes (a removable medium mounted or unmounted), on
/// a thread of its own: the kernel marks `/proc/self/mountinfo` with `POLLPRI` at every mount,
/// unmount or move in the namespace. Where that file cannot be opened, it looks every
/// ``fallbackInterval`` instead. A change is reported once per change (coalesced), never for a
/// table that stayed the same.
public final class MountWatcher: Sendable {
    /// How often the table is read when it cannot be polled.
    public static let fallbackInterval = Duration.seconds(2)

    let path: String
    let initial: MountTable?
    let onChange: @Sendable (MountTable) -> Void
    let wake: WakePipe
    let running = Locked<(thread: Thread?, stopping: Bool, done: Bool)>((nil, false, false))
    let finished = DispatchSemaphore(value: 0)

    /// `onChange` runs on the watcher's thread with the table as it is after the change.
    /// `initial` is the table the caller acted on before starting the watcher: a change between
    /// that read and the watcher's first look is reported too (without it, that first look is
    /// the starting point, and a mount made meanwhile is not reported).
    public init(path: String = "/proc/self/mountinfo", initial: MountTable? = nil, onChange: @escaping @Sendable (MountTable) -> Void) throws {
        self.path = path
        self.initial = initial
        self.onChange = onChange
        wake = try WakePipe()
    }

    /// Starts the thread (once).
    public func start() {
        let thread = Thread { [self] in
            body()
            running.withLock { $0.done = true }
            finished.signal()
        }
        thread.name = "mount-watch"
        thread.stackSize = 1 << 18
        let started = running.withLock { state -> Bool in
            guard state.thread == nil else { return false }
            state.thread = thread
            return true
        }
        if started { thread.start() }
    }

    /// Stops the thread and waits for it (call off Swift's cooperative threads).
    public func stop() {
        let wait = running.withLock { state -> Bool in
            state.stopping = true
            return state.thread != nil && !state.done
        }
        wake.wake()
        if wait { finished.wait() }
    }

    var isStopping: Bool { running.withLock { $0.stopping } }

    func body() {
        // Opened before the first read: a mount after the open marks this descriptor, and one
        // before it is in the first read (read first, a mount in between went unnoticed).
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        defer { if fd >= 0 { close(fd) } }
        var last = MountTable.current(path: path)
        if let initial, let now = last, now != initial { onChange(now) }
        let fallback = Int32(Self.fallbackInterval.components.seconds * 1000)
        while !isStopping {
            var fds = [wake.pollDescriptor]
            if fd >= 0 { fds.append(pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), fd >= 0 ? -1 : fallback)
            if ready < 0 && errno != EINTR { usleep(200_000) }
            if isStopping { return }
            if fds[0].revents != 0 { wake.drain() }
            if fd >= 0 {
                guard fds.count > 1, fds[1].revents != 0 else { continue }
                // The mark is cleared by reading the file from its start (a seek is enough).
                lseek(fd, 0, SEEK_SET)
                var scratch = [UInt8](repeating: 0, count: 4096)
                while read(fd, &scratch, scratch.count) > 0 {}
                lseek(fd, 0, SEEK_SET)
            }
            let now = MountTable.current(path: path)
            if let now, now != last {
                last = now
                onChange(now)
            }
        }
    }
}
