import Foundation
import CInotifyTools
import Glibc

/// Waits, on its own thread, until files stop changing, then reports them as candidates.
///
/// The inotify thread hands paths over with `submit` and never waits. A file is reported once
/// its `lstat` (size, mtime, device, inode) is unchanged over its settle time (`settleDelay`, or
/// the longer quiet period given for a temporary-looking name); while it keeps changing it is
/// re-checked at that pace. A file that is still changing after `giveUp` is reported as it is and
/// then waited for again, so it is reported once more when it settles; a temporary-looking name
/// is dropped instead (its next close submits it again). While nothing is pending the thread
/// sleeps on a condition without a timeout.
final class Settler: @unchecked Sendable {
    // Everything below is guarded by `condition`.
    private struct Entry {
        var root: String
        var cause: Candidate.Cause
        var status: FileStatus
        var firstSeen: ContinuousClock.Instant
        var due: ContinuousClock.Instant
        /// How long it must stay unchanged.
        var settle: Duration
        /// A temporary-looking name: dropped, not reported, when it never settles.
        var temporary: Bool
    }

    private let condition = NSCondition()
    private var pending: [String: Entry] = [:]
    private var stopped = false
    private var finished = false
    private let settleDelay: Duration
    private let giveUp: Duration
    /// Whether a temporary-looking name still changing at `giveUp` is dropped (its next close
    /// submits it again) rather than reported as it is.
    private let dropUnsettledTemporary: Bool
    private let emit: @Sendable (FolderWatchEvent) -> Void

    init(settleDelay: Duration, giveUp: Duration, dropUnsettledTemporary: Bool = true, emit: @escaping @Sendable (FolderWatchEvent) -> Void) {
        self.settleDelay = settleDelay
        self.giveUp = giveUp
        self.dropUnsettledTemporary = dropUnsettledTemporary
        self.emit = emit
    }

    /// Starts the settle thread.
    func start() {
        let thread = Thread { [self] in
            qit_set_thread_name("fw-settle")
            run()
        }
        thread.name = "FolderWatch.settle"
        thread.start()
    }

    /// Stops the thread and waits (bounded) until it has left its loop.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        let deadline = Date().addingTimeInterval(2)
        while !finished {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
    }

    /// Waits for `path` to settle, starting from its current `lstat` (`status`, when the caller
    /// already has it). Files that are not regular, empty or gone are dropped at once.
    func submit(path: String, root: String, cause: Candidate.Cause, status: FileStatus? = nil, quietPeriod: Duration? = nil) {
        let current: FileStatus
        if let status {
            current = status
        } else {
            guard case .success(let fresh) = FileStatus.lstatus(path) else { return }
            current = fresh
        }
        guard current.isRegularFile, current.size > 0 else {
            cancel(path: path)
            return
        }
        let now = ContinuousClock.now
        let settle = quietPeriod ?? settleDelay
        condition.lock()
        if var entry = pending[path] {
            entry.status = current
            entry.root = root
            if cause == .event { entry.cause = .event }
            // Events arriving faster than the settle time never put it off past the give-up time.
            entry.due = min(now + settle, entry.firstSeen + giveUp)
            pending[path] = entry
        } else {
            pending[path] = Entry(root: root, cause: cause, status: current, firstSeen: now, due: now + settle,
                                  settle: settle, temporary: quietPeriod != nil)
        }
        condition.signal()
        condition.unlock()
    }

    /// Forgets a pending path.
    func cancel(path: String) {
        condition.lock()
        pending[path] = nil
        condition.unlock()
    }

    /// A folder was renamed: pending files under `old` now live under `new` (in root `root(for:)`).
    func renamePrefix(from old: String, to new: String, root: (String) -> String?) {
        condition.lock()
        defer { condition.unlock() }
        let moved = pending.filter { isPath($0.key, inside: old) }
        for (path, var entry) in moved {
            pending[path] = nil
            let newPath = new + path.dropFirst(old.count)
            guard let newRoot = root(newPath) else { continue }
            entry.root = newRoot
            pending[newPath] = entry
        }
    }

    /// Number of files waiting to settle (for tests and diagnostics).
    var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return pending.count
    }

    private func run() {
        condition.lock()
        while !stopped {
            if pending.isEmpty {
                condition.wait()
                continue
            }
            let now = ContinuousClock.now
            var earliest: ContinuousClock.Instant?
            var due: [(String, Entry)] = []
            for (path, entry) in pending {
                if entry.due <= now {
                    due.append((path, entry))
                } else if earliest.map({ entry.due < $0 }) ?? true {
                    earliest = entry.due
                }
            }
            if due.isEmpty, let earliest {
                let wait = earliest - now
                let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
                continue
            }
            condition.unlock()
            // lstat outside the lock so that submit() never waits for the disk.
            var results: [(String, Entry, Result<FileStatus, Errno>)] = []
            results.reserveCapacity(due.count)
            for (path, entry) in due {
                results.append((path, entry, FileStatus.lstatus(path)))
            }
            var ready: [Candidate] = []
            let checked = ContinuousClock.now
            condition.lock()
            for (path, entry, result) in results {
                // A newer submit() replaced the entry meanwhile: keep the newer one.
                guard let current = pending[path], current.due == entry.due else { continue }
                guard case .success(let status) = result, status.isRegularFile, status.size > 0 else {
                    pending[path] = nil
                    continue
                }
                if status.sameContent(as: entry.status) {
                    pending[path] = nil
                    ready.append(Candidate(path: path, root: entry.root, device: status.device, inode: status.inode,
                                           size: status.size, modificationNanoseconds: status.modificationNanoseconds, changeNanoseconds: status.changeNanoseconds,
                                           cause: entry.cause))
                } else if checked - entry.firstSeen >= giveUp && entry.temporary && dropUnsettledTemporary {
                    pending[path] = nil
                } else {
                    if checked - entry.firstSeen >= giveUp {
                        // Never settles (touched again and again): reported as it is now, and
                        // waited for again, to be reported once more when it settles.
                        ready.append(Candidate(path: path, root: entry.root, device: status.device, inode: status.inode,
                                               size: status.size, modificationNanoseconds: status.modificationNanoseconds, changeNanoseconds: status.changeNanoseconds,
                                               cause: entry.cause))
                    }
                    var changed = entry
                    changed.status = status
                    changed.due = checked + entry.settle
                    if checked - entry.firstSeen >= giveUp { changed.firstSeen = checked }
                    pending[path] = changed
                }
            }
            if !ready.isEmpty {
                condition.unlock()
                for candidate in ready { emit(.candidate(candidate)) }
                condition.lock()
            }
        }
        finished = true
        condition.broadcast()
        condition.unlock()
    }
}
