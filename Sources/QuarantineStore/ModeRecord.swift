import Foundation
import GRDB
import QuarantineBase

/// The mode the guardian last set with `quarantine mode`, kept in the audit database beside the
/// PIN, so that an edit of the configuration file alone, or a file that cannot be read, never
/// takes child mode away.
public struct ModeRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "modeRecord"
    var id: Int = 1
    public var mode: AnalysisMode
    public var setAt: Date

    public init(mode: AnalysisMode, setAt: Date = Date()) {
        self.mode = mode
        self.setAt = setAt
    }

    static func registerMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4: the mode set with 'quarantine mode'") { db in
            try db.create(table: databaseTableName) { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("mode", .text).notNull()
                t.column("setAt", .datetime).notNull()
            }
        }
    }
}

extension AnalysisMode: DatabaseValueConvertible {}

extension AuditStore {
    /// The mode last set with `quarantine mode`, if ever.
    public func recordedMode() throws -> ModeRecord? {
        try read { db in try ModeRecord.fetchOne(db) }
    }

    /// Records the mode set with `quarantine mode`, with its audit event, in one transaction.
    public func recordMode(_ mode: AnalysisMode, from old: AnalysisMode, actor: String) throws {
        try write { db in
            try ModeRecord(mode: mode).save(db)
            var event = AuditEvent(.modeChanged, path: nil, mode: mode, actor: actor, detail: "\(old.rawValue) -> \(mode.rawValue)")
            try event.insert(db)
        }
    }
}
