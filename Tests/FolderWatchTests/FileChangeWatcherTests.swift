import Foundation
import Glibc
import Synchronization
import Testing
@testable import FolderWatch

/// Counts `onChange` calls.
private final class ChangeCounter: Sendable {
    private let count = Atomic<Int>(0)
    func hit() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }

    /// Waits until at least `expected` calls, then `settle` more to catch extra ones.
    func wait(for expected: Int, timeout: Duration = .seconds(5), settle: Duration = .milliseconds(500)) async -> Int {
        let deadline = ContinuousClock.now + timeout
        while value < expected && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        try? await Task.sleep(for: settle)
        return value
    }
}

/// A started watcher on `path`, and the count of its calls.
private func watching(_ path: String, quietPeriod: Duration) throws -> (FileChangeWatcher, ChangeCounter) {
    let counter = ChangeCounter()
    let watcher = FileChangeWatcher(path: path, quietPeriod: quietPeriod) { counter.hit() }
    try watcher.start()
    return (watcher, counter)
}

// In the FolderWatch suite, so it is serialized with the tests that lower inotify limits.
extension FolderWatchTests {
    @Test("FileChangeWatcher: an edit in place, a save by rename and a removal each give one call; other files none")
    func fileChangeWatcherSeesEditsOfItsFileOnly() async throws {
        let folder = makeTemporaryFolder("config")
        defer { removeTree(folder) }
        let path = "\(folder)/config.toml"
        writeFile(path)
        // 400 ms: the three rewrites below must fall in one quiet period even when the test
        // process is descheduled between them (beside the main suite, 100 ms split them in two).
        let (watcher, counter) = try watching(path, quietPeriod: .milliseconds(400))
        defer { watcher.stop() }

        writeFile("\(folder)/other.toml")
        writeFile("\(folder)/notes.txt", bytes: 100)
        try await Task.sleep(for: .milliseconds(400))
        #expect(counter.value == 0, "other files in the folder are not the file")

        // Truncated and rewritten three times in a row: gathered into one call.
        for _ in 0..<3 { writeFile(path, bytes: 32) }
        #expect(await counter.wait(for: 1) == 1)

        // An editor's save: a temporary file renamed over the original (each step counted from
        // the one before, so one step's extra call does not fail the next).
        var before = counter.value
        writeFile("\(folder)/.config.toml.swp", bytes: 40)
        #expect(rename("\(folder)/.config.toml.swp", path) == 0)
        #expect(await counter.wait(for: before + 1) == before + 1)

        before = counter.value
        #expect(unlink(path) == 0)
        #expect(await counter.wait(for: before + 1) == before + 1)
    }

    @Test("FileChangeWatcher: the folder removed and made again is watched again; idle costs no CPU; stop() within 1 s")
    func fileChangeWatcherSurvivesItsFolderAndIdlesQuietly() async throws {
        let parent = makeTemporaryFolder("config-parent")
        defer { removeTree(parent) }
        let folder = "\(parent)/quarantine"
        makeFolders(folder)
        let path = "\(folder)/config.toml"
        #expect(await earlierWatcherThreadsEnded(), "earlier tests' watcher threads ended")
        let (watcher, counter) = try watching(path, quietPeriod: .milliseconds(50))

        #expect(watcherThreadCount() == 1, "the thread is found by name")
        try await Task.sleep(for: .milliseconds(200))
        let before = watcherThreadsCPUTime()
        try await Task.sleep(for: .seconds(2))
        let idle = watcherThreadsCPUTime() - before
        print("FileChangeWatcher idle CPU over 2 s: \(idle)")
        #expect(idle < .milliseconds(5), "idle CPU \(idle)")

        removeTree(folder)
        #expect(await counter.wait(for: 1) == 1, "the folder (and the file with it) went away")
        makeFolders(folder)
        writeFile(path)
        // Looked for again within FileChangeWatcher.missingFolderRetry (5 s), then watched as before.
        #expect(await counter.wait(for: 2, timeout: .seconds(8)) >= 2)
        let settled = counter.value
        writeFile(path, bytes: 64)
        #expect(await counter.wait(for: settled + 1) == settled + 1, "edits are seen again")

        let took = ContinuousClock().measure { watcher.stop() }
        #expect(took < .seconds(1))
        try await Task.sleep(for: .milliseconds(100))
        #expect(watcherThreadCount() == 0, "the thread ended")
    }

    @Test("FileChangeWatcher: a missing folder is a clear error at start")
    func fileChangeWatcherMissingFolder() throws {
        let watcher = FileChangeWatcher(path: "/nonexistent-\(UUID().uuidString)/config.toml") {}
        #expect(throws: FolderWatchError.self) { try watcher.start() }
        do { try watcher.start() } catch {
            #expect(error.code == ENOENT)
            #expect(error.operation == "inotify_add_watch")
        }
    }
}
