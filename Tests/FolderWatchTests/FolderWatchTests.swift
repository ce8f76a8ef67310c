import Foundation
import Glibc
import Testing
@testable import FolderWatch

/// Real inotify on real temporary folders. Serialized: libinotifytools is one global instance
/// per process. (The tests that lower system-wide inotify limits are in SystemLimits, run on
/// their own.)
@Suite("FolderWatch", .serialized)
struct FolderWatchTests {
    /// A started watcher on `roots`, once every present root has finished its initial scan.
    func started(_ roots: [String], options: FolderWatchOptions = .init(),
                 direction: WatchDirection = .incoming) async throws -> (FolderWatcher, Recorder) {
        let watcher = FolderWatcher(roots: roots.map { WatchRoot(path: $0, direction: direction) }, options: options)
        let recorder = Recorder(watcher)
        try watcher.start()
        for root in roots where FileManager.default.fileExists(atPath: root) {
            let scanned = await recorder.waitForScan(root, reason: .start)
            #expect(scanned, "initial scan of \(root) finished")
        }
        return (watcher, recorder)
    }

    // MARK: 1. Recursion

    @Test("mkdir -p a/b/c then files written at once: all found, new folders watched")
    func newNestedFoldersAreWatchedBeforeListing() async throws {
        let root = makeTemporaryFolder("nested")
        defer { removeTree(root) }
        let (watcher, recorder) = try await started([root])
        defer { watcher.stop() }
        #expect(watcher.watchedDirectoryCount == 1)

        makeFolders("\(root)/a/b/c")
        let files = ["\(root)/a/1.jpg", "\(root)/a/b/2.jpg", "\(root)/a/b/c/3.jpg"]
        for file in files { writeFile(file) }
        #expect(await recorder.waitForCandidates(files))
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 4 })

        // Written once everything is watched: an event.
        writeFile("\(root)/a/b/c/4.jpg", bytes: 40)
        #expect(await recorder.waitForCandidates(["\(root)/a/b/c/4.jpg"]))
        let later = recorder.candidates.first { $0.path == "\(root)/a/b/c/4.jpg" }
        #expect(later?.cause == .event)
        #expect(later?.size == 40)
        #expect(later?.root == root)
        for candidate in recorder.candidates { #expect(candidate.path.hasPrefix(root + "/")) }
    }

    @Test("A folder tree moved in from outside the root is watched and its files reported")
    func folderMovedInFromOutside() async throws {
        let root = makeTemporaryFolder("movein")
        let outside = makeTemporaryFolder("outside")
        defer { removeTree(root); removeTree(outside) }
        makeFolders("\(outside)/album/2024")
        writeFile("\(outside)/album/cover.jpg")
        writeFile("\(outside)/album/2024/beach.jpg")
        let (watcher, recorder) = try await started([root])
        defer { watcher.stop() }

        #expect(rename("\(outside)/album", "\(root)/album") == 0)
        let moved = ["\(root)/album/cover.jpg", "\(root)/album/2024/beach.jpg"]
        #expect(await recorder.waitForCandidates(moved))
        #expect(recorder.candidates.filter { moved.contains($0.path) }.allSatisfy { $0.cause == .scan })
        #expect(await recorder.waitForScan(root, reason: .directoryMovedIn))
        #expect(watcher.watchedDirectoryCount == 3)

        writeFile("\(root)/album/2024/new.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/album/2024/new.jpg"]))
        #expect(recorder.candidates(named: "new.jpg").first?.cause == .event)
    }

    // MARK: 2. Renames

    @Test("A renamed folder stays watched under its new path; a folder moved out is dropped")
    func renamesAreFollowed() async throws {
        let root = makeTemporaryFolder("rename")
        let outside = makeTemporaryFolder("away")
        defer { removeTree(root); removeTree(outside) }
        makeFolders("\(root)/x/y")
        let (watcher, recorder) = try await started([root])
        defer { watcher.stop() }
        #expect(watcher.watchedDirectoryCount == 3)

        #expect(rename("\(root)/x", "\(root)/z") == 0)
        writeFile("\(root)/z/y/new.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/z/y/new.jpg"]))
        #expect(recorder.candidates(named: "new.jpg").map(\.path) == ["\(root)/z/y/new.jpg"])
        #expect(recorder.candidates(named: "new.jpg").first?.cause == .event)
        #expect(watcher.watchedDirectoryCount == 3)

        // Renamed again, deeper: still followed.
        makeFolders("\(root)/deep")
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 4 })
        #expect(rename("\(root)/z", "\(root)/deep/z2") == 0)
        writeFile("\(root)/deep/z2/y/again.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/deep/z2/y/again.jpg"]))

        // Moved out of the tree: no longer watched, nothing reported from there.
        #expect(rename("\(root)/deep/z2", "\(outside)/z2") == 0)
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 2 })
        writeFile("\(outside)/z2/y/gone.jpg")
        #expect(await recorder.flush(marker: "\(root)/marker.jpg"))
        #expect(recorder.candidates(named: "gone.jpg").isEmpty)
        #expect(!recorder.candidates.contains { $0.path.hasPrefix(outside) })
    }

    // MARK: 3. Settling

    @Test("photo.jpg.part renamed to photo.jpg gives one candidate; empty files give none")
    func partialFilesAndEmptyFiles() async throws {
        let root = makeTemporaryFolder("part")
        defer { removeTree(root) }
        let (watcher, recorder) = try await started([root])
        defer { watcher.stop() }

        writeFile("\(root)/photo.jpg.part", bytes: 500)
        writeFile("\(root)/video.MP4.CRDOWNLOAD", bytes: 500)
        #expect(rename("\(root)/photo.jpg.part", "\(root)/photo.jpg") == 0)
        writeFile("\(root)/empty.jpg", bytes: 0)
        #expect(await recorder.waitForCandidates(["\(root)/photo.jpg"]))
        #expect(await recorder.flush(marker: "\(root)/marker.jpg"))

        #expect(recorder.candidates(named: "photo.jpg").count == 1)
        #expect(recorder.candidates(named: "photo.jpg").first?.size == 500)
        #expect(recorder.candidates(named: "photo.jpg.part").isEmpty)
        #expect(recorder.candidates(named: "video.MP4.CRDOWNLOAD").isEmpty)
        #expect(recorder.candidates(named: "empty.jpg").isEmpty)

        // The empty file gets content: now it is reported.
        writeFile("\(root)/empty.jpg", bytes: 7)
        #expect(await recorder.waitForCandidates(["\(root)/empty.jpg"]))
        #expect(recorder.candidates(named: "empty.jpg").map(\.size) == [7])
    }

    @Test("A temporary-looking name closed and left alone is reported after the quiet period; one being written to is not; one renamed is reported under its final name")
    func temporaryNamesLeftAlone() async throws {
        let root = makeTemporaryFolder("temporary")
        defer { removeTree(root) }
        var options = FolderWatchOptions()
        options.temporaryQuietPeriod = .milliseconds(600)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }
        writeFile("\(root)/card.png.part", bytes: 300)            // closed, then left alone
        writeFile("\(root)/renamed.jpg.crdownload", bytes: 300)
        #expect(rename("\(root)/renamed.jpg.crdownload", "\(root)/renamed.jpg") == 0)
        // A download that keeps its file open and writes to it: never closed, never reported.
        let open = Glibc.open("\(root)/growing.mp4.part", O_WRONLY | O_CREAT, 0o644)
        defer { close(open) }
        var byte: UInt8 = 1
        #expect(write(open, &byte, 1) == 1)
        #expect(await recorder.waitForCandidates(["\(root)/renamed.jpg"]))
        try await Task.sleep(for: .milliseconds(200))
        #expect(recorder.candidates(named: "card.png.part").isEmpty, "reported before the quiet period")
        #expect(await recorder.waitForCandidates(["\(root)/card.png.part"]))
        #expect(await recorder.flush(marker: "\(root)/marker.jpg", extra: .milliseconds(700)))
        #expect(recorder.candidates(named: "card.png.part").count == 1)
        #expect(recorder.candidates(named: "renamed.jpg").count == 1)
        #expect(recorder.candidates(named: "renamed.jpg.crdownload").isEmpty)
        #expect(recorder.candidates(named: "growing.mp4.part").isEmpty)
    }

    @Test("A file touched again and again is reported at the give-up deadline, and once more when it settles")
    func neverSettlingFile() async throws {
        let root = makeTemporaryFolder("touched")
        defer { removeTree(root) }
        var options = FolderWatchOptions()
        options.settleDelay = .milliseconds(100)
        options.settleGiveUp = .milliseconds(700)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }
        let path = "\(root)/card.jpg"
        writeFile(path, bytes: 100)
        // utime every 50 ms for 1.5 s (a nudge beside it raises an event): it never settles
        // meanwhile. The count is taken right after the last touch: a sleep after it, stretched past the settle delay on a loaded machine,
        // would let the final settle be counted as one during the touching.
        var duringTouching = 0
        for index in 0..<30 {
            var times = [timespec(tv_sec: 1_000_000 + index, tv_nsec: 0), timespec(tv_sec: 1_000_000 + index, tv_nsec: 0)]
            utimensat(AT_FDCWD, path, &times, 0)
            writeFile("\(root)/nudge-\(index % 2).txt", bytes: 1)
            if index == 29 {
                duringTouching = recorder.candidates(named: "card.jpg").count
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(duringTouching >= 1, "not reported at the deadline")
        #expect(await recorder.flush(marker: "\(root)/marker.jpg", extra: .milliseconds(400)))
        #expect(recorder.candidates(named: "card.jpg").count == duringTouching + 1, "reported again once settled")
    }

    @Test("A file written in chunks is reported once, with its final size; others are not held up")
    func chunkedWriteSettlesOnce() async throws {
        let root = makeTemporaryFolder("chunks")
        defer { removeTree(root) }
        var options = FolderWatchOptions()
        options.settleDelay = .milliseconds(400)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }

        let slow = "\(root)/slow.mov"
        writeFile(slow, bytes: 1000)
        writeFile("\(root)/quick.jpg", bytes: 10)
        var quickSeenWhileWriting = false
        for _ in 0..<12 {
            try await Task.sleep(for: .milliseconds(100))
            writeFile(slow, bytes: 1000, append: true)   // open, append, close: IN_CLOSE_WRITE each time
            if recorder.reported("\(root)/quick.jpg") { quickSeenWhileWriting = true }
        }
        #expect(quickSeenWhileWriting, "a settling file does not hold up others")
        #expect(recorder.candidates(named: "slow.mov").isEmpty, "not reported while still changing")
        #expect(await recorder.waitForCandidates([slow]))
        #expect(await recorder.flush(marker: "\(root)/marker.jpg", extra: .milliseconds(600)))
        #expect(recorder.candidates(named: "slow.mov").map(\.size) == [13_000])
        #expect(recorder.candidates(named: "slow.mov").first?.cause == .event)
    }

    // MARK: 5. Missing roots

    @Test("A root deleted and recreated: rootMissing, then rootRestored and its file")
    func deletedRootIsRestored() async throws {
        let root = makeTemporaryFolder("gone")
        defer { removeTree(root) }
        makeFolders("\(root)/sub")
        var options = FolderWatchOptions()
        options.rootRetryInterval = .milliseconds(100)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }

        removeTree(root)
        #expect(await recorder.wait { $0.contains { if case .rootMissing(root, _) = $0 { true } else { false } } })
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 0 })

        makeFolders("\(root)/back")
        writeFile("\(root)/back/returned.jpg")
        #expect(await recorder.wait { $0.contains { if case .rootRestored(root) = $0 { true } else { false } } })
        #expect(await recorder.waitForCandidates(["\(root)/back/returned.jpg"]))
        #expect(await recorder.waitForScan(root, reason: .restored))
        #expect(watcher.watchedDirectoryCount == 2)

        // Watched again for real: a later file arrives by event.
        writeFile("\(root)/back/later.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/back/later.jpg"]))
        #expect(recorder.candidates(named: "later.jpg").first?.cause == .event)

        // Moved away this time.
        let elsewhere = root + "-moved"
        defer { removeTree(elsewhere) }
        #expect(rename(root, elsewhere) == 0)
        #expect(await recorder.wait {
            $0.filter { if case .rootMissing(root, _) = $0 { true } else { false } }.count == 2
        })
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 0 })
    }

    @Test("A root that is a mount point: unmounted, it waits for the mount (not the folder it covered); mounted again, it is watched",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func unmountedRootWaitsForItsMount() async throws {
        let root = makeTemporaryFolder("mount")
        defer { _ = umount2(root, Int32(MNT_DETACH)); removeTree(root) }
        #expect(mount("tmpfs", root, "tmpfs", 0, "size=1m") == 0, "mount a tmpfs on \(root): \(errnoName(errno))")
        var options = FolderWatchOptions()
        options.rootRetryInterval = .milliseconds(100)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }
        writeFile("\(root)/first.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/first.jpg"]))

        #expect(umount(root) == 0)
        #expect(await recorder.wait { $0.contains { if case .rootMissing(root, let message) = $0 { message.contains("unmounted") } else { false } } })
        // Written to the folder the filesystem covered: not the root's filesystem, never watched.
        writeFile("\(root)/underneath.jpg")
        try await Task.sleep(for: .milliseconds(600))   // several retries
        #expect(!recorder.reported("\(root)/underneath.jpg"), "the covered folder is not watched")
        #expect(!recorder.events.contains { if case .rootRestored(root) = $0 { true } else { false } })

        #expect(mount("tmpfs", root, "tmpfs", 0, "size=1m") == 0)
        #expect(await recorder.wait { $0.contains { if case .rootRestored(root) = $0 { true } else { false } } })
        #expect(await recorder.waitForScan(root, reason: .restored))
        writeFile("\(root)/again.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/again.jpg"]))
        #expect(recorder.candidates(named: "again.jpg").first?.cause == .event, "watched for real on the new mount")
    }

    @Test("A root absent at start is armed when it appears")
    func absentRootAppears() async throws {
        let root = makeTemporaryFolder("later")
        removeTree(root)
        defer { removeTree(root) }
        var options = FolderWatchOptions()
        options.rootRetryInterval = .milliseconds(100)
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }
        #expect(await recorder.wait {
            $0.contains { if case .rootMissing(root, let message) = $0 { message.contains(root) } else { false } }
        })
        makeFolders(root)
        writeFile("\(root)/first.jpg")
        #expect(await recorder.wait { $0.contains { if case .rootRestored(root) = $0 { true } else { false } } })
        #expect(await recorder.waitForCandidates(["\(root)/first.jpg"]))
    }

    // MARK: 7. Idle and stop

    @Test("An idle watcher uses no CPU; stop() ends the thread and the stream within 1 s")
    func idleWatcherIsQuietAndStopsPromptly() async throws {
        let root = makeTemporaryFolder("idle")
        defer { removeTree(root) }
        makeFolders("\(root)/a/b")
        writeFile("\(root)/a/b/old.jpg")
        #expect(await earlierWatcherThreadsEnded(), "earlier tests' watcher threads ended")
        let (watcher, recorder) = try await started([root])
        #expect(await recorder.waitForCandidates(["\(root)/a/b/old.jpg"]))
        try await Task.sleep(for: .milliseconds(300))   // let settling (if any) finish

        #expect(watcherThreadCount() == 2, "the inotify and settle threads are found by name")
        let before = watcherThreadsCPUTime()
        #expect(before > .zero, "the reading is live: starting and scanning took some CPU")
        try await Task.sleep(for: .seconds(2))
        let used = watcherThreadsCPUTime() - before
        print("FolderWatch idle CPU over 2 s: \(used)")
        #expect(used < .milliseconds(20), "idle CPU \(used)")

        let clock = ContinuousClock()
        let took = clock.measure { watcher.stop() }
        print("FolderWatch stop() took \(took)")
        #expect(took < .seconds(1))
        #expect(await recorder.wait(.seconds(1)) { _ in recorder.finished })
        #expect(watcher.watchedDirectoryCount == 0)
        // The inotify instance is released: a new watcher can start.
        let next = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)])
        try next.start()
        next.stop()
    }

    // MARK: 8. Exclusions and symlinks

    @Test("Excluded paths and names are never watched or reported; symlinks are not followed")
    func exclusionsAndSymlinks() async throws {
        let root = makeTemporaryFolder("exclude")
        let outside = makeTemporaryFolder("target")
        defer { removeTree(root); removeTree(outside) }
        makeFolders("\(root)/vault/items")
        makeFolders("\(root)/project/.git/objects")
        makeFolders("\(root)/normal")
        writeFile("\(root)/vault/items/held.jpg")
        writeFile("\(root)/project/.git/objects/blob.jpg")
        writeFile("\(root)/project/.DS_Store")
        writeFile("\(root)/normal/ok.jpg")
        writeFile("\(outside)/linked.jpg")
        #expect(symlink(outside, "\(root)/link-to-folder") == 0)
        #expect(symlink("\(outside)/linked.jpg", "\(root)/link-to-file.jpg") == 0)

        var options = FolderWatchOptions()
        options.excludedPaths = ["\(root)/vault/"]
        options.excludedNames = [".git", ".DS_Store"]
        let (watcher, recorder) = try await started([root], options: options)
        defer { watcher.stop() }
        #expect(await recorder.waitForCandidates(["\(root)/normal/ok.jpg"]))
        #expect(watcher.watchedDirectoryCount == 3)   // root, project, normal

        writeFile("\(root)/vault/items/new.jpg")
        writeFile("\(root)/project/.git/objects/new.jpg")
        writeFile("\(root)/project/.DS_Store", bytes: 99)
        writeFile("\(outside)/through-link.jpg")
        makeFolders("\(root)/vault/newdir")
        makeFolders("\(root)/normal/.git")
        #expect(symlink(outside, "\(root)/normal/late-link") == 0)
        writeFile("\(root)/normal/.git/x.jpg")
        #expect(await recorder.flush(marker: "\(root)/normal/marker.jpg"))

        let reported = recorder.candidates.map(\.path)
        #expect(!reported.contains { $0.contains("/vault/") }, "\(reported)")
        #expect(!reported.contains { $0.contains("/.git/") || $0.hasSuffix(".DS_Store") }, "\(reported)")
        #expect(!reported.contains { $0.contains("link") || $0.hasPrefix(outside) }, "\(reported)")
        #expect(watcher.watchedDirectoryCount == 3)
    }

    // MARK: 9. Problems are values

    @Test("A folder that cannot be read gives .problem and the rest goes on")
    func unreadableFolderIsAProblem() async throws {
        let root = makeTemporaryFolder("problem")
        defer { removeTree(root) }
        makeFolders("\(root)/fine")
        writeFile("\(root)/fine/ok.jpg")
        // (A folder deeper than PATH_MAX is watched now: GuardianWatchTests.deeperThanPathMax.)
        // And, when not running as root, a folder without permissions.
        let locked = "\(root)/locked"
        makeFolders(locked)
        writeFile("\(locked)/secret.jpg")
        chmod(locked, 0o000)
        defer { chmod(locked, 0o755) }

        let (watcher, recorder) = try await started([root])
        defer { watcher.stop() }
        let problems = recorder.events.compactMap { event -> (String, String)? in
            if case .problem(let path, let message) = event { return (path, message) } else { return nil }
        }
        if geteuid() != 0 {
            #expect(problems.contains { $0.0 == locked && $0.1.contains("EACCES") })
        }
        #expect(await recorder.waitForCandidates(["\(root)/fine/ok.jpg"]))
        writeFile("\(root)/fine/after.jpg")
        #expect(await recorder.waitForCandidates(["\(root)/fine/after.jpg"]))
    }

    // MARK: Configuration reload, rescan, start errors

    @Test("setRoots arms new roots (.added) and drops removed ones; rescan() reports everything again")
    func setRootsAndRescan() async throws {
        let first = makeTemporaryFolder("first")
        let second = makeTemporaryFolder("second")
        defer { removeTree(first); removeTree(second) }
        makeFolders("\(second)/inner")
        writeFile("\(second)/inner/existing.jpg")
        let (watcher, recorder) = try await started([first])
        defer { watcher.stop() }
        #expect(watcher.watchedDirectoryCount == 1)

        watcher.setRoots([WatchRoot(path: first, direction: .incoming), WatchRoot(path: second, direction: .outgoing)])
        #expect(await recorder.waitForScan(second, reason: .added))
        #expect(await recorder.waitForCandidates(["\(second)/inner/existing.jpg"]))
        #expect(recorder.candidates(named: "existing.jpg").first?.root == second)
        #expect(watcher.watchedDirectoryCount == 3)

        watcher.setRoots([WatchRoot(path: second, direction: .outgoing)])
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 2 })
        writeFile("\(first)/ignored-now.jpg")
        #expect(await recorder.flush(marker: "\(second)/marker.jpg"))
        #expect(recorder.candidates(named: "ignored-now.jpg").isEmpty)

        watcher.rescan()
        #expect(await recorder.waitForScan(second, reason: .requested))
        #expect(recorder.candidates(named: "existing.jpg").count >= 2)
    }

    @Test("start() throws clear errors: a second watcher, or one already started")
    func startErrors() async throws {
        let root = makeTemporaryFolder("errors")
        defer { removeTree(root) }
        let first = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)])
        try first.start()
        let second = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)])
        #expect { try second.start() } throws: { error in
            (error as? FolderWatchError)?.code == EBUSY
        }
        #expect { try first.start() } throws: { error in
            (error as? FolderWatchError)?.code == EALREADY
        }
        first.stop()
        // inotify that cannot be initialised (max_user_instances reached) lowers a system-wide
        // limit: SystemLimits.initialisationError, run on its own.
    }
}
