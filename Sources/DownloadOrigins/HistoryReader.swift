import CSQLiteHarden
import Foundation
import GRDB
import GRDBSQLite

/// Reads one history database's page image (``HistoryImage``) in memory, treating it as
/// untrusted: another account may craft these bytes.
///
/// The image is handed to SQLite with `sqlite3_deserialize`, read-only: no file is opened, no
/// journal or WAL is replayed by SQLite (``HistoryImage`` did that, from the bytes). Before any
/// query the connection is set `query_only`, `trusted_schema=OFF` (no functions or virtual tables
/// named by the schema), `cell_size_check=ON`, temporary tables in memory, no attached
/// databases, strings and blobs of at most 1 MiB, a time limit enforced by a progress handler,
/// and SQLite's defensive mode with views and triggers switched off (`qsqlite_harden`). Extension
/// loading stays off (SQLite's default; GRDB does not enable it). Any SQLite error is an error of
/// this profile only: the caller treats it as "no answer here".
struct HistoryReader {
    let kind: BrowserHistory.Kind
    let timeLimit: Duration

    /// A matching record: the origin, and when it was recorded (to keep the most recent).
    struct Match {
        var fileURL: String
        var pageURL: String?
        var recordedAt: Date?
    }

    /// The most recent record, in the database file at `databasePath` (read whole, as bytes), of
    /// a download saved at one of `paths`.
    func mostRecentMatch(in databasePath: String, paths: [String]) throws -> Match? {
        let fd = open(databasePath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw HistoryImage.Problem("cannot open \(databasePath): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        return try mostRecentMatch(image: HistoryImage.make(main: HistoryFiles.bytes(of: fd)), paths: paths)
    }

    /// The most recent record of a download saved at one of `paths` (the same file's absolute
    /// paths: as given, and with symbolic links resolved), in the page image `image`.
    func mostRecentMatch(image: [UInt8], paths: [String]) throws -> Match? {
        // One deadline for everything SQLite does with the image, from the open on: the schema
        // read and the queries.
        let deadline = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        defer { deadline.deallocate() }
        let limit = timeLimit.components
        deadline.pointee = monotonicNanoseconds() &+ UInt64(max(0, limit.seconds)) * 1_000_000_000 &+ UInt64(max(0, limit.attoseconds / 1_000_000_000))
        guard image.count > 0, let buffer = sqlite3_malloc64(sqlite3_uint64(image.count)) else { throw HistoryImage.Problem("no memory for the image") }
        image.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        // Owned by SQLite from here (freed when the connection closes, or below on failure).
        var owned: UnsafeMutableRawPointer? = buffer
        defer { if let owned { sqlite3_free(owned) } }
        let size = sqlite3_int64(image.count)
        var configuration = Configuration()
        configuration.readonly = false
        configuration.foreignKeysEnabled = false
        configuration.label = "browser history image"
        let deadlineAddress = UInt(bitPattern: deadline)
        let bufferAddress = UInt(bitPattern: buffer)
        let handedOver = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        handedOver.pointee = false
        defer { handedOver.deallocate() }
        let handedOverAddress = UInt(bitPattern: handedOver)
        configuration.prepareDatabase { db in
            guard let connection = db.sqliteConnection, let deadline = UnsafeMutablePointer<UInt64>(bitPattern: deadlineAddress),
                  let bytes = UnsafeMutableRawPointer(bitPattern: bufferAddress), let handed = UnsafeMutablePointer<Bool>(bitPattern: handedOverAddress) else {
                throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "no connection")
            }
            // Before any statement: the time limit, then the limits on sizes and attachments.
            Self.interrupt(connection, after: deadline)
            // Defensive mode, no views, no triggers: a crafted `downloads` view runs nothing.
            let hardened = qsqlite_harden(UnsafeMutableRawPointer(connection))
            guard hardened == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: hardened), message: "could not harden the connection") }
            sqlite3_limit(connection, SQLITE_LIMIT_LENGTH, 1 << 20)
            sqlite3_limit(connection, SQLITE_LIMIT_ATTACHED, 0)
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
            try db.execute(sql: "PRAGMA cell_size_check = ON")
            try db.execute(sql: "PRAGMA mmap_size = 0")
            // Sorting and temporary b-trees stay in memory (a sandboxed reader has no file system).
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            let flags = UInt32(SQLITE_DESERIALIZE_READONLY | SQLITE_DESERIALIZE_FREEONCLOSE)
            // SQLite owns the buffer once this is called, whatever it returns.
            handed.pointee = true
            let result = sqlite3_deserialize(connection, "main", bytes.assumingMemoryBound(to: UInt8.self), size, size, flags)
            guard result == SQLITE_OK else { throw DatabaseError(resultCode: ResultCode(rawValue: result), message: "the image could not be opened") }
        }
        let queue: DatabaseQueue
        do { queue = try DatabaseQueue(configuration: configuration) } catch {
            if handedOver.pointee { owned = nil }
            throw error
        }
        if handedOver.pointee { owned = nil }
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
            try db.execute(sql: "PRAGMA query_only = ON")
            switch kind {
            case .chromium: return try chromiumMatch(db, paths: paths)
            case .firefox: return try firefoxMatch(db, paths: paths)
            }
        }
    }

    // MARK: - Chromium

    /// `downloads` rows whose `target_path` or `current_path` is the file (interrupted and
    /// cancelled ones left out: they never produced it), the most recent first; the file URL is the
    /// highest `chain_index` of `downloads_url_chains`; the page is `tab_url`, else `referrer`,
    /// else `site_url`, skipping empty strings (and anything else that is not a URL).
    private func chromiumMatch(_ db: Database, paths: [String]) throws -> Match? {
        guard try Self.hasTables(db, ["downloads", "downloads_url_chains"]) else { return nil }
        let marks = paths.map { _ in "?" }.joined(separator: ",")
        let rows = try Row.fetchAll(db, sql: """
            SELECT d.tab_url, d.referrer, d.site_url, d.start_time, d.end_time,
                   (SELECT c.url FROM downloads_url_chains c WHERE c.id = d.id
                    ORDER BY c.chain_index DESC LIMIT 1) AS file_url
            FROM downloads d
            WHERE (d.target_path IN (\(marks)) OR d.current_path IN (\(marks))) AND d.state IN (0, 1)
            ORDER BY max(d.end_time, d.start_time) DESC, d.id DESC
            LIMIT 16
            """, arguments: StatementArguments(paths + paths))
        for row in rows {
            guard let fileURL = Self.text(row, "file_url"), Self.looksLikeURL(fileURL) else { continue }
            let page = ["tab_url", "referrer", "site_url"].lazy.compactMap { Self.text(row, $0) }.first(where: Self.looksLikeURL)
            let time = max(Self.integer(row, "end_time") ?? 0, Self.integer(row, "start_time") ?? 0)
            return Match(fileURL: fileURL, pageURL: page, recordedAt: Self.chromiumDate(time))
        }
        return nil
    }

    /// Chromium's times: microseconds since 1601-01-01 UTC; 0 is "none".
    static func chromiumDate(_ microseconds: Int64) -> Date? {
        plausible(Date(timeIntervalSince1970: Double(microseconds) / 1_000_000 - 11_644_473_600))
    }

    /// Firefox's times (PRTime): microseconds since 1970-01-01 UTC.
    static func firefoxDate(_ microseconds: Int64) -> Date? {
        plausible(Date(timeIntervalSince1970: Double(microseconds) / 1_000_000))
    }

    /// A time no browser could have recorded (before 2000, or a century ahead) is no time.
    static func plausible(_ date: Date) -> Date? {
        date > Date(timeIntervalSince1970: 946_684_800) && date < Date().addingTimeInterval(100 * 365 * 86_400) ? date : nil
    }

    /// Whether a recorded value is a URL at all: a scheme (`https:`, `blob:`, `data:`, ...) and more.
    static func looksLikeURL(_ text: String) -> Bool {
        guard let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")), colon != text.utf8.startIndex,
              text.utf8.index(after: colon) != text.utf8.endIndex else { return false }
        let scheme = text.utf8[..<colon]
        let isLetter = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        return isLetter(scheme.first!) && scheme.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "+-.".utf8.contains($0) }
    }

    // MARK: - Firefox

    /// `moz_annos` rows of the attribute `downloads/destinationFileURI` whose file:// URL decodes
    /// to the file's path; the file URL is the annotated place's `moz_places.url` (Firefox 153
    /// annotates the final URL of a redirect chain); the page is the place of the visit the
    /// download visit (`visit_type` 7) came from (`from_visit`), the newest such visit.
    private func firefoxMatch(_ db: Database, paths: [String]) throws -> Match? {
        guard try Self.hasTables(db, ["moz_annos", "moz_anno_attributes", "moz_places", "moz_historyvisits"]) else { return nil }
        let wanted = paths.map { Array($0.utf8) }
        var best: (placeID: Int64, fileURL: String, time: Int64)?
        let cursor = try Row.fetchCursor(db, sql: """
            SELECT a.place_id, a.content, max(a.dateAdded, a.lastModified) AS t, p.url
            FROM moz_annos a
            JOIN moz_anno_attributes n ON n.id = a.anno_attribute_id
            JOIN moz_places p ON p.id = a.place_id
            WHERE n.name = 'downloads/destinationFileURI' AND a.content LIKE 'file:%'
            """)
        while let row = try cursor.next() {
            guard let content = Self.text(row, "content"), let path = FileURL.pathBytes(content), wanted.contains(path),
                  let placeID = Self.integer(row, "place_id"), let url = Self.text(row, "url"), Self.looksLikeURL(url) else { continue }
            let time = Self.integer(row, "t") ?? 0
            if best == nil || time > best!.time { best = (placeID, url, time) }
        }
        guard let best else { return nil }
        let pageRow = try Row.fetchOne(db, sql: """
            SELECT p.url FROM moz_historyvisits v
            JOIN moz_historyvisits f ON f.id = v.from_visit
            JOIN moz_places p ON p.id = f.place_id
            WHERE v.place_id = ? AND v.visit_type = 7
            ORDER BY v.visit_date DESC LIMIT 1
            """, arguments: [best.placeID])
        let page = pageRow.flatMap { Self.text($0, "url") }.flatMap { Self.looksLikeURL($0) ? $0 : nil }
        return Match(fileURL: best.fileURL, pageURL: page, recordedAt: Self.firefoxDate(best.time))
    }

    // MARK: - Safety

    /// Whether each name is a real table (not a view, which could run any query, nor a virtual table).
    static func hasTables(_ db: Database, _ names: [String]) throws -> Bool {
        for name in names {
            let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [name])
            guard let sql, !sql.uppercased().hasPrefix("CREATE VIRTUAL") else { return false }
        }
        return true
    }

    /// Interrupts any statement on `connection` once the monotonic clock passes `deadline`
    /// (nanoseconds; it must outlive the connection).
    static func interrupt(_ connection: OpaquePointer, after deadline: UnsafeMutablePointer<UInt64>) {
        sqlite3_progress_handler(connection, 1000, { context in
            guard let context else { return 0 }
            return monotonicNanoseconds() > context.assumingMemoryBound(to: UInt64.self).pointee ? 1 : 0
        }, deadline)
    }

    // MARK: - Values of any type

    /// A column as text: a string, or a blob holding UTF-8; anything else (a crafted file may store
    /// any type anywhere) is nil rather than a crash.
    static func text(_ row: Row, _ column: String) -> String? {
        switch (row[column] as DatabaseValue).storage {
        case .string(let string): string
        case .blob(let data): String(data: data, encoding: .utf8)
        default: nil
        }
    }

    static func integer(_ row: Row, _ column: String) -> Int64? {
        switch (row[column] as DatabaseValue).storage {
        case .int64(let value): value
        case .double(let value) where value.isFinite && abs(value) < 9e18: Int64(value)
        default: nil
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// file:// URLs as Firefox writes them into `downloads/destinationFileURI`.
enum FileURL {
    /// The path bytes of a `file://` URL (`file:///p` or `file://localhost/p`), percent-decoded;
    /// the path ends at a literal `?` or `#`. Compared as bytes, so names that are not UTF-8 match
    /// too. Nil for anything else.
    static func pathBytes(_ url: String) -> [UInt8]? {
        var bytes = Array(url.utf8)
        let scheme = Array("file://".utf8)
        let lowercased = bytes.prefix(scheme.count).map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 }
        guard bytes.count > scheme.count, lowercased == scheme else { return nil }
        bytes.removeFirst(scheme.count)
        let localhost = Array("localhost".utf8)
        if bytes.starts(with: localhost) { bytes.removeFirst(localhost.count) }
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { bytes.removeSubrange(end...) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                decoded.append(high << 4 | low)
                i += 3
            } else {
                decoded.append(bytes[i])
                i += 1
            }
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
