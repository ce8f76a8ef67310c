import Foundation
import GRDB
@testable import DownloadOrigins

/// A fake home with browser profiles laid out as the real browsers lay them out, and history
/// databases with the real schemas (dumped from Chromium 156's `History` and Firefox ESR 153's
/// `places.sqlite` by scripts/desktop/probe-history.py; only the tables the lookup reads).
struct FakeHome {
    let home: String
    var config: String { home + "/.config" }
    var downloads: String { home + "/Downloads" }
    /// A private temporary folder for the lookup's copies, to check nothing is left behind.
    var scratch: String { home + "/.scratch" }

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-origins-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home + "/Downloads", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/.scratch", withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: home)
    }

    func history(_ extra: [String] = []) -> BrowserHistory {
        BrowserHistory(home: home, configHome: config, extraProfiles: extra)
    }

    /// A downloaded file in ~/Downloads.
    @discardableResult
    func download(_ name: String) throws -> String {
        let path = downloads + "/" + name
        try Data("\u{89}PNG fake".utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func makeFolder(_ path: String) throws -> String {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    // MARK: - Chromium

    static let chromiumSchema = [
        "CREATE TABLE downloads (id INTEGER PRIMARY KEY,guid VARCHAR NOT NULL,current_path LONGVARCHAR NOT NULL,target_path LONGVARCHAR NOT NULL,start_time INTEGER NOT NULL,received_bytes INTEGER NOT NULL,total_bytes INTEGER NOT NULL,state INTEGER NOT NULL,danger_type INTEGER NOT NULL,interrupt_reason INTEGER NOT NULL,hash BLOB NOT NULL,end_time INTEGER NOT NULL,opened INTEGER NOT NULL,last_access_time INTEGER NOT NULL,transient INTEGER NOT NULL,referrer VARCHAR NOT NULL,site_url VARCHAR NOT NULL,embedder_download_data VARCHAR NOT NULL,tab_url VARCHAR NOT NULL,tab_referrer_url VARCHAR NOT NULL,http_method VARCHAR NOT NULL,by_ext_id VARCHAR NOT NULL,by_ext_name VARCHAR NOT NULL,by_web_app_id VARCHAR NOT NULL,etag VARCHAR NOT NULL,last_modified VARCHAR NOT NULL,mime_type VARCHAR(255) NOT NULL,original_mime_type VARCHAR(255) NOT NULL)",
        "CREATE TABLE downloads_url_chains (id INTEGER NOT NULL,chain_index INTEGER NOT NULL,url LONGVARCHAR NOT NULL, PRIMARY KEY (id, chain_index) )",
    ]

    /// A Chromium-family profile folder with an empty `History`; returns the database's path.
    func chromiumProfile(userData: String = "chromium", profile: String = "Default", base: String? = nil) throws -> String {
        let folder = try makeFolder((base ?? config) + "/" + userData + "/" + profile)
        let path = folder + "/History"
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for sql in Self.chromiumSchema { try db.execute(sql: sql) }
        }
        try queue.close()
        return path
    }

    /// Chromium's times: microseconds since 1601-01-01 UTC.
    static func chromiumTime(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 + 11_644_473_600) * 1_000_000)
    }

    /// One `downloads` row as Chromium 156 writes it for a finished download, with its URL chain
    /// (inserted last index first, to show the order of insertion does not matter). Its
    /// statements are cached per connection: a 10,000-download fixture prepares each once.
    static func insertChromiumDownload(_ db: Database, id: Int64, path: String, chain: [String], tabURL: String = "",
                                       referrer: String = "", siteURL: String = "", finished: Date, state: Int = 1) throws {
        let end = chromiumTime(finished)
        try db.cachedStatement(sql: """
            INSERT INTO downloads VALUES (?, ?, ?, ?, ?, 280, 280, ?, 0, 0, x'', ?, 0, 0, 0, ?, ?, x'0a080a00120018002000', ?, '', '', '', '', '', '', '', 'image/png', 'image/png')
            """).execute(arguments: [id, UUID().uuidString.lowercased(), path, path, end - 7_000, state, end, referrer, siteURL, tabURL])
        for (index, url) in chain.enumerated().reversed() {
            try db.cachedStatement(sql: "INSERT INTO downloads_url_chains (id, chain_index, url) VALUES (?, ?, ?)").execute(arguments: [id, index, url])
        }
    }

    func addChromiumDownload(to database: String, id: Int64, path: String, chain: [String], tabURL: String = "",
                             referrer: String = "", siteURL: String = "", finished: Date = Date(), state: Int = 1) throws {
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in
            try Self.insertChromiumDownload(db, id: id, path: path, chain: chain, tabURL: tabURL, referrer: referrer,
                                            siteURL: siteURL, finished: finished, state: state)
        }
        try queue.close()
    }

    // MARK: - Firefox

    static let firefoxSchema = [
        "CREATE TABLE moz_origins ( id INTEGER PRIMARY KEY, prefix TEXT NOT NULL, host TEXT NOT NULL, frecency INTEGER NOT NULL, recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, recalc_alt_frecency INTEGER NOT NULL DEFAULT 0, block_until_ms INTEGER, block_pages_until_ms INTEGER, UNIQUE (prefix, host) )",
        "CREATE TABLE moz_places (   id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, rev_host LONGVARCHAR, visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL, typed INTEGER DEFAULT 0 NOT NULL, frecency INTEGER DEFAULT -1 NOT NULL, last_visit_date INTEGER , guid TEXT, foreign_count INTEGER DEFAULT 0 NOT NULL, url_hash INTEGER DEFAULT 0 NOT NULL , description TEXT, preview_image_url TEXT, site_name TEXT, origin_id INTEGER REFERENCES moz_origins(id), recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, recalc_alt_frecency INTEGER NOT NULL DEFAULT 0)",
        "CREATE UNIQUE INDEX moz_places_guid_uniqueindex ON moz_places (guid)",
        "CREATE TABLE moz_historyvisits (  id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER, visit_date INTEGER, visit_type INTEGER, session INTEGER, source INTEGER DEFAULT 0 NOT NULL, triggeringPlaceId INTEGER)",
        "CREATE INDEX moz_historyvisits_placedateindex ON moz_historyvisits (place_id, visit_date)",
        "CREATE TABLE moz_anno_attributes (  id INTEGER PRIMARY KEY, name VARCHAR(32) UNIQUE NOT NULL)",
        "CREATE TABLE moz_annos (  id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL, anno_attribute_id INTEGER, content LONGVARCHAR, flags INTEGER DEFAULT 0, expiration INTEGER DEFAULT 0, type INTEGER DEFAULT 0, dateAdded INTEGER DEFAULT 0, lastModified INTEGER DEFAULT 0)",
        "CREATE UNIQUE INDEX moz_annos_placeattributeindex ON moz_annos (place_id, anno_attribute_id)",
        "INSERT INTO moz_anno_attributes (id, name) VALUES (1, 'downloads/destinationFileURI'), (2, 'downloads/metaData')",
    ]

    /// A Firefox profile folder with an empty `places.sqlite`; returns the database's path.
    func firefoxProfile(root: String? = nil, name: String = "k3x9q2ab.default-release") throws -> String {
        let folder = try makeFolder((root ?? home + "/.mozilla/firefox") + "/" + name)
        let path = folder + "/places.sqlite"
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for sql in Self.firefoxSchema { try db.execute(sql: sql) }
        }
        try queue.close()
        return path
    }

    /// Firefox's file:// URL for a path: what nsIFileURL gives (UTF-8, percent-encoded; `+` and
    /// most punctuation left alone, `#`, `%`, space and non-ASCII encoded), as seen in the probe.
    static func firefoxFileURI(_ path: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "/-._~!$&'()*+,;=:@")
        return "file://" + path.addingPercentEncoding(withAllowedCharacters: allowed)!
    }

    /// What Firefox ESR 153 writes for one download through a redirect: a place per URL, a link
    /// visit to the page, redirect visits, the download visit (type 7) coming from the page visit,
    /// and the `downloads/destinationFileURI` and `downloads/metaData` annotations on the final
    /// URL's place. Its statements are cached per connection, as ``insertChromiumDownload``'s.
    static func insertFirefoxDownload(_ db: Database, page: String?, redirects: [String] = [], fileURL: String,
                                      path: String, at date: Date, destination: String? = nil) throws {
        let time = Int64(date.timeIntervalSince1970 * 1_000_000)
        func place(_ url: String, hidden: Int) throws -> Int64 {
            if let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM moz_places WHERE url = ?"), arguments: [url]) { return id }
            try db.cachedStatement(sql: """
                INSERT INTO moz_places (url, title, rev_host, visit_count, hidden, frecency, last_visit_date, guid, url_hash, origin_id)
                VALUES (?, NULL, '1.0.0.721.', 1, ?, 20909, ?, ?, 125508944605237, NULL)
                """).execute(arguments: [url, hidden, time, String(UUID().uuidString.prefix(12))])
            return db.lastInsertedRowID
        }
        func visit(_ placeID: Int64, from: Int64, type: Int) throws -> Int64 {
            try db.cachedStatement(sql: "INSERT INTO moz_historyvisits (from_visit, place_id, visit_date, visit_type, session, source) VALUES (?, ?, ?, ?, 0, 0)")
                .execute(arguments: [from, placeID, time, type])
            return db.lastInsertedRowID
        }
        var pageVisit: Int64 = 0
        if let page { pageVisit = try visit(try place(page, hidden: 0), from: 0, type: 1) }
        var previous = pageVisit
        for (index, url) in redirects.enumerated() {
            previous = try visit(try place(url, hidden: 1), from: previous, type: index == 0 ? 1 : 6)
        }
        let filePlace = try place(fileURL, hidden: 0)
        _ = try visit(filePlace, from: pageVisit, type: 7)
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO moz_annos (place_id, anno_attribute_id, content, flags, expiration, type, dateAdded, lastModified)
            VALUES (?, 1, ?, 0, 4, 3, ?, ?)
            """).execute(arguments: [filePlace, destination ?? firefoxFileURI(path), time, time])
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO moz_annos (place_id, anno_attribute_id, content, flags, expiration, type, dateAdded, lastModified)
            VALUES (?, 2, ?, 0, 4, 3, ?, ?)
            """).execute(arguments: [filePlace, "{\"state\":1,\"deleted\":false,\"endTime\":\(time / 1000),\"fileSize\":280}", time, time])
    }

    func addFirefoxDownload(to database: String, page: String?, redirects: [String] = [], fileURL: String, path: String,
                            at date: Date = Date(), destination: String? = nil) throws {
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in
            try Self.insertFirefoxDownload(db, page: page, redirects: redirects, fileURL: fileURL, path: path, at: date, destination: destination)
        }
        try queue.close()
    }

    // MARK: - Files, untouched

    /// Every file under the profile folders: size, modification time and bytes; and the names.
    static func fingerprint(_ folder: String) throws -> [String: (Int, Date, Data)] {
        var result: [String: (Int, Date, Data)] = [:]
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [:] }
        while let relative = walker.nextObject() as? String {
            let path = folder + "/" + relative
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType == .typeRegular else { continue }
            result[relative] = ((attributes[.size] as? Int) ?? -1, (attributes[.modificationDate] as? Date) ?? .distantPast,
                                try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return result
    }
}
