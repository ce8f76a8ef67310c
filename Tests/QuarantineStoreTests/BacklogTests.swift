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

    @Test("a file given up and put back is still given up where it is back: its basis goes with it, so it is not queued and judged again (was: judged again in a loop, each time until the deadline)")
    func givenUpStaysGivenUpWhenPutBack() throws {
        let (store, folder) = try store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = "/home/a/Downloads/hang.png"
        let held = FileIdentity(device: 1, inode: 2, size: 3, modificationNanoseconds: 4, changeNanoseconds: 5)
        try store.markSeen(SeenFile(path: path, identity: held, sha256: nil, mode: .adult, verdict: .failed))
        #expect(try store.hasSeen(held, at: path, in: .adult))
        // Put back by a rename: the same bytes, a new change time.
        let back = FileIdentity(device: 1, inode: 2, size: 3, modificationNanoseconds: 4, changeNanoseconds: 6)
        try store.carrySeen(from: path, identity: held, to: path, identity: back)
        #expect(try store.hasSeen(back, at: path, in: .adult), "the put-back version is not seen: it would be judged again")
        #expect(try store.enqueue([BacklogEntry(path: path, root: "/home/a/Downloads", direction: .incoming, identity: back)], mode: .adult) == 0)
        // A clean verdict carries over the same way.
        let photo = "/home/a/Downloads/photo.jpg"
        let photoHeld = FileIdentity(device: 1, inode: 7, size: 8, modificationNanoseconds: 9, changeNanoseconds: 10)
        try store.markSeen(SeenFile(path: photo, identity: photoHeld, sha256: "ab", mode: .adult, verdict: .clean))
        let photoBack = FileIdentity(device: 1, inode: 7, size: 8, modificationNanoseconds: 9, changeNanoseconds: 11)
        try store.carrySeen(from: photo, identity: photoHeld, to: photo, identity: photoBack)
        #expect(try store.hasSeen(photoBack, at: photo, in: .adult))
    }
}
