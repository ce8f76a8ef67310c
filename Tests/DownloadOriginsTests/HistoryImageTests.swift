import Foundation
import GRDB
import Testing
@testable import DownloadOrigins

/// The committed page image made from a history's bytes, without SQLite (``HistoryImage``), and
/// the copy that hands the bytes on without parsing them.
@Suite("History image")
struct HistoryImageTests {
    static let site = "https://image.example.invalid"

    /// A Firefox-like WAL database with `older` committed into the main file and `newest` only in
    /// the -wal; its bytes (main, wal) while the browser holds it.
    static func walDatabase(_ place: FakeHome, older: String, newest: String) throws -> (database: String, browser: DatabaseQueue) {
        let database = try place.firefoxProfile()
        let browser = try BrowserHistoryTests.firefoxLikeConnection(database)
        try browser.write { try FakeHome.insertFirefoxDownload($0, page: "\(site)/", fileURL: "\(site)/older.png", path: older, at: Date().addingTimeInterval(-60)) }
        try browser.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try browser.write { try FakeHome.insertFirefoxDownload($0, page: "\(site)/", fileURL: "\(site)/newest.png", path: newest, at: Date()) }
        return (database, browser)
    }

    static func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test("a WAL's committed frames are replayed; a frame whose checksum fails ends the replay, so its transaction is not seen; the main file alone knows only the older row")
    func walReplayAndChecksum() throws {
        let place = try FakeHome()
        defer { place.cleanUp() }
        let older = try place.download("older.png"), newest = try place.download("newest.png")
        let (database, browser) = try Self.walDatabase(place, older: older, newest: newest)
        defer { try? browser.close() }
        let main = try Self.bytes(database), wal = try Self.bytes(database + "-wal")
        #expect(wal.count > 32)
        let firefox = { (path: String) in HistoryQuery(kind: .firefox, paths: [path], timeLimit: .seconds(5)) }
        #expect(try HistoryParsing.match(firefox(newest), main: main, wal: wal, journal: nil)?.fileURL == "\(Self.site)/newest.png")
        #expect(try HistoryParsing.match(firefox(newest), main: main, wal: nil, journal: nil) == nil, "the main file alone")
        #expect(try HistoryParsing.match(firefox(older), main: main, wal: nil, journal: nil)?.fileURL == "\(Self.site)/older.png")
        // One byte changed in the last frame (the commit frame of the newest transaction).
        var tampered = wal
        tampered[tampered.count - 100] ^= 0xff
        #expect(try HistoryParsing.match(firefox(newest), main: main, wal: tampered, journal: nil) == nil, "a frame with a bad checksum was replayed")
        #expect(try HistoryParsing.match(firefox(older), main: main, wal: tampered, journal: nil)?.fileURL == "\(Self.site)/older.png")
        // The frames of a transaction not committed yet (its commit frame cut off) are not replayed.
        let pageSize = Int(HistoryImage.bigEndian32(wal, 8))
        let cut = Array(wal.prefix(wal.count - (pageSize + 24)))
        #expect(try HistoryParsing.match(firefox(newest), main: main, wal: cut, journal: nil) == nil)
        // A WAL with other salts (an old one, after a restart of the log) adds nothing.
        var salted = wal
        salted[16] ^= 1
        #expect(try HistoryParsing.match(firefox(newest), main: main, wal: salted, journal: nil) == nil)
    }

    @Test("crafted lengths and offsets are no crash: truncated files, absurd page sizes and page numbers, random bytes")
    func craftedBytesAreNoCrash() throws {
        let place = try FakeHome()
        defer { place.cleanUp() }
        let older = try place.download("older.png"), newest = try place.download("newest.png")
        let (database, browser) = try Self.walDatabase(place, older: older, newest: newest)
        defer { try? browser.close() }
        let main = try Self.bytes(database), wal = try Self.bytes(database + "-wal")
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            var crafted = wal
            for _ in 0..<8 { crafted[Int.random(in: 0..<min(crafted.count, 4200), using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            if round % 3 == 0 { crafted = Array(crafted.prefix(Int.random(in: 0..<crafted.count, using: &generator))) }
            _ = try? HistoryImage.make(main: main, wal: crafted)
            var journal = HistoryImage.journalMagic + [UInt8](repeating: 0, count: 600)
            for index in 8..<28 { journal[index] = UInt8.random(in: 0...255, using: &generator) }
            _ = try? HistoryImage.make(main: main, journal: journal)
        }
        #expect(throws: HistoryImage.Problem.self) { try HistoryImage.make(main: [UInt8](repeating: 7, count: 4096)) }
        #expect(throws: HistoryImage.Problem.self) { try HistoryImage.make(main: []) }
    }

    @Test("the copy hands the parser the files' exact bytes, in memory files, and parses none of them itself")
    func copyParsesNothing() throws {
        let place = try FakeHome()
        defer { place.cleanUp() }
        let older = try place.download("older.png"), newest = try place.download("newest.png")
        let (database, browser) = try Self.walDatabase(place, older: older, newest: newest)
        defer { try? browser.close() }
        var history = place.history()
        let seen = SeenBytes()
        history.parser = { query, files in
            seen.record(query, try HistoryFiles.bytes(of: files.main), try files.wal.map { try HistoryFiles.bytes(of: $0) })
            return nil
        }
        let before = HistoryParsing.parsesOnThisThread
        let lookup = history.lookUp(downloadAt: newest)
        #expect(lookup.origin == nil && lookup.read.count == 1)
        #expect(HistoryParsing.parsesOnThisThread == before)
        let (query, main, wal) = try #require(seen.value)
        #expect(query.kind == .firefox && query.paths.first == newest)
        #expect(main == (try Self.bytes(database)))
        #expect(wal == (try Self.bytes(database + "-wal")))
        // A parser's answer that is no URL is not believed.
        history.parser = { _, _ in HistoryMatch(fileURL: "not a url", pageURL: nil, recordedAt: nil) }
        #expect(history.lookUp(downloadAt: newest).origin == nil)
    }

    /// What a parser was handed.
    final class SeenBytes: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: (HistoryQuery, [UInt8], [UInt8]?)?
        func record(_ query: HistoryQuery, _ main: [UInt8], _ wal: [UInt8]?) { lock.withLock { seen = (query, main, wal) } }
        var value: (HistoryQuery, [UInt8], [UInt8]?)? { lock.withLock { seen } }
    }
}
