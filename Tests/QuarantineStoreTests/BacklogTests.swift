import Foundation
import MediaDecoding
import Testing
@testable import QuarantineStore

/// The agent's backlog in the audit database.
@Suite("Backlog")
struct BacklogTests {
    func store() throws -> (AuditStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-backlog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (try AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path), folder)
    }

    @Test("attempts count crashes only: attempts that end in the process (done, stopped, a database error) do not add up")
    func attemptsCountCrashes() throws {
        let (store, folder) = try store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let entry = BacklogEntry(path: "/home/a/Downloads/clip.mp4", root: "/home/a/Downloads", direction: .incoming,
                                 identity: FileIdentity(device: 1, inode: 2, size: 3, modificationNanoseconds: 4))
        #expect(try store.enqueue([entry], mode: .adult) == 1)
        // Five graceful stops in the middle of the video: each attempt ended.
        for _ in 0..<5 {
            #expect(try store.beginAttempt(entry) == 1)
            try store.endAttempt(entry)
        }
        // Two crashes: the attempts were never ended.
        #expect(try store.beginAttempt(entry) == 1)
        #expect(try store.beginAttempt(entry) == 2)
        #expect(try store.beginAttempt(entry) == 3)
        try store.endAttempt(entry)
        // Ending an attempt of an entry that is done already changes nothing.
        try store.complete(entry, seen: nil)
        try store.endAttempt(entry)
        #expect(try store.backlogCount() == 0)
    }
}
