import AnalysisWorker
import DownloadOrigins
import Foundation
import GRDB
import SensitivityAnalysis
import Testing
import TestSupport

/// A browser's history is the protected account's, and it may craft it: the guardian service
/// copies its bytes (no SQLite) and its sandboxed analysis worker parses them (the journal, the
/// WAL, the b-trees), never the service (issue 26, point 6).
@Suite("Browser history parsed in the analysis worker", .serialized)
struct HistoryInWorkerTests {
    /// The binary `swift build` made next to this test bundle.
    static var binary: String { BuiltProgram.quarantine.path }

    static let site = "https://wal.example.invalid"

    /// Firefox's tables as the lookup reads them (places.sqlite, ESR 153).
    static let firefoxSchema = """
        CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR);
        CREATE TABLE moz_historyvisits (id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER, visit_date INTEGER, visit_type INTEGER, session INTEGER);
        CREATE TABLE moz_anno_attributes (id INTEGER PRIMARY KEY, name VARCHAR(32) UNIQUE NOT NULL);
        CREATE TABLE moz_annos (id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL, anno_attribute_id INTEGER, content LONGVARCHAR,
            flags INTEGER DEFAULT 0, expiration INTEGER DEFAULT 0, type INTEGER DEFAULT 0, dateAdded INTEGER DEFAULT 0, lastModified INTEGER DEFAULT 0);
        INSERT INTO moz_anno_attributes (id, name) VALUES (1, 'downloads/destinationFileURI');
        """

    /// A download of `path` from `page`, as Firefox records it (`n`: a small number of its own).
    static func addDownload(_ db: Database, n: Int64, path: String, at date: Date) throws {
        let time = Int64(date.timeIntervalSince1970 * 1_000_000)
        try db.execute(sql: "INSERT INTO moz_places (id, url) VALUES (?, ?), (?, ?)",
                       arguments: [n * 10, "\(site)/page-\(n)", n * 10 + 1, "\(site)/file-\(n).png"])
        try db.execute(sql: "INSERT INTO moz_historyvisits (id, from_visit, place_id, visit_date, visit_type) VALUES (?, 0, ?, ?, 1), (?, ?, ?, ?, 7)",
                       arguments: [n * 10, n * 10, time, n * 10 + 1, n * 10, n * 10 + 1, time])
        try db.execute(sql: "INSERT INTO moz_annos (place_id, anno_attribute_id, content, dateAdded, lastModified) VALUES (?, 1, ?, ?, ?)",
                       arguments: [n * 10 + 1, "file://" + path, time, time])
    }

    @Test("a WAL-mode history (held as Firefox holds it) whose newest download is only in the -wal: the worker finds it; this process parses nothing")
    func walOnlyRowFoundByTheWorker() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-history-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let profile = home + "/.config/mozilla/firefox/k3x9q2ab.default-release"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/Downloads", withIntermediateDirectories: true)
        let older = home + "/Downloads/older.png", newest = home + "/Downloads/newest.png"
        for file in [older, newest] { try Data("\u{89}PNG fake".utf8).write(to: URL(fileURLWithPath: file)) }
        let database = profile + "/places.sqlite"
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        let browser = try DatabaseQueue(path: database, configuration: configuration)
        defer { try? browser.close() }
        try browser.write { db in
            try db.execute(sql: Self.firefoxSchema)
            try Self.addDownload(db, n: 1, path: older, at: Date().addingTimeInterval(-60))
        }
        try browser.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try browser.write { try Self.addDownload($0, n: 2, path: newest, at: Date()) }
        #expect(((try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0) > 0, "the newest row is in the -wal")
        let main = try Data(contentsOf: URL(fileURLWithPath: database))
        #expect(main.range(of: Data("newest.png".utf8)) == nil, "the main file alone does not hold the newest row")

        var environment = ProcessInfo.processInfo.environment
        environment["QUARANTINE_LOG_LEVEL"] = "warning"
        var workerConfiguration = SensitivityAnalyzer.Configuration(workers: 1)
        workerConfiguration.lowPriority = false
        let sandboxed = try SandboxedAnalysis(options: .init(executable: Self.binary, environment: environment, configuration: workerConfiguration, deadline: .seconds(60)))
        defer { sandboxed.stop() }
        var history = BrowserHistory(home: home, configHome: home + "/.config")
        history.parser = sandboxed.historyParser
        let parsedBefore = HistoryParsing.parsesOnThisThread
        let lookup = history.lookUp(downloadAt: newest)
        #expect(lookup.skipped.isEmpty, "\(lookup.skipped.map { "\($0.reason)" })")
        #expect(lookup.origin?.fileURL == "\(Self.site)/file-2.png")
        #expect(lookup.origin?.pageURL == "\(Self.site)/page-2")
        #expect(history.origin(ofDownloadAt: older)?.fileURL == "\(Self.site)/file-1.png")
        #expect(HistoryParsing.parsesOnThisThread == parsedBefore, "the history was parsed in this process, not in the worker")
        #expect(!sandboxed.workerProcesses.isEmpty)

        // Bytes that are no database: the worker says so, the lookup skips the profile, nothing breaks.
        try browser.close()
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: database))
        try? FileManager.default.removeItem(atPath: database + "-wal")
        let crafted = history.lookUp(downloadAt: newest)
        #expect(crafted.origin == nil)
        #expect(crafted.skipped.count == 1 && "\(crafted.skipped.first?.reason as Any)".contains("not an SQLite database"), "\(crafted.skipped.map { "\($0.reason)" })")
        #expect(HistoryParsing.parsesOnThisThread == parsedBefore)
        #expect(!sandboxed.workerProcesses.isEmpty, "the worker survived the crafted bytes")
    }
}
