import CSystemShims
import Foundation
import GRDB
import PathBytes

/// Folders outside the vault, by identity: where a held file arrived (its release goes back
/// there, or nowhere), and where each journaled move takes a file from and to (a recovery acts on
/// those folders' descriptors, never on a journaled path through folders the account can change).
extension Vault {
    /// The folder a held file arrived in: its watched folder, the path below it, its identity and
    /// file handle, and the account whose folder it must be for a release to go there.
    public struct Arrival: Sendable, Equatable {
        public var root: String
        public var relativeFolder: String
        public var device: Int64
        public var inode: Int64
        public var handle: Data?
        public var handleType: Int32?
        public var account: Int64
        /// The inode's own handle, when its other names (hard links) were locked while it was held.
        public var inodeHandle: Data? = nil
        public var inodeHandleType: Int32? = nil
        public init(root: String, relativeFolder: String, device: Int64, inode: Int64, handle: Data?, handleType: Int32?, account: Int64) {
            (self.root, self.relativeFolder, self.device, self.inode, self.handle, self.handleType, self.account) =
                (root, relativeFolder, device, inode, handle, handleType, account)
        }
    }

    /// Records where item `id` arrived (a file held while it was checked).
    public func recordArrival(_ arrival: Arrival, of id: Int64) throws {
        try store.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO itemArrival (itemId, root, relativeFolder, device, inode, handle, handleType, account, inodeHandle, inodeHandleType)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, arrival.root, arrival.relativeFolder, arrival.device, arrival.inode, arrival.handle, arrival.handleType, arrival.account,
                                 arrival.inodeHandle, arrival.inodeHandleType])
        }
    }

    /// Where item `id` arrived, if it was recorded.
    public func arrival(of id: Int64) throws -> Arrival? {
        try store.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM itemArrival WHERE itemId = ?", arguments: [id]) else { return nil }
            var arrival = Arrival(root: row["root"], relativeFolder: row["relativeFolder"], device: row["device"], inode: row["inode"],
                                  handle: row["handle"], handleType: row["handleType"], account: row["account"])
            (arrival.inodeHandle, arrival.inodeHandleType) = (row["inodeHandle"], row["inodeHandleType"])
            return arrival
        }
    }

    /// Opens the folder item `itemId` arrived in, for writing into: by its file handle (wherever
    /// it is now), else walked to from its watched folder without following a link and checked
    /// by identity; where it is gone, the watched folder itself. It must belong to the account:
    /// never root's, never this service's. Returns the descriptor and a path for messages.
    func openArrivalFolder(_ arrival: Arrival, itemId: Int64) throws -> (Int32, String) {
        let rootFD = try? Holding.openTrusted(arrival.root)
        defer { if let rootFD { close(rootFD) } }
        var fd: Int32 = -1
        var gone = false
        if let handle = arrival.handle, let type = arrival.handleType, let mount = rootFD {
            (fd, gone) = Holding.openByHandle(handle, type: type, mount: mount, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        if fd < 0, let rootFD {
            let components = arrival.relativeFolder.split(separator: "/").map(String.init)
            fd = gone ? -1 : Holding.walk(from: rootFD, components, flags: O_RDONLY).fd
            var info = stat()
            if fd >= 0 && (fstat(fd, &info) != 0 || Int64(bitPattern: UInt64(info.st_dev)) != arrival.device || Int64(bitPattern: UInt64(info.st_ino)) != arrival.inode) {
                close(fd)
                fd = -1
            }
            if fd < 0 { fd = openat(rootFD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        }
        guard fd >= 0 else {
            throw VaultError.refused("item \(itemId): the folder it arrived in is gone, and so is \(arrival.root); it stays in the vault")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, Vault.accountMayWrite(info, account: arrival.account) else {
            let owner = info.st_uid
            close(fd)
            throw VaultError.refused("item \(itemId): the folder it arrived in now belongs to uid \(owner), not to the account (uid \(arrival.account)); it stays in the vault")
        }
        return (fd, Self.currentPath(of: fd) ?? arrival.root + (arrival.relativeFolder.isEmpty ? "" : "/" + arrival.relativeFolder))
    }

    /// Whether a folder is one the account could have written the file into itself: its own, or
    /// a sticky, world-writable one (`/tmp`, `/dev/shm`), where each keeps its own names. A file
    /// goes back, or is released, into such a folder only: never into one of root's or this
    /// service's (a folder swapped for a link to `/etc` is refused).
    static func accountMayWrite(_ info: stat, account: Int64) -> Bool {
        Int64(info.st_uid) == account || (info.st_mode & S_ISVTX != 0 && info.st_mode & 0o002 != 0)
    }

    /// After a release: the other names (hard links) of the inode it was hidden from, locked while
    /// it was held and in the vault (owner this service, mode 0000), get back the owner and mode
    /// it had. Only an inode still locked by this service is touched. Returns whether one was.
    func unlockOtherNames(_ arrival: Arrival, item: VaultItem, mount: Int32) -> Bool {
        guard let handle = arrival.inodeHandle, let type = arrival.inodeHandleType else { return false }
        let fd = handle.withUnsafeBytes { qsys_open_by_handle(mount, $0.baseAddress, handle.count, type, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o7777 == 0 else { return false }
        fchown(fd, uid_t(item.uid), gid_t(item.gid))
        fchmod(fd, mode_t(item.mode & 0o7777))
        return true
    }

    /// The path the kernel knows for an open folder (for messages and the journal only).
    static func currentPath(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, Int(PATH_MAX))
        guard length > 0 else { return nil }
        return PathBytes.string(buffer[0..<length].map { UInt8(bitPattern: $0) })
    }

    // MARK: - Journaled places

    /// Which side of a move a place is.
    enum PlaceRole: String { case source, destination }

    /// A folder a journaled move acts in, by identity, and the file's name in it.
    struct Place {
        var device: Int64
        var inode: Int64
        var handle: Data?
        var handleType: Int32?
        var name: String
    }

    /// Records the folder (open as `folder`) and name one side of journal entry `journalId` is.
    func recordPlace(journalId: Int64, role: PlaceRole, folder: Int32, name: String) throws {
        var info = stat()
        guard fstat(folder, &info) == 0 else { return }
        let handle = Holding.handle(of: folder)
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO journalPlace (journalId, role, device, inode, handle, handleType, name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           arguments: [journalId, role.rawValue, Int64(bitPattern: UInt64(info.st_dev)), Int64(bitPattern: UInt64(info.st_ino)),
                                       handle?.bytes, handle?.type, name])
        }
    }

    /// The recorded places of journal entry `journalId`.
    func places(journalId: Int64) -> [PlaceRole: Place] {
        let rows = (try? store.read { db in try Row.fetchAll(db, sql: "SELECT * FROM journalPlace WHERE journalId = ?", arguments: [journalId]) }) ?? []
        var result: [PlaceRole: Place] = [:]
        for row in rows {
            guard let role = PlaceRole(rawValue: row["role"]) else { continue }
            result[role] = Place(device: row["device"], inode: row["inode"], handle: row["handle"], handleType: row["handleType"], name: row["name"])
        }
        return result
    }

    /// Forgets the places of a journal entry that is resolved.
    func forgetPlaces(journalId: Int64) {
        try? store.write { db in try db.execute(sql: "DELETE FROM journalPlace WHERE journalId = ?", arguments: [journalId]) }
    }

    /// Opens a recorded place's folder: by its handle (mount: the vault's own folder, on the same
    /// filesystem or not: then the handle fails), else by the journaled folder path walked without
    /// following any link; only if it is the very folder (device and inode). Nil otherwise: then a
    /// recovery does not touch that side at all.
    func openPlace(_ place: Place, journaledPath: String) -> Int32? {
        var fd: Int32 = -1
        if let handle = place.handle, let type = place.handleType {
            // Any descriptor on the right filesystem decodes a handle; what it opens is checked below.
            for candidate in [root, (journaledPath as NSString).deletingLastPathComponent] where fd < 0 {
                let mount = open(PathBytes.cString(candidate), Holding.O_PATH | O_DIRECTORY | O_CLOEXEC)
                guard mount >= 0 else { continue }
                fd = handle.withUnsafeBytes { qsys_open_by_handle(mount, $0.baseAddress, handle.count, type, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
                close(mount)
            }
        }
        if fd < 0 { fd = (try? Self.openFolder((journaledPath as NSString).deletingLastPathComponent, creating: false, allowedRealPath: nil)) ?? -1 }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, Int64(bitPattern: UInt64(info.st_dev)) == place.device, Int64(bitPattern: UInt64(info.st_ino)) == place.inode else {
            close(fd)
            return nil
        }
        return fd
    }
}
