import Foundation
import GRDB
import MediaDecoding
import QuarantineBase

/// Which way a watched folder's files go: `incoming` (downloads: what arrives is checked) or
/// `outgoing` (shared or synced folders: what is put there is checked before it leaves).
public enum FolderDirection: String, Sendable, Codable, CaseIterable, DatabaseValueConvertible {
    case incoming, outgoing
}

/// One file waiting to be handled by the agent. The backlog lives in the database, so a crash or a
/// stop loses no pending work: what is here at start is handled first.
public struct BacklogEntry: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "backlog"
    public var id: Int64?
    public var path: String
    public var root: String
    public var direction: FolderDirection
    public var device: Int64
    public var inode: Int64
    public var size: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64
    public var enqueuedAt: Date
    public var attempts: Int

    public init(path: String, root: String, direction: FolderDirection, identity: FileIdentity) {
        self.path = path
        self.root = root
        self.direction = direction
        self.device = Int64(bitPattern: identity.device)
        self.inode = Int64(bitPattern: identity.inode)
        self.size = identity.size
        self.mtimeNs = identity.modificationNanoseconds
        self.ctimeNs = identity.changeNanoseconds
        self.enqueuedAt = Date()
        self.attempts = 0
    }

    public var identity: FileIdentity {
        FileIdentity(device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size, modificationNanoseconds: mtimeNs,
                     changeNanoseconds: ctimeNs)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What the agent concluded about one version of one file; what it has seen is never analysed again.
public enum Verdict: String, Sendable, Codable, CaseIterable, DatabaseValueConvertible {
    /// Analysed: nothing sensitive.
    case clean
    /// Analysed: sensitive, moved to the vault.
    case quarantined
    /// Its bytes are on the allow list (released before): left alone without analysis.
    case allowed
    /// Its bytes or its origin are on the block list: moved to the vault without analysis.
    case blocked
    /// Could not be analysed and was held in the vault (`on_error = "hold"`).
    case unverified
    /// Could not be analysed and was left where it is (`on_error = "leave"`).
    case failed
    /// Not a picture or a video.
    case other
}

/// A file version the agent has dealt with.
public struct SeenFile: Codable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "seenFile"
    public var id: Int64?
    public var path: String
    public var device: Int64
    public var inode: Int64
    public var size: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64
    public var sha256: String?
    public var mode: AnalysisMode
    public var verdict: Verdict
    public var itemId: Int64?
    public var at: Date
    /// For a file given up (`failed`): the program and models that gave it up (``currentBasis``).
    public var basis: String?

    /// This program and its models: the executable (size and modification time: a new build or
    /// install differs) and the pinned runtime and models.
    public static let currentBasis: String = {
        var program = "?"
        var info = stat()
        if let exe = ModelCatalog.executablePath(), stat(exe, &info) == 0 { program = "\(info.st_size)-\(info.st_mtim.tv_sec)" }
        return basis(program: program)
    }()

    /// The basis for `program` with the pinned runtime and `models` (every model of the catalog).
    static func basis(program: String, models: [ModelCatalog.Artifact] = ModelCatalog.models) -> String {
        "program \(program), runtime \(ModelCatalog.runtime.sha256.prefix(12)), models \(ModelCatalog.pins(of: models))"
    }

    public init(path: String, identity: FileIdentity, sha256: String?, mode: AnalysisMode, verdict: Verdict, itemId: Int64? = nil) {
        self.path = path
        self.device = Int64(bitPattern: identity.device)
        self.inode = Int64(bitPattern: identity.inode)
        self.size = identity.size
        self.mtimeNs = identity.modificationNanoseconds
        self.ctimeNs = identity.changeNanoseconds
        self.sha256 = sha256
        self.mode = mode
        self.verdict = verdict
        self.itemId = itemId
        self.at = Date()
        self.basis = verdict == .failed ? Self.currentBasis : nil
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What a running agent publishes for `quarantine status`.
public struct AgentStatus: Codable, Sendable, Equatable {
    public struct Root: Codable, Sendable, Equatable {
        public var path: String
        public var direction: FolderDirection
        /// "watching", "missing", "rescanning every N s" or "not watched: ..."
        public var state: String
        public init(path: String, direction: FolderDirection, state: String) {
            self.path = path
            self.direction = direction
            self.state = state
        }
    }
    public struct Work: Codable, Sendable, Equatable {
        public var path: String
        public var kind: String
        public var startedAt: Date
        /// Videos: fraction done, 0...1.
        public var progress: Double?
        /// Videos: the share of the duration covered so far (keyframes first, then the
        /// stretches between them), 0...1.
        public var coverage: Double?
        public init(path: String, kind: String, startedAt: Date, progress: Double? = nil, coverage: Double? = nil) {
            self.path = path
            self.kind = kind
            self.startedAt = startedAt
            self.progress = progress
            self.coverage = coverage
        }
    }
    public var pid: Int32
    public var startedAt: Date
    public var updatedAt: Date
    /// "starting", "running", "stopping", "stopped"
    public var state: String
    public var mode: String
    public var roots: [Root]
    public var queueDepth: Int
    public var inFlight: [Work]
    /// Counts since start, by verdict raw value, plus "seen" (candidates noticed).
    public var counters: [String: Int]
    /// Why nothing can be analysed right now (a missing model), if so.
    public var problem: String?
    /// "desktop notifications (server)" or "log only: ..."
    public var notifications: String
    /// While the audit database refuses writes, which fault (``DatabaseFault``'s raw value:
    /// "read_only", "locked", "damaged", ...): no analysis starts until it is gone.
    public var databaseFault: String?
    /// What the account can write that is not watched, each with its reason (the guardian
    /// service says so in `guardian status`); nil for a person's own agent.
    public var unwatched: [String]?
    /// What analyses files: the worker running (its pid), not started yet (a person's agent
    /// starts it with the first file), idle on purpose (it ended after
    /// `agent.worker_idle_seconds` without a file and starts again with the next one: not a
    /// problem), or the models in the agent's own process; nil while nothing can (see ``problem``).
    public var analysis: String?

    public init(pid: Int32, startedAt: Date, updatedAt: Date = Date(), state: String, mode: String, roots: [Root] = [],
                queueDepth: Int = 0, inFlight: [Work] = [], counters: [String: Int] = [:], problem: String? = nil, notifications: String = "",
                databaseFault: String? = nil, analysis: String? = nil, unwatched: [String]? = nil) {
        self.unwatched = unwatched
        self.analysis = analysis
        self.pid = pid
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.state = state
        self.mode = mode
        self.roots = roots
        self.queueDepth = queueDepth
        self.inFlight = inFlight
        self.counters = counters
        self.problem = problem
        self.notifications = notifications
        self.databaseFault = databaseFault
    }

    /// The status as stored, in the database or beside the lock: JSON with ISO 8601 dates.
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    init(encoded data: Data) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self = try decoder.decode(AgentStatus.self, from: data)
    }

    /// The status an agent wrote beside its lock while the database refused it (see
    /// ``AgentLock/statusPath(environment:)``), if there is one.
    public static func besideTheLock(environment: [String: String] = ProcessInfo.processInfo.environment) -> AgentStatus? {
        guard let data = FileManager.default.contents(atPath: AgentLock.statusPath(environment: environment)) else { return nil }
        return try? AgentStatus(encoded: data)
    }

    /// Writes `status` beside the agent's lock (atomically, private), or removes what is there
    /// when `status` is nil: while the database refuses the status, `quarantine status` reads it
    /// there (``besideTheLock(environment:)``).
    public static func writeBesideTheLock(_ status: AgentStatus?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = AgentLock.statusPath(environment: environment)
        guard let status else { unlink(path); return }
        guard let data = try? status.encoded() else { return }
        let scratch = path + ".\(getpid())"
        guard FileManager.default.createFile(atPath: scratch, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
        if rename(scratch, path) != 0 { unlink(scratch) }
    }
}

extension AuditEvent {
    /// A new event, to be recorded with ``AuditStore/complete(_:seen:events:)``.
    public init(_ kind: EventKind, itemId: Int64? = nil, path: String?, mode: AnalysisMode, actor: String, detail: String? = nil) {
        self.init(id: nil, itemId: itemId, at: Date(), kind: kind, mode: mode, actor: actor, path: path, detail: detail)
    }
}

extension AuditStore {
    static func registerAgentMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3: agent backlog, seen files, status") { db in
            try db.create(table: "backlog") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("path", .text).notNull().unique(onConflict: .replace)
                t.column("root", .text).notNull()
                t.column("direction", .text).notNull()
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("mtimeNs", .integer).notNull()
                t.column("enqueuedAt", .datetime).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
            }
            try db.create(table: "seenFile") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("path", .text).notNull()
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("mtimeNs", .integer).notNull()
                t.column("sha256", .text).indexed()
                t.column("mode", .text).notNull()
                t.column("verdict", .text).notNull()
                t.column("itemId", .integer)
                t.column("at", .datetime).notNull()
            }
            try db.create(index: "seenFile_identity", on: "seenFile", columns: ["device", "inode", "size", "mtimeNs"])
            try db.create(table: "agentStatus") { t in
                t.primaryKey("id", .integer)
                t.column("json", .text).notNull()
            }
        }
    }

    /// After v6 (``AuditStore/migrator``): the status change time joins each file version's identity.
    static func registerChangeTimeMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v7: ctime in file identities") { db in
            try db.alter(table: "backlog") { t in t.add(column: "ctimeNs", .integer).notNull().defaults(to: 0) }
            try db.alter(table: "seenFile") { t in t.add(column: "ctimeNs", .integer).notNull().defaults(to: 0) }
        }
    }

    // MARK: - Seen files

    /// Whether this exact version of a file (device, inode, size, mtime) under this name was already dealt with
    /// in `mode`, or in child mode (the stricter: what it found clean, adult mode would too). An
    /// adult's verdict never stands for a child's.
    /// Per name: another name of the same inode (a hard link) is judged on its own.
    public func hasSeen(_ identity: FileIdentity, at path: String, in mode: AnalysisMode) throws -> Bool {
        try read { db in try Self.hasSeen(path: path, device: Int64(bitPattern: identity.device), inode: Int64(bitPattern: identity.inode),
                                          size: identity.size, mtimeNs: identity.modificationNanoseconds, ctimeNs: identity.changeNanoseconds,
                                          mode: mode, in: db) }
    }

    static func hasSeen(path: String, device: Int64, inode: Int64, size: Int64, mtimeNs: Int64, ctimeNs: Int64, mode: AnalysisMode,
                        in db: Database) throws -> Bool {
        // A file given up (a failure `on_error` left where it is) counts as seen only by the
        // program and models that gave it up: another build, runtime or model tries it again.
        try Bool.fetchOne(db, sql: """
            SELECT 1 FROM seenFile WHERE device = ? AND inode = ? AND size = ? AND mtimeNs = ? AND ctimeNs = ? AND path = ?
            AND (mode = ? OR mode = ?) AND (verdict != ? OR basis IS ?) LIMIT 1
            """, arguments: [device, inode, size, mtimeNs, ctimeNs, path, mode, AnalysisMode.child, Verdict.failed, SeenFile.currentBasis]) ?? false
    }

    /// The basis a file at `path` in this exact version was given up on, when that was another
    /// program or other models than these (so it is tried again now); nil otherwise.
    public func givenUpOnAnotherBasis(_ identity: FileIdentity, at path: String, in mode: AnalysisMode) throws -> String? {
        try read { db in
            try String.fetchOne(db, sql: """
                SELECT coalesce(basis, 'an earlier version') FROM seenFile WHERE device = ? AND inode = ? AND size = ? AND mtimeNs = ? AND ctimeNs = ?
                AND path = ? AND (mode = ? OR mode = ?) AND verdict = ? AND basis IS NOT ? ORDER BY id DESC LIMIT 1
                """, arguments: [Int64(bitPattern: identity.device), Int64(bitPattern: identity.inode), identity.size, identity.modificationNanoseconds,
                                 identity.changeNanoseconds, path, mode, AnalysisMode.child, Verdict.failed, SeenFile.currentBasis])
        }
    }

    static func registerBasisMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v13: the program and models a file was given up on") { db in
            try db.alter(table: "seenFile") { t in t.add(column: "basis", .text) }
        }
    }

    /// The verdict last given to these bytes in `mode`, if any.
    public func verdict(sha256: String, mode: AnalysisMode) throws -> Verdict? {
        try read { db in
            try Verdict.fetchOne(db, sql: "SELECT verdict FROM seenFile WHERE sha256 = ? AND mode = ? ORDER BY id DESC LIMIT 1",
                                 arguments: [sha256, mode])
        }
    }

    /// Verdicts recorded, newest first.
    public func seenFiles(limit: Int = 100) throws -> [SeenFile] {
        try read { db in try SeenFile.order(Column("id").desc).limit(limit).fetchAll(db) }
    }

    /// Records for the file version `newIdentity` at `newPath` what was last recorded for
    /// `identity` at `path` (a held file put back: renamed, so its ctime and maybe its name
    /// changed, its bytes did not).
    public func carrySeen(from path: String, identity: FileIdentity, to newPath: String, identity newIdentity: FileIdentity) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO seenFile (path, device, inode, size, mtimeNs, ctimeNs, sha256, mode, verdict, itemId, basis, at)
                SELECT ?, ?, ?, ?, ?, ?, sha256, mode, verdict, itemId, basis, ? FROM seenFile
                WHERE path = ? AND device = ? AND inode = ? AND ctimeNs = ? ORDER BY id DESC LIMIT 1
                """, arguments: [newPath, Int64(bitPattern: newIdentity.device), Int64(bitPattern: newIdentity.inode), newIdentity.size,
                                 newIdentity.modificationNanoseconds, newIdentity.changeNanoseconds, Date(),
                                 path, Int64(bitPattern: identity.device), Int64(bitPattern: identity.inode), identity.changeNanoseconds])
        }
    }

    /// Marks a file version as seen without analysing it (e.g. what a release puts back).
    public func markSeen(_ seen: SeenFile) throws {
        try write { db in
            var record = seen
            try record.insert(db)
        }
    }

    // MARK: - Backlog

    /// Adds files to the backlog, in one transaction, except file versions already seen in
    /// `mode` (see ``hasSeen(_:in:)``). A path already waiting is updated to the newest version of
    /// the file. Returns how many were added.
    @discardableResult
    public func enqueue(_ entries: [BacklogEntry], mode: AnalysisMode) throws -> Int {
        guard !entries.isEmpty else { return 0 }
        return try write { db in
            var added = 0
            for entry in entries {
                if try Self.hasSeen(path: entry.path, device: entry.device, inode: entry.inode, size: entry.size, mtimeNs: entry.mtimeNs,
                                    ctimeNs: entry.ctimeNs, mode: mode, in: db) { continue }
                let waiting = try Bool.fetchOne(db, sql: "SELECT 1 FROM backlog WHERE path = ? AND device = ? AND inode = ? AND size = ? AND mtimeNs = ? AND ctimeNs = ?",
                                                arguments: [entry.path, entry.device, entry.inode, entry.size, entry.mtimeNs, entry.ctimeNs]) ?? false
                if waiting { continue }
                var record = entry
                try record.insert(db) // path is unique with ON CONFLICT REPLACE
                added += 1
            }
            return added
        }
    }

    /// Up to `limit` waiting entries, oldest first, except the paths in `excluding`.
    public func backlog(limit: Int, excluding: Set<String> = []) throws -> [BacklogEntry] {
        try read { db in
            var result: [BacklogEntry] = []
            let cursor = try BacklogEntry.order(Column("id")).fetchCursor(db)
            while let entry = try cursor.next(), result.count < limit {
                if !excluding.contains(entry.path) { result.append(entry) }
            }
            return result
        }
    }

    public func backlogCount() throws -> Int {
        try read { db in try BacklogEntry.fetchCount(db) }
    }

    /// Records what was concluded about `entry` and takes it off the backlog, at once. If the
    /// file was re-queued meanwhile as a newer version, that newer entry stays.
    public func complete(_ entry: BacklogEntry, seen: SeenFile?, events: [AuditEvent] = []) throws {
        try write { db in
            if var seen { try seen.insert(db) }
            for var event in events { try event.insert(db) }
            try db.execute(sql: "DELETE FROM backlog WHERE path = ? AND device = ? AND inode = ? AND size = ? AND mtimeNs = ?",
                           arguments: [entry.path, entry.device, entry.inode, entry.size, entry.mtimeNs])
        }
    }

    /// How many observed crashes the file of `entry` has cost (the `attempts` column): only a
    /// crash the program saw counts (``recordCrash(path:)``), never an attempt that was cut short
    /// by a SIGKILL, a power cut or a stop. It is read in a write transaction (a no-op update of
    /// the entry): a file is not judged while the database refuses writes, since its verdict
    /// could not be recorded either. The count itself is not changed.
    public func crashCount(_ entry: BacklogEntry) throws -> Int {
        try write { db in
            try db.execute(sql: "UPDATE backlog SET attempts = attempts WHERE path = ?", arguments: [entry.path])
            return try Int.fetchOne(db, sql: "SELECT attempts FROM backlog WHERE path = ?", arguments: [entry.path]) ?? 0
        }
    }

    /// Counts one crash against the file queued at `path` (the agent died of a fatal signal while
    /// judging it: its crash journal says so at the next start). Returns whether it was queued.
    @discardableResult
    public func recordCrash(path: String) throws -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE backlog SET attempts = attempts + 1 WHERE path = ?", arguments: [path])
            return db.changesCount > 0
        }
    }

    // MARK: - Status

    public func publish(_ status: AgentStatus) throws {
        let json = String(decoding: try status.encoded(), as: UTF8.self)
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO agentStatus (id, json) VALUES (1, ?)", arguments: [json])
        }
    }

    /// The last status an agent published (it may have stopped since: see ``AgentLock``).
    public func agentStatus() throws -> AgentStatus? {
        guard let json = try read({ db in try String.fetchOne(db, sql: "SELECT json FROM agentStatus WHERE id = 1") }) else { return nil }
        return try AgentStatus(encoded: Data(json.utf8))
    }
}

/// The lock that makes one agent per user, and tells the CLI whether it is running.
///
/// `${XDG_RUNTIME_DIR}/quarantine/agent.lock` (else beside the database), held with `flock`
/// for the agent's whole life and released by the kernel when it dies, however it dies. The file
/// holds the agent's pid.
public final class AgentLock: Sendable {
    public let path: String
    private let descriptor: Int32

    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        Paths(environment: environment).agentRuntime + "/agent.lock"
    }

    /// Where the agent writes its status while the audit database refuses it: beside the lock.
    public static func statusPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        (path(environment: environment) as NSString).deletingLastPathComponent + "/agent-status.json"
    }

    /// Takes the lock, or throws saying which pid holds it.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        path = Self.path(environment: environment)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw VaultError.system("cannot open \(path)", errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.holder(fd: fd)
            close(fd)
            throw VaultError.refused("another quarantine agent is already running\(holder.map { " (pid \($0))" } ?? "") (lock: \(path))")
        }
        ftruncate(fd, 0)
        let text = "\(getpid())\n"
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The pid of the running agent, or nil when none holds the lock.
    public static func runningAgent(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32? {
        let fd = open(path(environment: environment), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return holder(fd: fd) ?? -1
    }

    private static func holder(fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
