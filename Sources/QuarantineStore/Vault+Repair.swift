import Foundation
import GRDB

extension Vault {
    /// Vault folders that hold a file the database has no item for (the database was deleted,
    /// replaced or restored from an older copy), by folder name.
    public func orphans() throws -> [String] {
        let known = Set(try store.items(includeClosed: true).compactMap(\.vaultName))
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return folders.filter { name in
            !name.hasPrefix(".") && !known.contains(name) && FileManager.default.fileExists(atPath: itemPath(name))
        }.sorted()
    }

    /// Gives every orphaned vault folder its item back, from the `meta.json` written beside it
    /// when it was hidden (under a new number, its folder name kept), and records each in the
    /// history. Returns one line per folder: restored, or why not.
    @discardableResult
    public func repair(actor: String) throws -> [String] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var lines: [String] = []
        for name in try orphans() {
            let meta = folder(name) + "/meta.json"
            guard let data = FileManager.default.contents(atPath: meta), var item = try? decoder.decode(VaultItem.self, from: data) else {
                lines.append("\(folder(name)): no readable meta.json; the file stays in the vault, unlisted")
                continue
            }
            item.id = nil
            item.vaultName = name
            item.status = .quarantined
            try store.write { db in
                try item.insert(db)
                var event = AuditEvent(.recovered, itemId: item.id, path: item.originalPath, mode: item.analysisMode, actor: actor,
                                       detail: "restored to the list from \(meta)")
                try event.insert(db)
            }
            lines.append("item \(item.id ?? 0): \(item.originalPath) (from \(name)/meta.json)")
        }
        return lines
    }
}
