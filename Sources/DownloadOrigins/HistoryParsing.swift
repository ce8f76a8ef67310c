import Foundation
import GRDB
import GRDBSQLite
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a history lookup asks of one profile's database: the layout, the file's paths, and how
/// long SQLite may take over it.
public struct HistoryQuery: Codable, Sendable, Equatable {
    public var kind: BrowserHistory.Kind
    /// The downloaded file's absolute paths (as given, and with its folder's links resolved).
    public var paths: [String]
    /// SQLite's time limit, from the open on.
    public var timeLimitMilliseconds: Int64

    public init(kind: BrowserHistory.Kind, paths: [String], timeLimit: Duration) {
        self.kind = kind
        self.paths = paths
        timeLimitMilliseconds = max(1, timeLimit.components.seconds * 1000 + timeLimit.components.attoseconds / 1_000_000_000_000_000)
    }

    public var timeLimit: Duration { .milliseconds(timeLimitMilliseconds) }
}

/// What one profile's database says of a download: the file's URL, the page, and when.
public struct HistoryMatch: Codable, Sendable, Equatable {
    public var fileURL: String
    public var pageURL: String?
    public var recordedAt: Date?

    public init(fileURL: String, pageURL: String?, recordedAt: Date?) {
        self.fileURL = fileURL
        self.pageURL = pageURL
        self.recordedAt = recordedAt
    }

    /// The longest URL kept (a crafted database may hold longer ones): 8 KiB.
    public static let maximumURLBytes = 8 << 10

    /// Whether it is one a parser may answer: URLs of at most ``maximumURLBytes``, looking like URLs.
    public var isPlausible: Bool {
        fileURL.utf8.count <= Self.maximumURLBytes && HistoryReader.looksLikeURL(fileURL)
            && (pageURL.map { $0.utf8.count <= Self.maximumURLBytes && HistoryReader.looksLikeURL($0) } ?? true)
    }
}

/// The copied bytes of one history database, each file a memory file (memfd) of the process that
/// copied them: the main file, and its `-wal` and `-journal` when they exist. The descriptors
/// belong to the copy; a parser only reads them.
public struct HistoryFiles: Sendable {
    public let main: Int32
    public let wal: Int32?
    public let journal: Int32?

    public init(main: Int32, wal: Int32?, journal: Int32?) {
        self.main = main
        self.wal = wal
        self.journal = journal
    }

    /// The most bytes read of one file (a database, a WAL, a journal): 256 MiB, the largest
    /// history read at all (``BrowserHistory/maximumDatabaseSize``'s default).
    public static let maximumBytes = 256 << 20

    /// Closes the descriptors.
    func close() {
        for fd in [main, wal, journal].compactMap({ $0 }) { _ = Glibc.close(fd) }
    }

    /// The whole content of `fd` from its start, at most ``maximumBytes``.
    public static func bytes(of fd: Int32, limit: Int = maximumBytes) throws(HistoryImage.Problem) -> [UInt8] {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw HistoryImage.Problem("cannot examine a copied file: \(String(cString: strerror(errno)))") }
        guard info.st_size >= 0, info.st_size <= limit else { throw HistoryImage.Problem("a copied file of \(info.st_size) bytes is over \(limit)") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(offset)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw HistoryImage.Problem("a copied file could not be read whole") }
            offset += n
        }
        return bytes
    }
}

/// Whoever turns copied history bytes into an answer: they are another account's, possibly
/// crafted, and parsing them (the journal, the WAL, SQLite's b-trees) is the risky part. A
/// guardian service passes the copies to its sandboxed analysis worker; a person's own agent and
/// the CLI parse them themselves (``HistoryParsing/inProcess``).
public typealias HistoryParser = @Sendable (_ query: HistoryQuery, _ files: HistoryFiles) throws -> HistoryMatch?

/// Parsing copied history bytes: where the bytes may be parsed.
public enum HistoryParsing {
    /// The database's answer to `query`, made from its bytes: the committed page image
    /// (``HistoryImage``), opened in memory, read-only and hardened (``HistoryReader``).
    public static func match(_ query: HistoryQuery, main: [UInt8], wal: [UInt8]?, journal: [UInt8]?) throws -> HistoryMatch? {
        parsesByThread.withLock { $0[UInt(pthread_self()), default: 0] += 1 }
        let image = try HistoryImage.make(main: main, wal: wal, journal: journal)
        guard let found = try HistoryReader(kind: query.kind, timeLimit: query.timeLimit).mostRecentMatch(image: image, paths: query.paths) else { return nil }
        return HistoryMatch(fileURL: found.fileURL, pageURL: found.pageURL, recordedAt: found.recordedAt)
    }

    /// The database's answer to `query`, read from the memory files `files`.
    public static func match(_ query: HistoryQuery, files: HistoryFiles) throws -> HistoryMatch? {
        let main = try HistoryFiles.bytes(of: files.main)
        let wal = try files.wal.map { fd throws(HistoryImage.Problem) in try HistoryFiles.bytes(of: fd) }
        let journal = try files.journal.map { fd throws(HistoryImage.Problem) in try HistoryFiles.bytes(of: fd) }
        return try match(query, main: main, wal: wal, journal: journal)
    }

    /// Runs SQLite once on a small image of its own, in memory, the way a lookup does: a
    /// sandboxed worker calls it before it gives up the file system, so that whatever SQLite sets
    /// up on its first use is set up then.
    public static func warmUp() {
        guard let queue = try? DatabaseQueue() else { return }
        let image: [UInt8]? = try? queue.inDatabase { db in
            try db.execute(sql: """
                CREATE TABLE downloads (id INTEGER PRIMARY KEY, target_path TEXT, current_path TEXT, state INTEGER,
                    tab_url TEXT, referrer TEXT, site_url TEXT, start_time INTEGER, end_time INTEGER);
                CREATE TABLE downloads_url_chains (id INTEGER, chain_index INTEGER, url TEXT);
                INSERT INTO downloads VALUES (1, '/w', '/w', 1, 'https://example.invalid/', '', '', 1, 1);
                INSERT INTO downloads_url_chains VALUES (1, 0, 'https://example.invalid/w');
                """)
            guard let connection = db.sqliteConnection else { return nil }
            var size: sqlite3_int64 = 0
            guard let bytes = sqlite3_serialize(connection, "main", &size, 0) else { return nil }
            defer { sqlite3_free(bytes) }
            return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
        }
        if let image { _ = try? match(HistoryQuery(kind: .chromium, paths: ["/w"], timeLimit: .seconds(2)), main: image, wal: nil, journal: nil) }
    }

    private static let parsesByThread = Mutex<[UInt: Int]>([:])

    /// How many databases the calling thread has parsed (for tests: a guardian service parses
    /// none): what a test that looks up a history
    /// (synchronously, on its own thread) checks, while other tests beside it in the same
    /// process parse theirs (the process-wide count moved under them at six tests at once).
    public static var parsesOnThisThread: Int { parsesByThread.withLock { $0[UInt(pthread_self())] ?? 0 } }

    /// Parses in this process (a person's own agent, the CLI: their own history).
    public static let inProcess: HistoryParser = { query, files in try match(query, files: files) }
}
