import Foundation
import GRDB
import QuarantineBase

/// The vault's records: every step of a move is one transaction here, so the vault itself holds
/// no SQL.
extension AuditStore {
    // MARK: - Into the vault

    /// Records the intent to move `item` into the vault: the item (status `quarantining`) and a
    /// journal entry naming both places. Returns the item with its id and folder name, and the
    /// journal entry's id.
    func beginQuarantine(_ item: VaultItem, destination: (String) -> String) throws -> (VaultItem, journalId: Int64) {
        try write { db in
            var item = item
            item.status = .quarantining
            try item.insert(db)
            // Never only the number: a database lost and started afresh numbers from 1 again, and
            // its new items must not collide with the folders the vault still holds.
            let name = "\(item.id!)-" + String((0..<8).map { _ in "0123456789abcdef".randomElement()! })
            item.vaultName = name
            try item.update(db)
            var entry = JournalEntry(id: nil, itemId: item.id!, operation: .quarantine, source: item.originalPath,
                                     destination: destination(name), state: .begun, startedAt: Date())
            try entry.insert(db)
            return (item, entry.id!)
        }
    }

    /// Forgets a move into the vault that did not happen (nothing moved, or it was undone).
    func abandonQuarantine(itemId: Int64, journalId: Int64) throws {
        try write { db in
            _ = try JournalEntry.deleteOne(db, key: journalId)
            _ = try VaultItem.deleteOne(db, key: itemId)
        }
    }

    /// The move into the vault is done: the item as it now is, the journal closed, the event.
    func finishQuarantine(_ item: VaultItem, journalId: Int64, event: AuditEvent) throws {
        try write { db in
            try item.update(db)
            try Self.close(journalId, in: db)
            var event = event
            try event.insert(db)
        }
    }

    /// Records where item `itemId` came from, unless something is recorded already; with
    /// `blockedReason` (its site turned out to be blocked) that reason is added to the item's
    /// and the audit log says so. Returns whether it was recorded.
    @discardableResult
    func recordOrigin(_ origin: DownloadSource, of itemId: Int64, blockedReason: String?, actor: String) throws -> Bool {
        try write { db in
            guard var item = try VaultItem.fetchOne(db, key: itemId), item.originURL == nil else { return false }
            item.originURL = origin.url
            item.referrerURL = origin.referrer
            var detail = "came from \(origin.url) (\(origin.source)'s download history)"
            if let blockedReason {
                item.reasons = String(decoding: try JSONEncoder().encode(item.reasonList + [blockedReason]), as: UTF8.self)
                detail += "; \(blockedReason)"
            }
            try item.update(db)
            var event = AuditEvent(blockedReason == nil ? .analysed : .flagged, itemId: itemId, path: item.originalPath, mode: item.analysisMode, actor: actor, detail: detail)
            try event.insert(db)
            return true
        }
    }

    /// Records the preview written for item `itemId` after it was hidden.
    func setPreview(of itemId: Int64, name: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE item SET previewName = ? WHERE id = ?", arguments: [name, itemId])
        }
    }

    /// A cross-filesystem copy reached the disk and was verified; the original is removed next.
    func markCopied(journalId: Int64) throws {
        try write { db in
            try db.execute(sql: "UPDATE journal SET state = ? WHERE id = ?", arguments: [JournalEntry.State.copied, journalId])
        }
    }

    // MARK: - Out of the vault

    /// Records the intent to move item `itemId` from `source` to `destination`.
    func beginRelease(itemId: Int64, source: String, destination: String) throws -> Int64 {
        try write { db in
            var entry = JournalEntry(id: nil, itemId: itemId, operation: .release, source: source, destination: destination, state: .begun, startedAt: Date())
            try entry.insert(db)
            try Self.setStatus(.releasing, of: itemId, in: db)
            return entry.id!
        }
    }

    /// Whether a release is putting a file at `path` now (begun in the last minute, not finished):
    /// what arrives there is the released file, seen when the release finishes. An agent neither
    /// holds it meanwhile nor judges it before (``Intake``, the agent's hold at once).
    /// Asked for every file that arrives (twice where files are held), so it reads the index of
    /// unfinished moves (``registerUnfinishedMovesIndex(_:)``), not the whole journal, which keeps
    /// a row for every move ever made: 1.6 ms a question with 20,000 rows, 0.002 ms with the index.
    public func releaseUnderWay(into path: String) throws -> Bool {
        try read { db in
            // 'done' written out, not bound: only then can SQLite use the partial index.
            try Bool.fetchOne(db, sql: "SELECT 1 FROM journal WHERE state != 'done' AND destination = ? AND operation = ? AND startedAt > ? LIMIT 1",
                              arguments: [path, JournalEntry.Operation.release, Date(timeIntervalSinceNow: -60)]) ?? false
        }
    }

    /// The journal's unfinished moves by destination (a partial index: the rows of finished moves,
    /// nearly all of them, are not in it).
    static func registerUnfinishedMovesIndex(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v14: the journal's unfinished moves by destination") { db in
            try db.execute(sql: "CREATE INDEX journal_unfinished ON journal(destination) WHERE state != 'done'")
        }
    }

    /// Forgets a release that did not happen: the item is in the vault again.
    func abandonRelease(itemId: Int64, journalId: Int64) throws {
        try write { db in
            _ = try JournalEntry.deleteOne(db, key: journalId)
            try Self.setStatus(.quarantined, of: itemId, in: db)
        }
    }

    /// The release is done: the item as it now is, the journal closed, its bytes allowed, the
    /// version put back seen (``Vault/releasedVersion(in:name:sha256:)``), the event.
    func finishRelease(_ item: VaultItem, journalId: Int64, seen: SeenFile? = nil, event: AuditEvent) throws {
        try write { db in
            try item.update(db)
            try Self.close(journalId, in: db)
            try Self.allow(item.sha256, itemId: item.id, mode: event.mode, in: db)
            if var seen { try seen.insert(db) }
            var event = event
            try event.insert(db)
        }
    }

    // MARK: - Block and purge

    /// Records a block: the item's new status, its bytes (and maybe its site) on the block list, the events.
    func recordBlock(_ item: VaultItem, reason: String, host: String?, events: [AuditEvent]) throws {
        try write { db in
            try item.update(db)
            try Self.block(item.sha256, reason: reason, itemId: item.id, in: db)
            if let host { try Self.blockOrigin(host, itemId: item.id, in: db) }
            for var event in events { try event.insert(db) }
        }
    }

    /// Records an item's new status with its event.
    func update(_ item: VaultItem, event: AuditEvent) throws {
        try write { db in
            try item.update(db)
            var event = event
            try event.insert(db)
        }
    }

    // MARK: - Recovery

    /// Closes an interrupted move as recovery decided: a quarantine that did not finish forgets
    /// its item; anything else sets the item's status. The event says what happened.
    func resolve(_ entry: JournalEntry, finished: Bool, status: VaultItem.Status, event: AuditEvent) throws {
        try write { db in
            try Self.close(entry.id!, in: db)
            if entry.operation == .quarantine && !finished {
                _ = try VaultItem.deleteOne(db, key: entry.itemId)
            } else {
                try Self.setStatus(status, of: entry.itemId, in: db)
            }
            // A release finished here is a release like any other: its bytes are allowed.
            if entry.operation == .release && finished, let item = try VaultItem.fetchOne(db, key: entry.itemId) {
                try Self.allow(item.sha256, itemId: item.id, mode: .adult, in: db)   // the release's mode is not journaled: the narrower
            }
            var event = event
            try event.insert(db)
        }
    }

    // MARK: - Pieces

    static func close(_ journalId: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE journal SET state = ? WHERE id = ?", arguments: [JournalEntry.State.done, journalId])
    }

    static func setStatus(_ status: VaultItem.Status, of itemId: Int64, in db: Database) throws {
        try db.execute(sql: "UPDATE item SET status = ? WHERE id = ?", arguments: [status, itemId])
    }
}
