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

    @Test("crashes count only when observed: reading the count changes nothing (a kill mid-attempt counts nothing); each recorded crash counts once")
    func attemptsCountCrashes() throws {
        let (store, folder) = try store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let entry = BacklogEntry(path: "/home/a/Downloads/clip.mp4", root: "/home/a/Downloads", direction: .incoming,
                                 identity: FileIdentity(device: 1, inode: 2, size: 3, modificationNanoseconds: 4))
        #expect(try store.enqueue([entry], mode: .adult) == 1)
        // Five attempts cut short (stops, kills): nothing recorded, nothing counted.
        for _ in 0..<5 { #expect(try store.crashCount(entry) == 0) }
        // Two crashes the crash journal saw.
        #expect(try store.recordCrash(path: entry.path))
        #expect(try store.recordCrash(path: entry.path))
        #expect(try store.crashCount(entry) == 2)
        // A crash recorded for a file no longer queued changes nothing.
        try store.complete(entry, seen: nil)
        #expect(try store.recordCrash(path: entry.path) == false)
        #expect(try store.backlogCount() == 0)
    }
}
