import CInotifyTools
import Dispatch
import Foundation
import Glibc
import Synchronization
import Locking

/// Watches one file and calls `onChange` after it has been written, replaced or removed, so that a
/// service picks up a hand-edited configuration file without being sent a signal.
///
/// It has its own inotify instance, used through plain syscalls: libinotifytools keeps global
/// state that belongs to the one running ``FolderWatcher``. One thread blocks in `poll()` on that
/// descriptor and a wake-up pipe, with no timeout while the file's folder exists, so an idle
/// watcher never wakes up. Events are gathered for `quietPeriod`, so an editor that writes a
/// temporary file and renames it over the original causes a single call.
///
/// ```swift
/// let watcher = FileChangeWatcher(path: configPath) { reloadConfiguration() }
/// try watcher.start()
/// ```
public final class FileChangeWatcher: Sendable {
    /// The watched file.
    public let path: String
    private let quietPeriod: Duration
    private let onChange: @Sendable () -> Void
    private let running = Locked<(control: Control, exited: DispatchSemaphore)?>(nil)

    /// While the file's folder is missing (deleted after `start()`), it is looked for this often.
    static let missingFolderRetry = Duration.seconds(5)

    /// Events inside the folder that may change the file's contents.
    private static let fileMask = flag(IN_CLOSE_WRITE) | flag(IN_MOVED_TO) | flag(IN_MOVED_FROM) | flag(IN_DELETE)
    /// What the folder is watched for: the above, and the folder itself going away.
    private static let watchMask = fileMask | flag(IN_DELETE_SELF) | flag(IN_MOVE_SELF)

    /// `onChange` runs on the watcher's own thread, never twice at once.
    public init(path: String, quietPeriod: Duration = .milliseconds(200), onChange: @escaping @Sendable () -> Void) {
        self.path = path
        self.quietPeriod = quietPeriod
        self.onChange = onChange
    }

    deinit {
        stop()
    }

    private var folder: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private var fileName: String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Starts watching; returns once the watcher's thread runs. Throws when inotify cannot be initialised (too many instances) or the
    /// file's folder cannot be watched (it does not exist, or the watch limit is reached), or
    /// when this watcher was already started.
    public func start() throws(FolderWatchError) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else {
            throw FolderWatchError(code: errno, message: "Cannot create an inotify instance to notice edits of the file. "
                + "Raise fs.inotify.max_user_instances, or send SIGHUP after each edit.", path: path, operation: "inotify_init1")
        }
        let folder = self.folder
        guard inotify_add_watch(descriptor, folder, Self.watchMask) >= 0 else {
            let code = errno
            close(descriptor)
            throw FolderWatchError(code: code, message: "Cannot watch \(folder) for edits of \(fileName)"
                + (code == ENOSPC ? "; the inotify watch limit is reached (sudo sysctl fs.inotify.max_user_watches=524288)" : ""),
                path: folder, operation: "inotify_add_watch")
        }
        let control: Control
        do { control = try Control() } catch {
            close(descriptor)
            throw error
        }
        let exited = DispatchSemaphore(value: 0)
        let claimed = running.withLock { state -> Bool in
            guard state == nil else { return false }
            state = (control, exited)
            return true
        }
        guard claimed else {
            close(descriptor)
            throw FolderWatchError(code: EALREADY, message: "This FileChangeWatcher is already running.", path: path, operation: "start")
        }
        let began = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            qit_set_thread_name("fw-config")
            began.signal()
            loop(descriptor: descriptor, control: control)
            close(descriptor)
            exited.signal()
        }
        thread.name = "FileChangeWatcher"
        thread.stackSize = 1 << 18
        thread.start()
        began.wait() // returns with the thread running (and named)
    }

    /// Stops the thread and waits for it (at most a second). Safe to call more than once.
    public func stop() {
        guard let (control, exited) = running.withLock({ state in defer { state = nil }; return state }) else { return }
        control.stopRequested.store(true, ordering: .releasing)
        control.wake()
        _ = exited.wait(timeout: .now() + .seconds(1))
    }

    // MARK: - Thread body

    private func loop(descriptor: Int32, control: Control) {
        let name = fileName
        let folder = self.folder
        /// `onChange` is owed at this instant (the quiet period after the last event).
        var due: ContinuousClock.Instant?
        /// The folder is missing: it is looked for again at this instant.
        var retry: ContinuousClock.Instant?
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !control.isStopping {
            var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                               control.wakePipe.pollDescriptor]
            if poll(&descriptors, 2, pollTimeout(until: [due, retry].compactMap { $0 }.min())) < 0 && errno != EINTR { return }
            if control.isStopping { return }
            if descriptors[1].revents != 0 { control.drainWake() }
            if descriptors[0].revents & Int16(POLLIN) != 0 {
                for (mask, eventName) in readEvents(descriptor, into: &buffer) {
                    if mask & (flag(IN_IGNORED) | flag(IN_DELETE_SELF) | flag(IN_MOVE_SELF)) != 0 {
                        // The folder went away (with the file in it): the file is gone too.
                        retry = .now + Self.missingFolderRetry
                        due = .now + quietPeriod
                    } else if eventName == name && mask & Self.fileMask != 0 {
                        due = .now + quietPeriod
                    }
                }
            }
            if let instant = retry, ContinuousClock.now >= instant {
                if inotify_add_watch(descriptor, folder, Self.watchMask) >= 0 {
                    retry = nil
                    due = .now + quietPeriod // it may hold a new file already
                } else {
                    retry = .now + Self.missingFolderRetry
                }
            }
            if let instant = due, ContinuousClock.now >= instant {
                due = nil
                onChange()
            }
        }
    }

    /// Reads every pending event: (mask, name inside the folder).
    private func readEvents(_ descriptor: Int32, into buffer: inout [UInt8]) -> [(UInt32, String)] {
        var events: [(UInt32, String)] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { return events }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                let headerSize = MemoryLayout<inotify_event>.size
                while offset + headerSize <= count {
                    let event = raw.baseAddress!.advanced(by: offset).assumingMemoryBound(to: inotify_event.self)
                    events.append((event.pointee.mask, String(cString: qit_event_name(event))))
                    offset += headerSize + Int(event.pointee.len)
                }
            }
        }
    }
}
