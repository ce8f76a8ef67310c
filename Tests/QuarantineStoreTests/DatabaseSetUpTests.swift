import Foundation
import GRDB
import Locking
import Testing
import TestSupport
@testable import QuarantineStore

/// Creating and migrating the audit database while others poll it (issue 27): an agent started
/// while `quarantine status` was polled every 0.2 s once exited with SQLITE_BUSY on `PRAGMA
/// journal_mode = WAL`. Readers now open read-only and never create or migrate; writers set the
/// database up one process at a time and retry SQLite's immediate SQLITE_BUSY.
@Suite("Database set-up", .serialized, .ownThread)
struct DatabaseSetUpTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-setup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A database as an older program left it: every migration up to `v2: guardian PIN`.
    static func olderDatabase(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if fd >= 0 { close(fd) }
        let pool = try DatabasePool(path: path)
        try AuditStore.migrator.migrate(pool, upTo: "v2: guardian PIN")
        try pool.close()
    }

    /// Runs `body` on `count` threads until `stop` is set; returns their threads' join.
    static func pollers(_ count: Int, stop: Locked<Bool>, _ body: @escaping @Sendable () -> Void) -> DispatchGroup {
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            Thread {
                while !stop.withLock({ $0 }) {
                    body()
                    usleep(UInt32.random(in: 0...3000))
                }
                group.leave()
            }.start()
        }
        return group
    }

    @Test("readers polling while the agent creates or migrates the database: neither side ever fails",
          arguments: ["new", "older"])
    func readersDuringSetUp(start: String) throws {
        var setUpFailures: [String] = []
        let readerFailures = Locked<[String]>([])
        let reads = Locked(0)
        for round in 0..<25 {
            let dir = try Self.folder()
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("audit.sqlite3").path
            if start == "older" { try Self.olderDatabase(path) }
            let stop = Locked(false)
            // As `quarantine status` and `list` do, with an agent holding its lock (it is starting).
            let readers = Self.pollers(6, stop: stop) {
                do {
                    let store = try AuditStore.reading(path: path, agentRunning: { true }, waitingUpTo: 10)
                    _ = try store.items()
                    _ = try store.agentStatus()
                    _ = try store.backlogCount()
                    reads.withLock { $0 += 1 }
                } catch {
                    readerFailures.withLock { $0.append("round \(round): \(error)") }
                }
            }
            usleep(UInt32.random(in: 0...8000))
            do {
                let store = try AuditStore(path: path)
                try store.record(.analysed, mode: .adult, actor: "agent")
            } catch {
                setUpFailures.append("round \(round): \(error)")
            }
            usleep(20_000)
            stop.withLock { $0 = true }
            readers.wait()
        }
        #expect(setUpFailures.isEmpty, "\(setUpFailures.count) set-up failures: \(setUpFailures.prefix(3))")
        let failures = readerFailures.withLock { $0 }
        #expect(failures.isEmpty, "\(failures.count) reader failures: \(failures.prefix(3))")
        #expect(reads.withLock { $0 } > 100)
    }

    @Test("several processes setting the same new database up at once: each opens it, migrations run once")
    func writersAtOnce() throws {
        var failures: [String] = []
        for round in 0..<25 {
            let dir = try Self.folder()
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("audit.sqlite3").path
            let errors = Locked<[String]>([])
            let group = DispatchGroup()
            for _ in 0..<4 {
                group.enter()
                Thread {
                    do { _ = try AuditStore(path: path) } catch { errors.withLock { $0.append("\(error)") } }
                    group.leave()
                }.start()
            }
            group.wait()
            failures += errors.withLock { $0 }.map { "round \(round): \($0)" }
        }
        #expect(failures.isEmpty, "\(failures.count) failures: \(failures.prefix(3))")
    }

    @Test("a reader never creates the database: with no file and no agent it reads an empty one")
    func readerCreatesNothing() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("audit.sqlite3").path
        let store = try AuditStore.reading(path: path, agentRunning: { false })
        #expect(try store.items().isEmpty)
        #expect(try store.backlogCount() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: (any Error).self) { try store.record(.analysed, mode: .adult, actor: "cli") }
        // With an agent starting, it waits for the file (here: made 0.3 s later).
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { _ = try? AuditStore(path: path) }
        let waited = try AuditStore.reading(path: path, agentRunning: { true }, waitingUpTo: 5)
        #expect(Date().timeIntervalSince(started) >= 0.25)
        #expect(try waited.items().isEmpty)
        #expect(waited.isStillInPlace)
    }

    @Test("a reader of an older database with no agent running migrates it, as a writer would")
    func readerOfOlderDatabase() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("audit.sqlite3").path
        try Self.olderDatabase(path)
        let store = try AuditStore.reading(path: path, agentRunning: { false })
        #expect(try store.backlogCount() == 0)
        let check = try DatabaseQueue(path: path)
        #expect(try check.read { try AuditStore.migrator.hasCompletedMigrations($0) })
    }
}
