import Foundation
import Glibc
import Locking
import Testing
@testable import FolderWatch

/// One root unmounted, remounted, renamed and replaced over and over must cost another root
/// nothing (issue 26: the guardian service's runtime folder went unwatched while another root
/// test mounted over the host's /var/tmp).
extension FolderWatchTests {
    /// When each path was first reported, read off a watcher's events as they come.
    final class ReportTimes: Sendable {
        private let seen = Locked<[String: ContinuousClock.Instant]>([:])
        private let other = Locked<[FolderWatchEvent]>([])

        init(_ watcher: FolderWatcher) {
            let stream = watcher.events
            Task { [self] in
                for await event in stream {
                    let now = ContinuousClock.now
                    if case .candidate(let candidate) = event {
                        seen.withLock { if $0[candidate.path] == nil { $0[candidate.path] = now } }
                    } else {
                        other.withLock { $0.append(event) }
                    }
                }
            }
        }

        func reported(_ path: String) -> ContinuousClock.Instant? { seen.withLock { $0[path] } }
        var events: [FolderWatchEvent] { other.withLock { $0 } }
    }

    @Test("A root unmounted, remounted, renamed and replaced again and again: every file in another root is reported, each within 3 s",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func churnOnOneRootCostsAnotherNothing() async throws {
        let base = makeTemporaryFolder("remount")
        let churned = "\(base)/shared", steady = "\(base)/runtime"
        makeFolders(churned)
        makeFolders(steady)
        #expect(mount("tmpfs", churned, "tmpfs", 0, "size=1m") == 0, "mount: \(errnoName(errno))")
        #expect(mount("tmpfs", steady, "tmpfs", 0, "size=4m") == 0, "mount: \(errnoName(errno))")
        defer {
            for path in [churned, steady, churned + "-old"] { while umount2(path, Int32(MNT_DETACH)) == 0 {} }
            removeTree(base)
        }
        var options = FolderWatchOptions()
        options.rootRetryInterval = .milliseconds(50)
        options.settleDelay = .milliseconds(50)
        let watcher = FolderWatcher(roots: [churned, steady].map { WatchRoot(path: $0, direction: .incoming) }, options: options)
        let times = ReportTimes(watcher)
        try watcher.start()
        defer { watcher.stop() }
        let armed = await waitUntil(.seconds(5)) {
            times.events.filter { if case .scanFinished(_, _, .start) = $0 { true } else { false } }.count == 2
        }
        #expect(armed, "both roots armed")

        // The churn, on a thread of its own: what other root tests (and logind, and removable
        // media) do to a watched mount point.
        let stop = Locked(false), ended = Locked(false)
        let churn = Thread {
            defer { ended.withLock { $0 = true } }
            var round = 0
            while !stop.withLock({ $0 }) {
                round += 1
                // One mount at `churned` after each round.
                func unmountAll() { while umount2(churned, Int32(MNT_DETACH)) == 0 {} }
                switch round % 4 {
                case 0:     // unmounted and mounted again at once
                    unmountAll()
                    mount("tmpfs", churned, "tmpfs", 0, "size=1m")
                case 1:     // a file and folders there, then unmounted while they may be walked
                    writeFile("\(churned)/x-\(round).jpg")
                    makeFolders("\(churned)/d-\(round)/e")
                    unmountAll()
                    mount("tmpfs", churned, "tmpfs", 0, "size=1m")
                case 2:     // the mount point renamed away and replaced by a new one
                    unmountAll()
                    rename(churned, churned + "-old")
                    makeFolders(churned)
                    mount("tmpfs", churned, "tmpfs", 0, "size=1m")
                    removeTree(churned + "-old")
                default:    // mounted over, written to, and that mount taken away again
                    mount("tmpfs", churned, "tmpfs", 0, "size=1m")
                    writeFile("\(churned)/y-\(round).jpg")
                    umount2(churned, 0)
                }
                usleep(UInt32.random(in: 2_000...15_000))
            }
        }
        churn.start()
        defer { stop.withLock { $0 = true } }

        var written: [(path: String, at: ContinuousClock.Instant)] = []
        let end = ContinuousClock.now + .seconds(3)
        var index = 0
        while ContinuousClock.now < end {
            index += 1
            let path = index % 5 == 0 ? "\(steady)/folder-\(index)/file.jpg" : "\(steady)/file-\(index).jpg"
            if index % 5 == 0 { makeFolders("\(steady)/folder-\(index)") }
            #expect(writeFile(path))
            written.append((path, ContinuousClock.now))
            try await Task.sleep(for: .milliseconds(15))
        }
        stop.withLock { $0 = true }
        #expect(await waitUntil(.seconds(5)) { ended.withLock { $0 } }, "the churn ended")
        _ = await waitUntil(.seconds(3)) { written.allSatisfy { times.reported($0.path) != nil } }
        let missed = written.filter { times.reported($0.path) == nil }.map(\.path)
        let late = written.compactMap { entry -> (String, Duration)? in
            guard let at = times.reported(entry.path) else { return nil }
            let took = at - entry.at
            return took > .seconds(3) ? (entry.path, took) : nil
        }
        print("churn: \(written.count) files in the steady root, \(missed.count) never reported, \(late.count) later than 3 s")
        #expect(missed.isEmpty, "never reported: \(missed.prefix(10)) of \(missed.count)")
        #expect(late.isEmpty, "reported late: \(late.prefix(10))")
        #expect(!times.events.contains { if case .rootMissing(steady, _) = $0 { true } else { false } }, "the steady root went missing: \(times.events)")
        // The churn did reach the watcher: the churned root went and came back, again and again.
        let restored = times.events.filter { if case .rootRestored(churned) = $0 { true } else { false } }.count
        print("churn: the churned root was re-armed \(restored) times")
        #expect(restored >= 5, "the churned root was re-armed \(restored) times only")
    }
}

/// Polls `condition` every 10 ms for at most `timeout`.
func waitUntil(_ timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
