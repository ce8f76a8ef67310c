import Foundation
import GRDB

/// How far an interrupted video analysis got: the stretches of media time already covered and
/// judged clean, for the next run to skip. Keyed by the file's bytes (its sha256, so a file put
/// back or renamed still matches) and the basis they were judged on (the policy, the gap, the
/// models): under another basis the stretches count for nothing.
struct VideoProgressRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "videoProgress"
    var sha256: String
    var basis: String
    /// `[[start, end], ...]` seconds, as JSON.
    var covered: String
    var updatedAt: Date

    static func registerMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v11: how far interrupted video analyses got") { db in
            try db.create(table: databaseTableName) { t in
                t.primaryKey("sha256", .text)
                t.column("basis", .text).notNull()
                t.column("covered", .text).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
        }
    }
}

extension AuditStore {
    /// The stretches (`[[start, end], ...]` seconds) an interrupted analysis of the bytes
    /// `sha256` covered on `basis`; empty when none, or on another basis.
    public func videoProgress(sha256: String, basis: String) throws -> [[Double]] {
        try read { db in
            guard let record = try VideoProgressRecord.fetchOne(db, key: sha256), record.basis == basis else { return [] }
            return (try? JSONDecoder().decode([[Double]].self, from: Data(record.covered.utf8))) ?? []
        }
    }

    /// Records how far the analysis of `sha256` on `basis` got (replacing what was there).
    public func saveVideoProgress(sha256: String, basis: String, covered: [[Double]]) throws {
        let text = String(decoding: (try? JSONEncoder().encode(covered)) ?? Data("[]".utf8), as: UTF8.self)
        try write { db in try VideoProgressRecord(sha256: sha256, basis: basis, covered: text, updatedAt: Date()).save(db) }
    }

    /// Forgets the progress of `sha256` (its analysis ended, one way or another).
    public func forgetVideoProgress(sha256: String) throws {
        _ = try write { db in try VideoProgressRecord.deleteOne(db, key: sha256) }
    }
}
