import Foundation
import GRDB
import QuarantineBase

/// A release someone asked for without the guardian PIN (child mode): kept until a guardian
/// releases or blocks the item, and shown to them in `quarantine list`. Asking weakens nothing,
/// so it needs no PIN; only the guardian's release does.
public struct ReleaseRequest: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "releaseRequest"
    public var itemId: Int64
    public var requestedAt: Date
    public var actor: String

    static func registerMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v9: release requests") { db in
            try db.create(table: databaseTableName) { t in
                t.primaryKey("itemId", .integer).references("item", onDelete: .cascade)
                t.column("requestedAt", .datetime).notNull()
                t.column("actor", .text).notNull()
            }
        }
    }
}

extension AuditStore {
    /// Records that `actor` asked for item `itemId` back, with its audit event, in one
    /// transaction (asking again keeps the first request's time).
    public func requestRelease(itemId: Int64, mode: AnalysisMode, actor: String, at date: Date = Date()) throws {
        try write { db in
            guard try ReleaseRequest.fetchOne(db, key: itemId) == nil else { return }
            try ReleaseRequest(itemId: itemId, requestedAt: date, actor: actor).insert(db)
            var event = AuditEvent(.releaseRequested, itemId: itemId, path: nil, mode: mode, actor: actor, detail: "asked for it back without the guardian PIN")
            try event.insert(db)
        }
    }

    /// The requests for items still in the vault, by item.
    public func openReleaseRequests() throws -> [Int64: ReleaseRequest] {
        try read { db in
            let requests = try ReleaseRequest.fetchAll(db, sql: """
                SELECT releaseRequest.* FROM releaseRequest JOIN item ON item.id = releaseRequest.itemId WHERE item.status = ?
                """, arguments: [VaultItem.Status.quarantined.rawValue])
            return Dictionary(uniqueKeysWithValues: requests.map { ($0.itemId, $0) })
        }
    }
}
