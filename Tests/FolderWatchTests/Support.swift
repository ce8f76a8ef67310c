import Foundation
import Glibc
import Synchronization
@testable import FolderWatch
import Locking
import PathBytes

/// Collects everything a watcher reports, for bounded waits in tests.
final class Recorder: Sendable {
    private let log = Locked<[FolderWatchEvent]>([])
    private let done = Atomic<Bool>(false)

    init(_ watcher: FolderWatcher) {
        let stream = watcher.events
        Task { [self] in
            for await event in stream { log.withLock { $0.append(event) } }
            done.store(true, ordering: .releasing)
        }
    }

    var events: [FolderWatchEvent] { log.withLock { $0 } }
    var finished: Bool { done.load(ordering: .acquiring) }

    var candidates: [Candidate] {
        events.compactMap { if case .candidate(let candidate) = $0 { return candidate } else { return nil } }
    }

    func candidates(named name: String) -> [Candidate] {
        candidates.filter { ($0.path as NSString).lastPathComponent == name }
    }

    func reported(_ path: String) -> Bool { candidates.contains { $0.path == path } }

    /// Waits until `predicate` holds, at most `timeout`. True when it held.
    func wait(_ timeout: Duration = .seconds(5), until predicate: ([FolderWatchEvent]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if predicate(events) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return predicate(events)
    }

    func waitForCandidates(_ paths: [String], timeout: Duration = .seconds(5)) async -> Bool {
        await wait(timeout) { _ in
            let seen = Set(self.candidates.map(\.path))
            return paths.allSatisfy { seen.contains($0) }
        }
    }

    func waitForScan(_ root: String, reason: ScanReason, timeout: Duration = .seconds(5)) async -> Bool {
        await wait(timeout) { events in
            events.contains {
                if case .scanFinished(root, _, reason) = $0 { return true }
                return false
            }
        }
    }

    /// Writes `marker` and waits until it is reported: everything the kernel queued before it
    /// has then been handled (and had `extra` time to settle).
    func flush(marker: String, extra: Duration = .milliseconds(300)) async -> Bool {
        writeFile(marker, bytes: 3)
        guard await waitForCandidates([marker]) else { return false }
        try? await Task.sleep(for: extra)
        return true
    }
}

/// A fresh folder under /tmp (same filesystem for all of them).
func makeTemporaryFolder(_ label: String = "fw") -> String {
    let path = "/tmp/folderwatch-\(label)-\(UUID().uuidString)"
    mkdir(path, 0o755)
    return path
}

func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

func makeFolders(_ path: String) {
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

/// open/write/close, so that the watcher sees IN_CLOSE_WRITE for exactly this name.
@discardableResult
func writeFile(_ path: String, bytes: Int = 16, append: Bool = false) -> Bool {
    let flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
    let fd = open(path, flags, 0o644)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    if bytes == 0 { return true }
    let data = [UInt8](repeating: 0x61, count: bytes)
    return write(fd, data, data.count) == data.count
}

func fileSize(_ path: String) -> Int64 {
    var st = stat()
    return lstat(path, &st) == 0 ? Int64(st.st_size) : -1
}

/// Sets /proc/sys/fs/inotify/`name`, returning the previous value (to restore in a defer).
func setInotifyLimit(_ name: String, _ value: Int) throws -> Int {
    let path = "/proc/sys/fs/inotify/\(name)"
    let old = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    try "\(value)\n".write(toFile: path, atomically: false, encoding: .utf8)
    return Int(old) ?? value
}

func restoreInotifyLimit(_ name: String, _ value: Int) {
    try? "\(value)\n".write(toFile: "/proc/sys/fs/inotify/\(name)", atomically: false, encoding: .utf8)
}

/// Inotify instances and watches held by processes of `uid` that this process can see.
func inotifyUsage(uid: uid_t = getuid()) -> (instances: Int, watches: Int) {
    var instances = 0
    var watches = 0
    let fm = FileManager.default
    for pid in (try? fm.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(pid) != nil {
        var st = stat()
        guard stat("/proc/\(pid)", &st) == 0, st.st_uid == uid else { continue }
        for fd in (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
            guard let target = try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target == "anon_inode:inotify" else { continue }
            instances += 1
            // Read whole: String(contentsOfFile:) stops after a /proc file's first page (~40 watches).
            let info = PathBytes.wholeFile("/proc/\(pid)/fdinfo/\(fd)").map { String(decoding: $0, as: UTF8.self) } ?? ""
            watches += info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
        }
    }
    return (instances, watches)
}

/// CPU time (user + system) used by this process so far.
/// CPU time of the watcher's own threads (named fw-inotify and fw-settle), from
/// /proc/self/task/*/schedstat (nanoseconds): other suites running in this process at the same
/// time do not count.
func watcherThreadsCPUTime() -> Duration {
    var total: Int64 = 0
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for tid in tasks {
        let comm = ((try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard comm.hasPrefix("fw-") else { continue }
        let stat = (try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8)) ?? ""
        total += Int64(stat.split(separator: " ").first ?? "0") ?? 0
    }
    return .nanoseconds(total)
}

/// How many watcher threads are alive (see ``watcherThreadsCPUTime()``).
/// Waits (at most `timeout`) until no watcher thread is left in the process: a watcher an
/// earlier test let go (or stopped) ends its threads moments later, later still on a loaded
/// machine (seen when FolderWatchTests ran beside the main suite), and the tests that count
/// threads by name must count their own only.
func earlierWatcherThreadsEnded(timeout: Duration = .seconds(5)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while watcherThreadCount() > 0 && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    return watcherThreadCount() == 0
}

func watcherThreadCount() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { (((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "")).hasPrefix("fw-") }.count
}

func processCPUTime() -> Duration {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let micros = (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
        + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
    return .microseconds(micros)
}

extension FolderWatchEvent {
    var isOverflow: Bool { if case .overflow = self { return true } else { return false } }
}
