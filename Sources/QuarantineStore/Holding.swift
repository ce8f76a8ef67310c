import CSystemShims
import Foundation
import GRDB
import MediaDecoding
import PathBytes
import SensitivityAnalysis
import Locking

/// A file held out of reach while it is checked: renamed into a private folder of its watched
/// folder (same filesystem: one rename, every byte, the mode, owner, times, extended attributes
/// and inode untouched), and renamed back under its own name once it is found clean.
public struct HeldFile: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "heldFile"
    public var id: Int64?
    /// Where it was, and goes back to.
    public var originalPath: String
    /// Where it is while checked.
    public var heldPath: String
    public var device: Int64
    public var inode: Int64
    /// Its access time when it was held: reading it for the check must not change it.
    public var accessNanoseconds: Int64
    public var heldAt: Date

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    static func registerMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10: files held while checked") { db in
            try db.create(table: databaseTableName) { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("originalPath", .text).notNull()
                t.column("heldPath", .text).notNull()
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("accessNanoseconds", .integer).notNull()
                t.column("heldAt", .datetime).notNull()
            }
        }
    }
}

/// Holds files while they are checked (child mode always, adult mode with
/// `agent.hold_while_checking`). The intent is recorded before the rename, so a crash leaves
/// nothing behind: ``recover()`` (at the next start) puts every held file back.
///
/// The private folder is `.quarantine-holding` at the top of the watched folder, 0700 and
/// owned by this service; one that someone else made (or a link) is never used: another name
/// is taken. Renames go through the folder's open descriptor, so swapping the name for a link
/// later changes nothing.
public final class Holding: Sendable {
    public static let folderName = ".quarantine-holding"

    public let store: AuditStore
    /// Open private folders, by watched folder.
    let folders = Locked<[String: (fd: Int32, path: String)]>([:])

    public init(store: AuditStore) { self.store = store }

    deinit { for folder in folders.withLock({ Array($0.values) }) { close(folder.fd) } }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The open private folder of `root`, made if needed.
    func privateFolder(in root: String) throws(Failure) -> (fd: Int32, path: String) {
        if let open = folders.withLock({ $0[root] }) { return open }
        for attempt in 0..<8 {
            let path = root + "/" + Self.folderName + (attempt == 0 ? "" : ".\(attempt)")
            if mkdir(PathBytes.cString(path), 0o700) != 0 && errno != EEXIST {
                throw Failure(description: "cannot make \(path): \(String(cString: strerror(errno)))")
            }
            let fd = open(PathBytes.cString(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var info = stat()
            // Ours alone, or not used at all.
            guard fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
                close(fd)
                continue
            }
            let chosen = folders.withLock { folders -> (fd: Int32, path: String) in
                if let other = folders[root] { return other }
                folders[root] = (fd, path)
                return (fd, path)
            }
            if chosen.fd != fd { close(fd) }
            return chosen
        }
        throw Failure(description: "no private folder can be made in \(root) (each \(Self.folderName) there belongs to someone else)")
    }

    /// Moves the regular file at `path` (in the watched folder `root`) into the private
    /// folder. Throws, having moved nothing, when it cannot (gone, a link, another filesystem).
    public func hold(path: String, root: String) throws -> HeldFile {
        var info = stat()
        guard lstat(PathBytes.cString(path), &info) == 0 else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(description: "\(path) is not a regular file") }
        let folder = try privateFolder(in: root)
        // Intent first: a crash after the rename still finds it.
        let name = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var held = HeldFile(id: nil, originalPath: path, heldPath: folder.path + "/" + name, device: Int64(bitPattern: UInt64(info.st_dev)),
                            inode: Int64(bitPattern: UInt64(info.st_ino)),
                            accessNanoseconds: Int64(info.st_atim.tv_sec) * 1_000_000_000 + Int64(info.st_atim.tv_nsec), heldAt: Date())
        try store.write { db in try held.insert(db) }
        let moved = qsys_rename_noreplace(AT_FDCWD, PathBytes.cString(path), folder.fd, name) == 0
        let code = errno
        guard moved else {
            try? store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
            throw Failure(description: "\(path) cannot be held while it is checked: \(String(cString: strerror(code)))")
        }
        return held
    }

    /// Puts a held file back under its own name (or `name (1).ext` when that was taken since:
    /// nothing is overwritten). Returns where it is and its identity there.
    @discardableResult
    public func putBack(_ held: HeldFile) throws -> (path: String, identity: FileIdentity) {
        let original = URL(fileURLWithPath: held.originalPath)
        let parent = original.deletingLastPathComponent().path
        restoreAccessTime(held)
        var attempt = 0
        while true {
            let candidate = parent + "/" + Vault.candidateName(original.lastPathComponent, attempt: attempt)
            if qsys_rename_noreplace(AT_FDCWD, PathBytes.cString(held.heldPath), AT_FDCWD, PathBytes.cString(candidate)) == 0 {
                var info = stat()
                lstat(PathBytes.cString(candidate), &info)
                try? forget(held)
                return (candidate, FileIdentity(info))
            }
            let code = errno
            if code == EEXIST && attempt < 1000 { attempt += 1; continue }
            if code == ENOENT, access(PathBytes.cString(held.heldPath), F_OK) != 0 {
                // Gone from the private folder (moved into the vault meanwhile): nothing to do.
                try? forget(held)
                throw Failure(description: "\(held.heldPath) is no longer held")
            }
            throw Failure(description: "\(held.originalPath) cannot be put back: \(String(cString: strerror(code))); it stays at \(held.heldPath)")
        }
    }

    /// The check read it: its access time goes back to what it was when it was held (the
    /// modification time was never touched). Before it goes back, or into the vault.
    public func restoreAccessTime(_ held: HeldFile) {
        var times = [timespec(tv_sec: Int(held.accessNanoseconds / 1_000_000_000), tv_nsec: Int(held.accessNanoseconds % 1_000_000_000)),
                     timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_OMIT
        utimensat(AT_FDCWD, PathBytes.cString(held.heldPath), &times, AT_SYMLINK_NOFOLLOW)
    }

    /// The held file went on (into the vault): nothing is held any more.
    public func forget(_ held: HeldFile) throws {
        try store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
    }

    /// At start, after the vault's own recovery: every file still held goes back where it was
    /// (it is checked again, as a new arrival). One line per file put back.
    public func recover() -> [String] {
        let held = (try? store.read { db in try HeldFile.fetchAll(db) }) ?? []
        var lines: [String] = []
        for file in held {
            if let back = try? putBack(file) { lines.append("\(PathBytes.display(file.heldPath)) -> \(PathBytes.display(back.path))") }
        }
        return lines
    }

    /// Files held right now.
    public func heldFiles() throws -> [HeldFile] { try store.read { db in try HeldFile.fetchAll(db) } }
}
