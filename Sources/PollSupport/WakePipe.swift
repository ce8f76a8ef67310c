#if canImport(Glibc)
import Glibc
#endif

/// The pipe that wakes a thread sleeping in `poll()`: the thread polls ``readDescriptor`` next
/// to the descriptor it waits on; another thread calls ``wake()``. Both ends are non-blocking
/// and close-on-exec, and are closed when the last reference goes (after the thread has ended).
///
/// One type for every such thread (the inotify reader, the configuration-file watcher, the
/// D-Bus reader), so each of them only says what it waits for.
public final class WakePipe: Sendable {
    /// Polled (for `POLLIN`) by the sleeping thread.
    public let readDescriptor: Int32
    private let writeDescriptor: Int32

    /// Throws the errno when no pipe can be made (too many open files, usually).
    public init() throws(WakePipeError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw WakePipeError(code: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, fcntl(end, F_GETFD) | FD_CLOEXEC)
        }
        readDescriptor = ends[0]
        writeDescriptor = ends[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    /// Wakes the thread out of `poll()`. A full pipe already means "wake up".
    public func wake() {
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
    }

    /// Empties the pipe (on the woken thread), so the next `poll()` sleeps again.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readDescriptor, &buffer, buffer.count) > 0 {}
    }

    /// A `pollfd` for ``readDescriptor``.
    public var pollDescriptor: pollfd { pollfd(fd: readDescriptor, events: Int16(POLLIN), revents: 0) }
}

/// A wake-up pipe could not be made; `code` is the errno.
public struct WakePipeError: Error, Sendable {
    public var code: Int32
}
