import Dispatch
import Foundation
import CInotifyTools
import Glibc
import Synchronization
import Locking

/// Watches folders recursively with inotify and reports files that are ready to be examined.
///
/// One dedicated thread owns libinotifytools (which keeps process-global state) and blocks in
/// `poll()` on the inotify descriptor and a wake-up eventfd; a second thread waits for files to
/// settle. While every root is armed and nothing is settling, neither thread wakes up.
///
/// libinotifytools has a single global instance, so only one `FolderWatcher` can run at a time
/// in a process; `start()` on a second one throws `EBUSY`. A watcher runs once: after `stop()`,
/// create a new one.
///
/// ```swift
/// let watcher = FolderWatcher(roots: [WatchRoot(path: downloads, direction: .incoming)])
/// try watcher.start()
/// for await event in watcher.events { ... }
/// ```
public final class FolderWatcher: Sendable {
    private enum Lifecycle {
        case idle([WatchRoot])
        case running(Running)
        case stopped
    }

    private struct Running {
        var control: Control
        var settler: Settler
        var exited: DispatchSemaphore
    }

    /// Everything the watcher reports. Single consumer; finished by `stop()`.
    public let events: AsyncStream<FolderWatchEvent>
    private let continuation: AsyncStream<FolderWatchEvent>.Continuation
    private let options: FolderWatchOptions
    private let lifecycle: Locked<Lifecycle>

    /// A watcher for `roots` (absent roots are fine: they are armed when they appear).
    /// Nothing happens until `start()`.
    public init(roots: [WatchRoot], options: FolderWatchOptions = .init()) {
        let (stream, continuation) = AsyncStream<FolderWatchEvent>.makeStream(bufferingPolicy: .unbounded)
        events = stream
        self.continuation = continuation
        self.options = options
        lifecycle = Locked(.idle(roots))
        continuation.onTermination = { [weak self] _ in
            // The consumer went away: let the threads end (without waiting for them here).
            self?.requestStop()
        }
    }

    deinit {
        stop()
    }

    /// Initialises inotify on the watcher thread, then (asynchronously, reported on `events`)
    /// arms every root and scans it: `.rootWatched`, its candidates, `.scanFinished(reason: .start)`,
    /// or `.rootMissing` for a root that does not exist yet.
    ///
    /// Returns once inotify is initialised. Throws `FolderWatchError` when it cannot be (for example
    /// `EMFILE`: too many inotify instances), when another watcher is running in this process
    /// (`EBUSY`), or when this watcher was already started (`EALREADY`).
    public func start() throws {
        let roots = try lifecycle.withLock { state throws(FolderWatchError) -> [WatchRoot] in
            guard case .idle(let roots) = state else {
                throw FolderWatchError(code: EALREADY, message: "This FolderWatcher was already started or stopped; "
                    + "create a new one to watch again.", operation: "start")
            }
            return roots
        }
        guard inotifyToolsInUse.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw FolderWatchError(code: EBUSY, message: "Another FolderWatcher is running in this process. "
                + "libinotifytools keeps global state, so only one watcher can run at a time; stop the other one first.",
                operation: "start")
        }
        let control: Control
        do {
            control = try Control()
        } catch {
            inotifyToolsInUse.store(false, ordering: .releasing)
            throw error
        }
        let continuation = self.continuation
        let emit: @Sendable (FolderWatchEvent) -> Void = { continuation.yield($0) }
        let settler = Settler(settleDelay: options.settleDelay, giveUp: options.settleGiveUp, dropUnsettledTemporary: !options.strictSettling, emit: emit)
        settler.start()
        let engine = Engine(options: options, control: control, settler: settler, emit: emit)

        let exited = DispatchSemaphore(value: 0)
        let startedSignal = DispatchSemaphore(value: 0)
        let startError = Locked<FolderWatchError?>(nil)
        let thread = Thread {
            qit_set_thread_name("fw-inotify")
            engine.run(roots: roots) { error in
                startError.withLock { $0 = error }
                startedSignal.signal()
            }
            inotifyToolsInUse.store(false, ordering: .releasing)
            exited.signal()
        }
        thread.name = "FolderWatch.inotify"
        thread.stackSize = 1 << 20
        thread.start()
        startedSignal.wait()

        if let error = startError.withLock({ $0 }) {
            exited.wait()
            settler.stop()
            lifecycle.withLock { $0 = .stopped }
            continuation.finish()
            throw error
        }
        let running = Running(control: control, settler: settler, exited: exited)
        let stale = lifecycle.withLock { state -> [WatchRoot]? in
            guard case .idle(let latest) = state else { return nil }
            state = .running(running)
            return latest == roots ? nil : latest
        }
        // setRoots() called while start() was running.
        if let stale { control.enqueue(.setRoots(stale)) }
    }

    /// Replaces the watched roots (for a configuration reload): new roots are armed and scanned
    /// (`.scanFinished(reason: .added)`), removed roots are no longer watched, and roots whose
    /// path is unchanged keep their watches (only their direction is updated).
    public func setRoots(_ roots: [WatchRoot]) {
        let control = lifecycle.withLock { state -> Control? in
            switch state {
            case .idle: state = .idle(roots); return nil
            case .running(let running): return running.control
            case .stopped: return nil
            }
        }
        control?.enqueue(.setRoots(roots))
    }

    /// Rescans every root (`.scanFinished(reason: .requested)`) and checks missing roots at once.
    public func rescan() {
        let control = lifecycle.withLock { state -> Control? in
            if case .running(let running) = state { return running.control }
            return nil
        }
        control?.enqueue(.rescan)
    }

    /// A file at `path` could not be read (permission denied): it is reported again as soon as
    /// it can be (its mode, owner or ACL changed), or at once if it already can.
    public func retryWhenReadable(_ path: String) {
        let control = lifecycle.withLock { state -> Control? in
            if case .running(let running) = state { return running.control }
            return nil
        }
        control?.enqueue(.retryWhenReadable(path))
    }

    /// Stops the watcher: wakes the inotify thread, waits for it and the settle thread to end,
    /// and finishes `events`. Safe to call more than once, and before `start()`.
    public func stop() {
        let running = lifecycle.withLock { state -> Running? in
            defer { state = .stopped }
            if case .running(let running) = state { return running }
            return nil
        }
        if let running {
            running.control.stopRequested.store(true, ordering: .releasing)
            running.control.wake()
            // The thread checks for a stop between folders and events; this is a safety net only.
            _ = running.exited.wait(timeout: .now() + .seconds(5))
            running.settler.stop()
        }
        continuation.finish()
    }

    /// Number of folders currently watched with inotify.
    public var watchedDirectoryCount: Int {
        let control = lifecycle.withLock { state -> Control? in
            if case .running(let running) = state { return running.control }
            return nil
        }
        return control?.watchedDirectories.load(ordering: .acquiring) ?? 0
    }

    private func requestStop() {
        let control = lifecycle.withLock { state -> Control? in
            if case .running(let running) = state { return running.control }
            return nil
        }
        control?.stopRequested.store(true, ordering: .releasing)
        control?.wake()
    }
}
