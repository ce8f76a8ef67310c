import Foundation
import Glibc
import Testing
@testable import FolderWatch

extension FolderWatchTests {
/// The tests that lower /proc/sys/fs/inotify limits for a moment (restoring them). The limits are
/// system-wide, so `make test` runs this suite on its own, after everything else (`--filter
/// SystemLimits`): no agent or watcher of another test may meet a lowered limit. Nested in the
/// serialized FolderWatch suite, so a plain `swift test` never runs two watchers at once.
@Suite("FolderWatch under lowered system limits")
struct SystemLimits {
    @Test("start() throws a clear error when inotify cannot be initialised (max_user_instances reached)")
    func initialisationError() async throws {
        let root = makeTemporaryFolder("errors")
        defer { removeTree(root) }
        let watcher = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)])
        let recorder = Recorder(watcher)
        var thrown: FolderWatchError?
        do {
            let old = try setInotifyLimit("max_user_instances", inotifyUsage().instances)
            defer { restoreInotifyLimit("max_user_instances", old) }
            do { try watcher.start() } catch let error as FolderWatchError { thrown = error }
        }
        #expect(thrown?.code == EMFILE)
        #expect(thrown?.message.contains("max_user_instances") == true)
        #expect(thrown?.operation == "inotify_init")
        #expect(await recorder.wait(.seconds(1)) { _ in recorder.finished })
        watcher.stop()
    }

    @Test("IN_Q_OVERFLOW: .overflow, then a rescan that reports every file")
    func overflowTriggersRescan() async throws {
        let root = makeTemporaryFolder("overflow")
        defer { removeTree(root) }
        // A queue of 4 events against a burst of 1,000 files: it overflows however fast the reader is.
        let old = try setInotifyLimit("max_queued_events", 4)
        let watcher: FolderWatcher
        let recorder: Recorder
        do {
            defer { restoreInotifyLimit("max_queued_events", old) }
            watcher = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)])
            recorder = Recorder(watcher)
            try watcher.start()   // the queue size is read at inotify_init time
        }
        defer { watcher.stop() }
        #expect(await recorder.waitForScan(root, reason: .start))

        makeFolders("\(root)/sub")
        let files = (0..<1000).map { index in "\(root)/\(index % 2 == 0 ? "" : "sub/")file\(index).jpg" }
        // Written by four threads at once: on a quiet 2-core machine one writer alone was slow
        // enough, now and then, for the reader to drain the queue of 4 after each file (1 run in
        // 6 after the EMFILE test: no overflow at all). Four keep both cores from the reader.
        DispatchQueue.concurrentPerform(iterations: 4) { part in
            for index in stride(from: part, to: files.count, by: 4) { writeFile(files[index]) }
        }
        #expect(await recorder.wait { $0.contains { $0.isOverflow } })
        #expect(await recorder.waitForScan(root, reason: .overflow))
        #expect(await recorder.waitForCandidates(files, timeout: .seconds(10)))
        let missing = Set(files).subtracting(recorder.candidates.map(\.path))
        #expect(missing.isEmpty, "not reported: \(missing.sorted().prefix(5))")
        // The folder created during the overflow is watched too.
        #expect(await recorder.wait { _ in watcher.watchedDirectoryCount == 2 })
    }

    @Test("ENOSPC: .watchLimit with the limit and the fix, then periodic rescans find new files")
    func watchLimitFallsBackToRescans() async throws {
        let root = makeTemporaryFolder("limit")
        defer { removeTree(root) }
        let folders = (0..<6).map { "\(root)/d\($0)" }
        for folder in folders { makeFolders(folder) }
        var options = FolderWatchOptions()
        options.fallbackRescanInterval = .milliseconds(300)

        let watcher = FolderWatcher(roots: [WatchRoot(path: root, direction: .incoming)], options: options)
        let recorder = Recorder(watcher)
        defer { watcher.stop() }
        do {
            // Room for the root and two sub-folders only (other programs' watches count too).
            let lowered = inotifyUsage().watches + 3
            let old = try setInotifyLimit("max_user_watches", lowered)
            defer { restoreInotifyLimit("max_user_watches", old) }
            try watcher.start()
            #expect(await recorder.waitForScan(root, reason: .start))
            let limitMessage = recorder.events.compactMap { event -> String? in
                if case .watchLimit(root, let message) = event { return message } else { return nil }
            }.first
            #expect(limitMessage != nil)
            if let limitMessage {
                #expect(limitMessage.contains("max_user_watches = \(lowered)"))
                #expect(limitMessage.contains("sudo sysctl fs.inotify.max_user_watches=524288"))
                #expect(limitMessage.contains("/etc/sysctl.d/"))
            }
            #expect(watcher.watchedDirectoryCount < 7)
            // A file in every folder: some folders are not watched, only a rescan finds those.
            for folder in folders { writeFile("\(folder)/photo.jpg") }
            #expect(await recorder.waitForScan(root, reason: .periodic))
        }
        let files = folders.map { "\($0)/photo.jpg" }
        #expect(await recorder.waitForCandidates(files))
        #expect(recorder.candidates.contains { $0.cause == .scan && files.contains($0.path) })
    }

}
}
