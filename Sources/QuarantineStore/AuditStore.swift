import Foundation
import GRDB
import Locking
import QuarantineBase

/// The audit database shared by the CLI and the agent: vault items, every event, the allow and
/// block lists, and the intent journal that makes moves recoverable.
///
/// SQLite in WAL mode through a GRDB `DatabasePool`, with a busy timeout, so several processes
/// use it at once; migrations are named and append-only.
public final class AuditStore: Sendable {
    public let path: String
    /// The open database and the file it is (swapped by ``reopen()``).
    private let opened: Locked<Opened>
    /// The last fault a write ran into since ``takeWriteFault()`` was last asked.
    private let lastWriteFault = Locked<DatabaseFault?>(nil)
    /// How long a write waits for another process's lock before it fails.
    public let busyTimeout: Double

    struct Opened {
        /// A pool (WAL) on the file; for a store opened by ``reading(path:busyTimeout:agentRunning:waitingUpTo:)``
        /// a read-only pool, or an empty database in memory when there is no file yet.
        var pool: any DatabaseWriter
        /// The database file's device and inode when it was opened.
        var fileIdentity: (device: UInt64, inode: UInt64)?
        /// The empty stand-in for a database not made yet: every write is refused.
        var standIn = false
    }

    var pool: any DatabaseWriter { opened.withLock { $0.pool } }

    /// Opens (creating if needed) the database at `path`. A database that cannot be opened
    /// throws a ``DatabaseFaultError`` naming the fault when SQLite's answer names one.
    /// `busyTimeout` is how long a write waits for another process's lock (tests shorten it).
    public init(path: String, busyTimeout: Double = 10) throws {
        self.path = path
        self.busyTimeout = busyTimeout
        opened = Locked(try Self.open(path, busyTimeout: busyTimeout))
    }

    private init(path: String, busyTimeout: Double, opened: Opened) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.opened = Locked(opened)
    }

    /// Opens the database only to read it, as the commands that change nothing do (`status`,
    /// `list`, `show`, `history`, `mode`): never creates it, never migrates it, never changes its
    /// journal mode, and takes no lock that could hold a writer off (a read-only connection
    /// never asks for the write lock). While the file is missing or its set-up unfinished and
    /// `agentRunning()` says an agent holds its lock (it creates and migrates the database as it
    /// starts), waits for it up to `wait` seconds. With no file and no agent (or still none after
    /// the wait), the store is an empty database in memory: nothing has been recorded yet. A
    /// file whose migrations are behind with no agent running (a newer program, an older
    /// database) is migrated the way writers open it, one process at a time.
    public static func reading(path: String, busyTimeout: Double = 10, agentRunning: () -> Bool,
                               waitingUpTo wait: Double = 10) throws -> AuditStore {
        let deadline = Date().addingTimeInterval(wait)
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.readonly = true
        while true {
            var info = stat()
            if stat(path, &info) == 0 {
                do {
                    let pool = try DatabasePool(path: path, configuration: configuration)
                    if try pool.read({ db in try Self.migrator.hasCompletedMigrations(db) }) {
                        return AuditStore(path: path, busyTimeout: busyTimeout,
                                          opened: Opened(pool: pool, fileIdentity: (UInt64(info.st_dev), UInt64(info.st_ino))))
                    }
                    // Its set-up is unfinished: the agent's, or an older program's database.
                    if !agentRunning() { return try AuditStore(path: path, busyTimeout: busyTimeout) }
                    if Date() >= deadline {
                        throw DatabaseFaultError(fault: .locked, path: path,
                                                 underlying: "the running agent has not finished setting the database up after \(Int(wait)) s")
                    }
                } catch let error as DatabaseFaultError {
                    throw error
                } catch {
                    // A file being made reads as busy or not yet a database for a moment while
                    // an agent sets it up: waited for; anything else is said as it is.
                    let fault = DatabaseFault(error)
                    guard let fault, [.locked, .damaged, .cannotOpen].contains(fault), agentRunning(), Date() < deadline else {
                        guard let fault else { throw error }
                        throw DatabaseFaultError(fault: fault, path: path, underlying: "\(error)")
                    }
                }
            } else if !agentRunning() || Date() >= deadline {
                return try emptyInMemory(path: path, busyTimeout: busyTimeout)
            }
            usleep(50_000)
        }
    }

    /// A store with the full schema and nothing in it, in memory, standing in for a database
    /// file not made yet; it refuses writes (SQLITE_READONLY), as a read-only file would.
    static func emptyInMemory(path: String, busyTimeout: Double) throws -> AuditStore {
        let queue = try DatabaseQueue()
        try migrator.migrate(queue)
        return AuditStore(path: path, busyTimeout: busyTimeout, opened: Opened(pool: queue, fileIdentity: nil, standIn: true))
    }

    /// The writer, or SQLITE_READONLY for the stand-in of a database not made yet.
    private func writer() throws -> any DatabaseWriter {
        let (pool, standIn) = opened.withLock { ($0.pool, $0.standIn) }
        if standIn { throw DatabaseError(resultCode: .SQLITE_READONLY, message: "there is no audit database yet (nothing has been recorded); this command only reads") }
        return pool
    }

    /// Opens the database at `path` for writing: creates it (private), turns it to WAL and runs
    /// the migrations it lacks. One process sets a database up at a time (``SetupLock``): two
    /// at once would race to turn a new file to WAL (where SQLite answers SQLITE_BUSY at once,
    /// without waiting, since waiting could deadlock) and to run the same migration (the second
    /// then fails on a table the first made). SQLITE_BUSY that still comes (from a program
    /// that does not take the lock) is tried again until the busy timeout.
    static func open(_ path: String, busyTimeout: Double) throws -> Opened {
        let setup = try SetupLock(databasePath: path, timeout: busyTimeout)
        defer { withExtendedLifetime(setup) {} }
        // Created private before SQLite opens it: SQLite gives its -wal and -shm the same mode.
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 { Glibc.close(fd) }
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.foreignKeysEnabled = true
        let deadline = Date().addingTimeInterval(busyTimeout)
        var pause: useconds_t = 20_000
        while true {
            do {
                let pool = try DatabasePool(path: path, configuration: configuration)
                // Migrated only when something is missing: a read first, so that a command
                // still opens the database while another process holds its write lock.
                if try !pool.read({ db in try Self.migrator.hasCompletedMigrations(db) }) { try Self.migrator.migrate(pool) }
                var info = stat()
                return Opened(pool: pool, fileIdentity: stat(path, &info) == 0 ? (UInt64(info.st_dev), UInt64(info.st_ino)) : nil)
            } catch {
                guard let fault = DatabaseFault(error) else { throw error }
                if fault == .locked && Date() < deadline {
                    usleep(pause)
                    pause = min(pause * 2, 500_000)
                    continue
                }
                throw DatabaseFaultError(fault: fault, path: path, underlying: "\(error)")
            }
        }
    }

    /// Opens the file now at ``path`` again (a new, empty database when none is there): after
    /// it was deleted or replaced (``isStillInPlace`` is false), or when the open connection can
    /// no longer write what the file now allows (SQLite opens a file it cannot write read-only
    /// and stays so). Connections of the old database close once their last request ends.
    public func reopen() throws {
        let fresh = try Self.open(path, busyTimeout: busyTimeout)
        opened.withLock { $0 = fresh }
    }

    /// Named, append-only migrations: never edit one that has shipped; add a new one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: items, events, allow and block lists, journal") { db in
            try db.create(table: "item") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("createdAt", .datetime).notNull()
                t.column("originalPath", .text).notNull()
                t.column("vaultName", .text)
                t.column("previewName", .text)
                t.column("size", .integer).notNull()
                t.column("sha256", .text).notNull().indexed()
                t.column("mode", .integer).notNull()
                t.column("uid", .integer).notNull()
                t.column("gid", .integer).notNull()
                t.column("accessNanoseconds", .integer).notNull()
                t.column("modificationNanoseconds", .integer).notNull()
                t.column("extendedAttributes", .blob).notNull()
                t.column("originURL", .text)
                t.column("referrerURL", .text)
                t.column("reasons", .text).notNull()
                t.column("analysisMode", .text).notNull()
                t.column("status", .text).notNull().indexed()
            }
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("itemId", .integer).references("item", onDelete: .setNull)
                t.column("at", .datetime).notNull()
                t.column("kind", .text).notNull()
                t.column("mode", .text).notNull()
                t.column("actor", .text).notNull()
                t.column("path", .text)
                t.column("detail", .text)
            }
            try db.create(table: "allowedHash") { t in
                t.primaryKey("sha256", .text)
                t.column("addedAt", .datetime).notNull()
                t.column("itemId", .integer)
            }
            try db.create(table: "blockedHash") { t in
                t.primaryKey("sha256", .text)
                t.column("addedAt", .datetime).notNull()
                t.column("itemId", .integer)
                t.column("reason", .text).notNull()
            }
            try db.create(table: "blockedOrigin") { t in
                t.primaryKey("host", .text)
                t.column("addedAt", .datetime).notNull()
                t.column("itemId", .integer)
            }
            try db.create(table: "journal") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("itemId", .integer).notNull()
                t.column("operation", .text).notNull()
                t.column("source", .text).notNull()
                t.column("destination", .text).notNull()
                t.column("state", .text).notNull()
                t.column("startedAt", .datetime).notNull()
            }
        }
        migrator.registerMigration("v2: guardian PIN") { db in
            try db.create(table: "guardian") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("salt", .blob).notNull()
                t.column("hash", .blob).notNull()
                t.column("rounds", .integer).notNull()
                t.column("setAt", .datetime).notNull()
            }
        }
        registerAgentMigrations(&migrator)
        ModeRecord.registerMigration(&migrator)
        migrator.registerMigration("v5: the mode each release was made in") { db in
            try db.alter(table: "allowedHash") { t in t.add(column: "mode", .text).notNull().defaults(to: AnalysisMode.adult.rawValue) }
        }
        migrator.registerMigration("v6: the original folder's real path") { db in
            try db.alter(table: "item") { t in t.add(column: "folderRealPath", .text) }
        }
        registerChangeTimeMigration(&migrator)
        GuardianPIN.registerAttemptsMigration(&migrator)
        ReleaseRequest.registerMigration(&migrator)
        HeldFile.registerMigration(&migrator)
        VideoProgressRecord.registerMigration(&migrator)
        HeldFile.registerIdentityMigration(&migrator)
        registerBasisMigration(&migrator)
        registerUnfinishedMovesIndex(&migrator)
        return migrator
    }

    /// Whether the file at ``path`` is still the database this store writes to: false when it
    /// was deleted or replaced meanwhile (this process then writes into a file no one else sees).
    public var isStillInPlace: Bool {
        var info = stat()
        guard let fileIdentity = opened.withLock({ $0.fileIdentity }), stat(path, &info) == 0 else { return false }
        return UInt64(info.st_dev) == fileIdentity.device && UInt64(info.st_ino) == fileIdentity.inode
    }

    // MARK: - Writing

    /// Every write of this program goes through here: a fault of the database (not of one
    /// request) is kept for ``takeWriteFault()``, so one that a caller ignores is still seen.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try writer().write(body) } catch {
            if let fault = DatabaseFault(error) { lastWriteFault.withLock { $0 = fault } }
            throw error
        }
    }

    /// The fault the last failed write ran into since the previous call (nil: none), and
    /// forgets it. The agent asks after each file, so a write the core made with `try?` (an
    /// attempt's count, a verdict) still stops it from going on as if it had been recorded.
    public func takeWriteFault() -> DatabaseFault? {
        lastWriteFault.withLock { fault in defer { fault = nil }; return fault }
    }

    /// Whether the database can be written now: a real write (a row added and removed, committed)
    /// waiting at most `timeout` seconds for another process's lock, and with `checkIntegrity`
    /// SQLite's `quick_check` of every page. Throws a ``DatabaseFaultError`` naming what is wrong.
    public func probe(timeout: Double = 0.5, checkIntegrity: Bool = false) throws {
        do {
            try writer().writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA busy_timeout = \(Int(timeout * 1000))")
                defer { try? db.execute(sql: "PRAGMA busy_timeout = \(Int(busyTimeout * 1000))") }
                try db.inTransaction(.immediate) {
                    try db.execute(sql: "INSERT OR REPLACE INTO agentStatus (id, json) VALUES (-1, 'probe')")
                    try db.execute(sql: "DELETE FROM agentStatus WHERE id = -1")
                    return .commit
                }
            }
            if checkIntegrity, let problem = try quickCheck() {
                throw DatabaseFaultError(fault: .damaged, path: path, underlying: problem)
            }
        } catch let error as DatabaseFaultError {
            throw error
        } catch {
            throw DatabaseFaultError(fault: DatabaseFault(error) ?? .ioError, path: path, underlying: "\(error)")
        }
    }

    /// SQLite's `PRAGMA quick_check` (every page and index entry read, in about the time of a
    /// full read): nil when the file is sound, else SQLite's first findings.
    public func quickCheck() throws -> String? {
        let lines = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check(5)") }
        return lines == ["ok"] ? nil : lines.joined(separator: "; ")
    }
    func read<T>(_ body: (Database) throws -> T) throws -> T { try pool.read(body) }

    /// Records one event.
    public func record(_ kind: EventKind, itemId: Int64? = nil, path: String? = nil, mode: AnalysisMode, actor: String, detail: String? = nil) throws {
        try write { db in
            var event = AuditEvent(id: nil, itemId: itemId, at: Date(), kind: kind, mode: mode, actor: actor, path: path, detail: detail)
            try event.insert(db)
        }
    }

    // MARK: - Reading

    /// Items, newest first; without `includeClosed` only those still in the vault.
    /// With `before`, only items older than that id, and with `limit`, at most that many (a page).
    public func items(includeClosed: Bool = false, before: Int64? = nil, limit: Int? = nil) throws -> [VaultItem] {
        try read { db in
            var request = VaultItem.order(Column("id").desc)
            if !includeClosed { request = request.filter([VaultItem.Status.quarantined, VaultItem.Status.sealed].contains(Column("status"))) }
            if let before { request = request.filter(Column("id") < before) }
            if let limit { request = request.limit(max(0, limit)) }
            return try request.fetchAll(db)
        }
    }

    public func item(_ id: Int64) throws -> VaultItem? {
        try read { db in try VaultItem.fetchOne(db, key: id) }
    }

    /// How many items are in each state (a state no item is in is left out).
    public func itemCounts() throws -> [VaultItem.Status: Int] {
        try read { db in
            var counts: [VaultItem.Status: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM item GROUP BY status") {
                if let status = VaultItem.Status(rawValue: row["status"]) { counts[status] = row["n"] }
            }
            return counts
        }
    }

    /// Events, newest first, optionally for one item; with `before`, only those older than that
    /// event id, and with `limit`, at most that many (a page: the rest is never read).
    public func events(itemId: Int64? = nil, before: Int64? = nil, limit: Int? = nil) throws -> [AuditEvent] {
        try read { db in
            var request = AuditEvent.order(Column("id").desc)
            if let itemId { request = request.filter(Column("itemId") == itemId) }
            if let before { request = request.filter(Column("id") < before) }
            if let limit { request = request.limit(max(0, limit)) }
            return try request.fetchAll(db)
        }
    }

    /// Whether these bytes were released in `mode`, or in child mode (a guardian's release holds
    /// in both modes; an adult's release does not hold in child mode).
    public func isAllowed(sha256: String, in mode: AnalysisMode = .adult) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM allowedHash WHERE sha256 = ? AND (mode = ? OR mode = ?)",
                              arguments: [sha256, mode, AnalysisMode.child]) ?? false
        }
    }

    /// Why these bytes are blocked, if they are.
    public func blockReason(sha256: String) throws -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT reason FROM blockedHash WHERE sha256 = ?", arguments: [sha256]) }
    }

    public func isBlocked(host: String) throws -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM blockedOrigin WHERE host = ?", arguments: [host.lowercased()]) ?? false }
    }

    /// Why a file from a blocked site is hidden, as lists and items say it.
    public static func blockedSiteReason(_ host: String) -> String { "downloaded from \(host), which is blocked" }

    /// Whether any site is blocked at all.
    public func hasBlockedOrigins() throws -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM blockedOrigin LIMIT 1") ?? false }
    }

    // MARK: - Allow and block lists

    static func allow(_ sha256: String, itemId: Int64?, mode: AnalysisMode, in db: Database) throws {
        // An item recorded without a hash (unreadable, or too large to judge) names no bytes.
        guard !sha256.isEmpty else { return }
        // A release in child mode widens an adult one (never the reverse).
        try db.execute(sql: """
            INSERT INTO allowedHash (sha256, addedAt, itemId, mode) VALUES (?, ?, ?, ?)
            ON CONFLICT(sha256) DO UPDATE SET mode = excluded.mode WHERE excluded.mode = 'child'
            """, arguments: [sha256, Date(), itemId, mode])
    }

    static func block(_ sha256: String, reason: String, itemId: Int64?, in db: Database) throws {
        guard !sha256.isEmpty else { return }
        try db.execute(sql: "INSERT OR REPLACE INTO blockedHash (sha256, addedAt, itemId, reason) VALUES (?, ?, ?, ?)",
                       arguments: [sha256, Date(), itemId, reason])
    }

    static func blockOrigin(_ host: String, itemId: Int64?, in db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO blockedOrigin (host, addedAt, itemId) VALUES (?, ?, ?)", arguments: [host.lowercased(), Date(), itemId])
    }

    /// Puts these bytes on the allow list: never hidden again.
    public func allow(sha256: String, itemId: Int64? = nil, mode: AnalysisMode = .adult) throws {
        try write { db in try Self.allow(sha256, itemId: itemId, mode: mode, in: db) }
    }

    /// Puts these bytes on the block list: hidden on sight, without analysis.
    public func blockHash(_ sha256: String, reason: String, itemId: Int64? = nil) throws {
        try write { db in try Self.block(sha256, reason: reason, itemId: itemId, in: db) }
    }

    /// Blocks a site: everything downloaded from it is hidden on sight.
    public func blockOrigin(_ host: String, itemId: Int64? = nil) throws { try write { db in try Self.blockOrigin(host, itemId: itemId, in: db) } }

    /// Whether the journal holds a move that did not finish (a crash interrupted it, or one is
    /// under way now).
    public func hasUnfinishedMoves() throws -> Bool {
        try read { db in try JournalEntry.filter(Column("state") != JournalEntry.State.done).fetchCount(db) > 0 }
    }

    /// Journal entries of moves that did not finish.
    func unfinishedMoves() throws -> [JournalEntry] {
        try read { db in try JournalEntry.filter(Column("state") != JournalEntry.State.done).order(Column("id")).fetchAll(db) }
    }
}

/// What happened, as recorded in the audit log.
public enum EventKind: String, Sendable, Codable, DatabaseValueConvertible {
    case analysed, flagged, quarantined, released, blocked, deleted, error, recovered, purged, guardian
    case modeChanged = "mode_changed"
    case releaseRequested = "release_requested"
    /// The original was shown to the person (the review page's Show).
    case shown
}

/// One line of the audit log.
public struct AuditEvent: Codable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "event"
    public var id: Int64?
    public var itemId: Int64?
    public var at: Date
    public var kind: EventKind
    public var mode: AnalysisMode
    public var actor: String
    public var path: String?
    public var detail: String?

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

extension AuditEvent {
    /// Read from its row column by column, not through `Decodable` (GRDB's keyed decoder took
    /// half the time of a 5,000-event history page by page, measured).
    public init(row: Row) throws {
        id = try row.decode(forColumn: "id")
        itemId = try row.decode(forColumn: "itemId")
        at = try row.decode(forColumn: "at")
        kind = try row.decode(forColumn: "kind")
        mode = try row.decode(forColumn: "mode")
        actor = try row.decode(forColumn: "actor")
        path = try row.decode(forColumn: "path")
        detail = try row.decode(forColumn: "detail")
    }
}

/// An intent recorded before a move, so a crash at any instant can be finished or rolled back.
struct JournalEntry: Codable, Sendable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "journal"
    enum Operation: String, Codable, DatabaseValueConvertible { case quarantine, release }
    enum State: String, Codable, DatabaseValueConvertible { case begun, copied, done }
    var id: Int64?
    var itemId: Int64
    var operation: Operation
    var source: String
    var destination: String
    var state: State
    var startedAt: Date

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
