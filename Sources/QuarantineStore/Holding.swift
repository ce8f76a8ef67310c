import CSystemShims
import Foundation
import GRDB
import MediaDecoding
import PathBytes
import Locking

/// A file held out of reach while it is checked: renamed out of the watched folders into the
/// holding folder (same filesystem: one rename, every byte, the mode, owner, times, extended
/// attributes and inode untouched), or copied into the service's own state where no rename
/// reaches it, and put back under its own name, into the folder it arrived in, once it is found
/// clean.
public struct HeldFile: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "heldFile"
    public var id: Int64?
    /// Where it was, and goes back to (for the records: the put-back goes by the folder's identity).
    public var originalPath: String
    /// Where it is while checked, as a path for people; the service reaches it through the
    /// holding folder's descriptor (``Holding/path(of:)``).
    public var heldPath: String
    public var device: Int64
    public var inode: Int64
    /// Its access time when it was held: reading it for the check must not change it.
    public var accessNanoseconds: Int64
    public var heldAt: Date
    /// Its name in the folder it is held in.
    public var heldName: String? = nil
    /// The identity of the folder it is held in (the holding folder, or the copies folder).
    public var holdingDevice: Int64? = nil
    public var holdingInode: Int64? = nil
    /// Held as a copy (no rename reached the holding folder): the original name was removed.
    public var copied: Bool? = nil
    /// The watched folder it arrived in, and the folder it arrived in below it.
    public var root: String? = nil
    public var relativeFolder: String? = nil
    /// The identity of the folder it arrived in, and its file handle (where the filesystem has them).
    public var folderDevice: Int64? = nil
    public var folderInode: Int64? = nil
    public var folderHandle: Data? = nil
    public var folderHandleType: Int32? = nil
    /// The inode's own owner, group and mode when it was held, restored exactly when it goes back.
    public var ownerUid: Int64? = nil
    public var ownerGid: Int64? = nil
    public var fileMode: Int64? = nil
    /// It had other names (hard links): its owner and mode were changed so that none of them
    /// reaches it while it is held.
    public var linksLocked: Bool? = nil
    /// The file handle of the inode itself (when its other names were locked): a release of the
    /// vault item it becomes gives those names back their owner and mode.
    public var inodeHandle: Data? = nil
    public var inodeHandleType: Int32? = nil

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

    /// After v11: held files are reached by identities and descriptors, not by paths.
    static func registerIdentityMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v12: held files by identity, outside the watched folders") { db in
            try db.alter(table: databaseTableName) { t in
                t.add(column: "heldName", .text)
                t.add(column: "holdingDevice", .integer)
                t.add(column: "holdingInode", .integer)
                t.add(column: "copied", .boolean)
                t.add(column: "root", .text)
                t.add(column: "relativeFolder", .text)
                t.add(column: "folderDevice", .integer)
                t.add(column: "folderInode", .integer)
                t.add(column: "folderHandle", .blob)
                t.add(column: "folderHandleType", .integer)
                t.add(column: "ownerUid", .integer)
                t.add(column: "ownerGid", .integer)
                t.add(column: "fileMode", .integer)
                t.add(column: "linksLocked", .boolean)
                t.add(column: "inodeHandle", .blob)
                t.add(column: "inodeHandleType", .integer)
            }
            // The folder a held file arrived in, for the vault item it became (its release).
            try db.create(table: "itemArrival") { t in
                t.column("itemId", .integer).primaryKey()
                t.column("root", .text).notNull()
                t.column("relativeFolder", .text).notNull()
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("handle", .blob)
                t.column("handleType", .integer)
                t.column("account", .integer).notNull()
                // The inode's own handle, when its other names were locked (owner and mode in the item).
                t.column("inodeHandle", .blob)
                t.column("inodeHandleType", .integer)
            }
            // The folders a journaled move takes a file from and to, by identity (recovery).
            try db.create(table: "journalPlace") { t in
                t.column("journalId", .integer).notNull()
                t.column("role", .text).notNull()
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("handle", .blob)
                t.column("handleType", .integer)
                t.column("name", .text).notNull()
                t.primaryKey(["journalId", "role"])
            }
            try db.create(table: "holdingFolder") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("madeAt", .datetime).notNull()
            }
        }
    }
}

/// Holds files while they are checked (child mode always, adult mode with
/// `agent.hold_while_checking`). The intent is recorded before the rename, so a crash leaves
/// nothing unaccounted for.
///
/// The holding folder is made by this service in `parent` (the account's home for the guardian
/// service: the same mount as the watched folders), owned by it, 0700, under a random name, and
/// pinned by its descriptor and identity: its name plays no part (the account may rename it, or
/// make a folder of that name: neither is used; a folder it did not make is never used). Every
/// watched folder is opened once and pinned; files are reached from it one component at a time
/// without following a symbolic link, and moved with `renameat2(RENAME_NOREPLACE)` between
/// descriptors. A file goes back only into the folder it arrived in, found by its identity, and
/// only if that folder belongs to `account`.
public final class Holding: Sendable {
    /// The prefix of the holding folders' names (random after it). Only for people reading a
    /// listing: nothing is decided by a name.
    public static let namePrefix = ".quarantine-held-"

    /// A folder opened once: its descriptor, identity and (for messages) the path it had.
    struct Pinned: Sendable {
        var fd: Int32
        var device: UInt64
        var inode: UInt64
        var path: String
        /// Opened for one use (a root that may be unmounted): the caller closes it.
        var owned = false
        var key: String { "\(device):\(inode)" }
    }

    public let store: AuditStore
    /// Where the holding folder is made.
    public let parent: String
    /// Where files are held as copies when no rename reaches the holding folder.
    public let copiesFolder: String
    /// Whose folders files go back into.
    public let account: uid_t
    /// Holding folders by identity ("dev:ino"), and the one new files go to.
    let areas = Locked<(byKey: [String: Pinned], current: String?)>(([:], nil))
    let copies = Locked<Pinned?>(nil)
    /// Watched folders, pinned at first use.
    let roots = Locked<[String: Pinned]>([:])
    /// Watched folders other accounts write in too (`/tmp`, `/dev/shm`, removable media): only
    /// ``account``'s own files are held there, and put back there.
    let sharedRoots = Locked<Set<String>>([])
    /// Watched folders that may be unmounted while the service runs (removable media): opened
    /// for each use and closed after, never kept open (an open descriptor keeps a medium busy,
    /// and `umount` would fail).
    let removableRoots = Locked<Set<String>>([])
    /// Files being held right now, by the path they arrived at. A hold by a copy (another
    /// filesystem) takes a while, and its record says where the copy will be before it is
    /// there: ``held(originalPath:)`` and another hold of the same path wait for it to end, so
    /// that neither takes a hold being made for a lost one (and forgets its record: the copy
    /// would then be kept by no one).
    let holdsInProgress = Locked<Set<String>>([])

    /// `parent` must be on the same mount as the watched folders for a hold to be one rename
    /// (the default: the database's folder); `copiesFolder` (default: `holding-copies` beside
    /// the database) must be private to this service.
    public init(store: AuditStore, parent: String? = nil, copiesFolder: String? = nil, account: uid_t = geteuid()) {
        self.store = store
        let dataFolder = (store.path as NSString).deletingLastPathComponent
        self.parent = parent ?? dataFolder
        self.copiesFolder = copiesFolder ?? dataFolder + "/holding-copies"
        self.account = account
    }

    deinit {
        let (areas, root, copy) = (self.areas.withLock { Array($0.byKey.values) }, roots.withLock { Array($0.values) }, copies.withLock { $0 })
        for pinned in areas + root + (copy.map { [$0] } ?? []) { close(pinned.fd) }
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// The file is fine where it is held, but its folder cannot take it back (gone, replaced,
        /// not the account's): it stays held, or goes into the vault, but never elsewhere.
        public var refusedPutBack = false
        /// It is in a holding folder: held already, nothing to do.
        public var alreadyHeld = false
        public init(description: String, refusedPutBack: Bool = false, alreadyHeld: Bool = false) {
            self.description = description
            self.refusedPutBack = refusedPutBack
            self.alreadyHeld = alreadyHeld
        }
    }

    /// O_PATH (Glibc's module leaves it out without _GNU_SOURCE): a descriptor that only names a place.
    static let O_PATH: Int32 = LongPaths.O_PATH

    static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    // MARK: - Folders, pinned

    /// Opens the folder at the absolute `path` from `/`, one component at a time, never
    /// following a symbolic link that someone other than root could have made: a link is followed
    /// only when it belongs to root and lies in a folder of root's that no one else may write
    /// (a /home that the administrator made a link). `flags` for the last component.
    static func openTrusted(_ path: String, flags: Int32 = O_PATH) throws(Failure) -> Int32 {
        var fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open /: \(describe(errno))") }
        let components = path.split(separator: "/").filter { $0 != "." && !$0.isEmpty }.map(String.init)
        guard !components.contains("..") else { close(fd); throw Failure(description: "\(path) has a '..' component") }
        var walked = ""
        var hops = 0
        var queue = components[...]
        while let name = queue.popFirst() {
            walked += "/" + name
            let last = queue.isEmpty
            let next = openat(fd, PathBytes.cString(name), (last ? flags : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next >= 0 { close(fd); fd = next; continue }
            let code = errno
            var link = stat(), folder = stat()
            if (code == ELOOP || code == ENOTDIR), hops < 8, fstatat(fd, PathBytes.cString(name), &link, AT_SYMLINK_NOFOLLOW) == 0, link.st_mode & S_IFMT == S_IFLNK,
               link.st_uid == 0, fstat(fd, &folder) == 0, folder.st_uid == 0, folder.st_mode & 0o022 == 0 {
                // root's own link, in root's own folder: its target, from `/` or from here.
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let length = readlinkat(fd, PathBytes.cString(name), &buffer, Int(PATH_MAX))
                guard length > 0 else { close(fd); throw Failure(description: "cannot read the link \(walked): \(describe(errno))") }
                let target = PathBytes.string(buffer[0..<length].map { UInt8(bitPattern: $0) })
                let parts = target.split(separator: "/").filter { $0 != "." && !$0.isEmpty }.map(String.init)
                guard !parts.contains("..") else { close(fd); throw Failure(description: "the link \(walked) has a '..' in its target") }
                hops += 1
                if target.hasPrefix("/") {
                    close(fd)
                    fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)
                }
                queue = (parts + Array(queue))[...]
                continue
            }
            close(fd)
            throw Failure(description: code == ELOOP || code == ENOTDIR ? "\(walked) is not a folder (a symbolic link, or a file)" : "cannot open \(walked): \(describe(code))")
        }
        if flags != O_PATH && components.isEmpty {
            let reopened = openat(fd, ".", flags | O_DIRECTORY | O_CLOEXEC)
            close(fd)
            guard reopened >= 0 else { throw Failure(description: "cannot open /: \(describe(errno))") }
            return reopened
        }
        return fd
    }

    /// Opens the folder `components` below the open folder `fd`, never following a symbolic link.
    static func walk(from fd: Int32, _ components: [String], flags: Int32 = O_PATH) -> (fd: Int32, error: Int32) {
        var current = dup(fd)
        guard current >= 0 else { return (-1, errno) }
        for (index, name) in components.enumerated() {
            let last = index == components.count - 1
            let next = openat(current, PathBytes.cString(name), (last ? flags : O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(current)
            guard next >= 0 else { return (-1, code) }
            current = next
        }
        return (current, 0)
    }

    static func pinned(_ fd: Int32, path: String) -> Pinned? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return Pinned(fd: fd, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), path: path)
    }

    /// Says which watched folders other accounts write in too (only ``account``'s own files are
    /// held from them) and which may be unmounted (never kept open). Their pins are dropped.
    /// A medium once said stays known as one after it is unmounted: its files still held are
    /// refused their put-back with that reason, and its mount point is never kept open.
    public func setSharedRoots(_ shared: Set<String>, removable: Set<String>) {
        sharedRoots.withLock { $0 = shared.union(removable) }
        removableRoots.withLock { $0.formUnion(removable) }
        let dropped = roots.withLock { roots -> [Pinned] in
            let gone = roots.filter { removable.contains($0.key) }
            for key in gone.keys { roots[key] = nil }
            return Array(gone.values)
        }
        for pin in dropped { close(pin.fd) }
    }

    /// The watched folder `root`, opened once (O_PATH, O_DIRECTORY, no links but root's).
    /// `again`: opened anew (it was renamed or replaced since), and pinned as it is now.
    /// A removable root is opened for this use only (``Pinned/owned``: the caller closes it).
    func pinRoot(_ root: String, again: Bool = false) throws(Failure) -> Pinned {
        if removableRoots.withLock({ $0.contains(root) }) {
            let fd = try Self.openTrusted(root)
            guard var pin = Self.pinned(fd, path: root) else { close(fd); throw Failure(description: "cannot examine \(root): \(Self.describe(errno))") }
            pin.owned = true
            return pin
        }
        if !again, let open = roots.withLock({ $0[root] }) { return open }
        let fd = try Self.openTrusted(root)
        guard let pin = Self.pinned(fd, path: root) else { close(fd); throw Failure(description: "cannot examine \(root): \(Self.describe(errno))") }
        let old = roots.withLock { roots -> Pinned? in
            defer { roots[root] = pin }
            return roots[root]
        }
        if let old { close(old.fd) }
        return pin
    }

    /// The folder new files are held in: found again by identity, or made.
    func currentArea() throws(Failure) -> Pinned {
        if let pin = areas.withLock({ areas in areas.current.flatMap { areas.byKey[$0] } }) { return pin }
        findAreas()
        if let pin = areas.withLock({ areas in areas.current.flatMap { areas.byKey[$0] } }) { return pin }
        return try makeArea()
    }

    /// Checks that `fd` is a holding folder: a folder of ours, 0700, as this service made it.
    static func isOurs(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0o700
    }

    /// Finds the holding folders this service made (recorded by identity) among the entries of
    /// `parent`, whatever they are called now; the newest found takes new files.
    func findAreas() {
        let recorded = (try? store.read { db in
            try Row.fetchAll(db, sql: "SELECT device, inode FROM holdingFolder ORDER BY id").map { (Int64($0["device"] as Int64), Int64($0["inode"] as Int64)) }
        }) ?? []
        guard !recorded.isEmpty, let parentFD = try? Self.openTrusted(parent, flags: O_RDONLY) else { return }
        defer { close(parentFD) }
        var newest: (index: Int, key: String)?
        for (name, device, inode) in Self.entries(of: parentFD) {
            guard let index = recorded.firstIndex(where: { $0.0 == Int64(bitPattern: device) && $0.1 == Int64(bitPattern: inode) }) else { continue }
            let fd = openat(parentFD, PathBytes.cString(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            guard Self.isOurs(fd), let pin = Self.pinned(fd, path: parent + "/" + name), pin.device == device, pin.inode == inode else { close(fd); continue }
            let known = areas.withLock { areas -> Bool in
                if areas.byKey[pin.key] != nil { return true }
                areas.byKey[pin.key] = pin
                return false
            }
            if known { close(fd) }
            if newest == nil || newest!.index < index { newest = (index, pin.key) }
        }
        if let newest { areas.withLock { if $0.current == nil { $0.current = newest.key } } }
    }

    /// The names and identities of the entries of the open folder `fd` (not following links).
    static func entries(of fd: Int32) -> [(String, UInt64, UInt64)] {
        let copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let dir = fdopendir(copy) else { return [] }
        defer { closedir(dir) }
        var result: [(String, UInt64, UInt64)] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { PathBytes.string(cString: $0) } }
            if name == "." || name == ".." { continue }
            var info = stat()
            guard fstatat(fd, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            result.append((name, UInt64(info.st_dev), UInt64(info.st_ino)))
        }
        return result
    }

    /// Makes a new holding folder in `parent` under a random name, and records its identity.
    /// A name someone else took is never used: another is drawn.
    func makeArea() throws(Failure) -> Pinned {
        let parentFD = try Self.openTrusted(parent, flags: O_RDONLY)
        defer { close(parentFD) }
        for _ in 0..<16 {
            let name = Self.namePrefix + String(UInt64.random(in: 1...UInt64.max), radix: 16)
            guard mkdirat(parentFD, PathBytes.cString(name), 0o700) == 0 else {
                if errno == EEXIST { continue }
                throw Failure(description: "cannot make a holding folder in \(parent): \(Self.describe(errno))")
            }
            let fd = openat(parentFD, PathBytes.cString(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            fchmod(fd, 0o700)
            // Swapped for someone else's folder between the mkdir and the open: not used.
            guard Self.isOurs(fd), let pin = Self.pinned(fd, path: parent + "/" + name) else { close(fd); continue }
            do {
                try store.write { db in
                    try db.execute(sql: "INSERT INTO holdingFolder (device, inode, madeAt) VALUES (?, ?, ?)",
                                   arguments: [Int64(bitPattern: pin.device), Int64(bitPattern: pin.inode), Date()])
                }
            } catch {
                close(fd)
                unlinkat(parentFD, PathBytes.cString(name), AT_REMOVEDIR)
                throw Failure(description: "cannot record the holding folder: \(error)")
            }
            areas.withLock { areas in
                areas.byKey[pin.key] = pin
                areas.current = pin.key
            }
            return pin
        }
        throw Failure(description: "no holding folder could be made in \(parent)")
    }

    /// The holding folder is gone (removed while empty): new files go to a new one.
    func dropCurrentArea(_ pin: Pinned) {
        areas.withLock { areas in if areas.current == pin.key { areas.current = nil } }
    }

    /// The private folder for copies (the service's own state), made and pinned.
    func copiesArea() throws(Failure) -> Pinned {
        if let pin = copies.withLock({ $0 }) { return pin }
        let parentFD = try Self.openTrusted((copiesFolder as NSString).deletingLastPathComponent, flags: O_RDONLY)
        defer { close(parentFD) }
        let name = (copiesFolder as NSString).lastPathComponent
        if mkdirat(parentFD, PathBytes.cString(name), 0o700) != 0 && errno != EEXIST { throw Failure(description: "cannot make \(copiesFolder): \(Self.describe(errno))") }
        let fd = openat(parentFD, PathBytes.cString(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open \(copiesFolder): \(Self.describe(errno))") }
        guard Self.isOurs(fd), let pin = Self.pinned(fd, path: copiesFolder) else {
            close(fd)
            throw Failure(description: "\(copiesFolder) is not a private folder of this service")
        }
        let chosen = copies.withLock { copies -> Pinned in
            if let other = copies { return other }
            copies = pin
            return pin
        }
        if chosen.fd != fd { close(fd) }
        return chosen
    }

    /// Whether the folder (device, inode) is one of the holding folders or the copies folder.
    func isHoldingFolder(device: UInt64, inode: UInt64) -> Bool {
        let key = "\(device):\(inode)"
        if areas.withLock({ $0.byKey[key] != nil }) { return true }
        return copies.withLock { $0?.key == key }
    }

    /// The open folder a held file is in (by its recorded identity), or nil when it is gone.
    func folder(of held: HeldFile) -> Pinned? {
        guard let device = held.holdingDevice, let inode = held.holdingInode else {
            // Held before v12 (by path, in the watched folder): reached as it was.
            let path = (held.heldPath as NSString).deletingLastPathComponent
            guard let fd = try? Self.openTrusted(path, flags: O_RDONLY) else { return nil }
            return Self.pinned(fd, path: path)
        }
        let key = "\(UInt64(bitPattern: device)):\(UInt64(bitPattern: inode))"
        if held.copied == true, let pin = try? copiesArea(), pin.key == key { return pin }
        if let pin = areas.withLock({ $0.byKey[key] }) { return pin }
        findAreas()
        return areas.withLock { $0.byKey[key] }
    }

    /// The name of a held file in its folder.
    static func name(of held: HeldFile) -> String { held.heldName ?? (held.heldPath as NSString).lastPathComponent }

    /// A path to the held file that goes through the holding folder's descriptor (never through
    /// a folder the account can rename or replace): what the check opens.
    public func path(of held: HeldFile) -> String {
        guard held.holdingDevice != nil, let folder = folder(of: held) else { return held.heldPath }
        return "/proc/self/fd/\(folder.fd)/\(Self.name(of: held))"
    }

    // MARK: - Holding

    /// `path` below the watched folder `root` as the folders to walk from it and the file's
    /// name; refused when it is not below it or names `..`.
    static func parts(of path: String, under root: String) throws(Failure) -> (folders: [String], name: String) {
        guard path.hasPrefix(root.hasSuffix("/") ? root : root + "/") else { throw Failure(description: "\(path) is not in the watched folder \(root)") }
        var components = path.dropFirst(root.hasSuffix("/") ? root.count : root.count + 1).split(separator: "/").map(String.init)
        guard let name = components.popLast(), !components.contains(".."), name != ".." else { throw Failure(description: "\(path): not a file's path") }
        return (components, name)
    }

    /// The folder `folders` below the pinned watched folder `root` (`again`: pinned anew), opened
    /// without following a link: its descriptor, or -1 and the error.
    func openFolder(_ folders: [String], under root: String, again: Bool = false) throws(Failure) -> (fd: Int32, error: Int32) {
        let pin = try pinRoot(root, again: again)
        defer { if pin.owned { close(pin.fd) } }
        return Self.walk(from: pin.fd, folders)
    }

    /// Moves the regular file at `path` (in the watched folder `root`) out of reach: into the
    /// holding folder, or (another filesystem) as a copy into the service's own state. With
    /// `expected`, only that file (device and inode). Throws, having moved nothing, when it
    /// cannot (gone, a link, not below `root`).
    public func hold(path: String, root: String, expected: FileIdentity? = nil) throws -> HeldFile {
        let (components, name) = try Self.parts(of: path, under: root)
        while !holdsInProgress.withLock({ $0.insert(path).inserted }) { usleep(2_000) }
        defer { _ = holdsInProgress.withLock { $0.remove(path) } }
        var (folderFD, code) = try openFolder(components, under: root)
        var info = stat()
        if folderFD < 0 || fstatat(folderFD, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) != 0 {
            // The watched folder was renamed or replaced since it was pinned: as it is now.
            if folderFD >= 0 { close(folderFD) }
            (folderFD, code) = try openFolder(components, under: root, again: true)
            guard folderFD >= 0 else { throw Failure(description: "\(path): its folder cannot be opened without following a link: \(Self.describe(code))") }
            guard fstatat(folderFD, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                let code = errno
                close(folderFD)
                throw Failure(description: "\(path): \(Self.describe(code))")
            }
        }
        defer { close(folderFD) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(description: "\(path) is not a regular file") }
        if let expected, expected.device != UInt64(info.st_dev) || expected.inode != UInt64(info.st_ino) {
            throw Failure(description: "\(path) was replaced since it arrived")
        }
        // In a folder every account writes in, another account's file is not this service's to move.
        if info.st_uid != account, sharedRoots.withLock({ $0.contains(root) }) {
            throw Failure(description: "\(path) belongs to uid \(info.st_uid), not to the account (uid \(account)): left where it is")
        }
        var folderInfo = stat()
        fstat(folderFD, &folderInfo)
        // A file already held (a watcher that walked into a holding folder made after it started).
        _ = try? currentArea()
        if isHoldingFolder(device: UInt64(folderInfo.st_dev), inode: UInt64(folderInfo.st_ino)) {
            throw Failure(description: "\(path) is held already", alreadyHeld: true)
        }
        let handle = Self.handle(of: folderFD)
        let heldName = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var area = try currentArea()
        var held = HeldFile(id: nil, originalPath: path, heldPath: area.path + "/" + heldName, device: Int64(bitPattern: UInt64(info.st_dev)),
                            inode: Int64(bitPattern: UInt64(info.st_ino)),
                            accessNanoseconds: Int64(info.st_atim.tv_sec) * 1_000_000_000 + Int64(info.st_atim.tv_nsec), heldAt: Date(),
                            heldName: heldName, holdingDevice: Int64(bitPattern: area.device), holdingInode: Int64(bitPattern: area.inode), copied: false,
                            root: root, relativeFolder: components.joined(separator: "/"),
                            folderDevice: Int64(bitPattern: UInt64(folderInfo.st_dev)), folderInode: Int64(bitPattern: UInt64(folderInfo.st_ino)),
                            folderHandle: handle?.bytes, folderHandleType: handle?.type,
                            ownerUid: Int64(info.st_uid), ownerGid: Int64(info.st_gid), fileMode: Int64(info.st_mode & 0o7777), linksLocked: false)
        // Intent first: a crash after the rename still finds it.
        try store.write { db in try held.insert(db) }
        var moved = qsys_rename_noreplace(folderFD, PathBytes.cString(name), area.fd, heldName) == 0
        var code2 = errno
        if !moved && code2 == ENOENT && fstatat(folderFD, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) == 0 {
            // The holding folder was removed (it was empty): a new one.
            dropCurrentArea(area)
            if let fresh = try? currentArea() {
                area = fresh
                held.heldPath = area.path + "/" + heldName
                held.holdingDevice = Int64(bitPattern: area.device)
                held.holdingInode = Int64(bitPattern: area.inode)
                try store.write { db in try held.update(db) }
                moved = qsys_rename_noreplace(folderFD, PathBytes.cString(name), area.fd, heldName) == 0
                code2 = errno
            }
        }
        if !moved && code2 == EXDEV {
            do { try holdByCopy(folderFD: folderFD, name: name, expected: info, held: &held) } catch {
                try? store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
                throw error
            }
            return held
        }
        guard moved else {
            try? store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
            throw Failure(description: "\(path) cannot be held while it is checked: \(Self.describe(code2))")
        }
        // What moved must be the file that was examined, not one swapped in at that name.
        var now = stat()
        guard fstatat(area.fd, heldName, &now, AT_SYMLINK_NOFOLLOW) == 0, now.st_dev == info.st_dev, now.st_ino == info.st_ino else {
            _ = qsys_rename_noreplace(area.fd, heldName, folderFD, PathBytes.cString(name))
            try? store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
            throw Failure(description: "\(path) was replaced while it was being held; left where it is")
        }
        // No fsync: a rename lost to a power cut leaves the file where it arrived, and its record
        // is forgotten at the next start (the file is judged as a new arrival); nothing is lost.
        if now.st_nlink > 1 { lockLinks(&held, in: area.fd) }
        return held
    }

    /// No rename reaches the holding folder (the watched folder is on another filesystem):
    /// copied into the service's own state, flushed, and only then the original name removed,
    /// if it still names the file that was copied, unchanged.
    func holdByCopy(folderFD: Int32, name: String, expected: stat, held: inout HeldFile) throws {
        let copies = try copiesArea()
        let heldName = Self.name(of: held)
        let source = openat(folderFD, PathBytes.cString(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard source >= 0 else { throw Failure(description: "\(held.originalPath) cannot be opened to be held: \(Self.describe(errno))") }
        defer { close(source) }
        var info = stat()
        guard fstat(source, &info) == 0, info.st_dev == expected.st_dev, info.st_ino == expected.st_ino else {
            throw Failure(description: "\(held.originalPath) was replaced while it was being held; left where it is")
        }
        // Only a copy that fits with room to spare: a huge (or sparse) file would fill the
        // service's disk first (then the caller locks it where it is instead).
        if let refusal = Vault.copyRefusal(size: Int64(info.st_size), into: copies.fd, describing: held.originalPath) {
            throw Failure(description: refusal)
        }
        held.heldPath = copies.path + "/" + heldName
        held.holdingDevice = Int64(bitPattern: copies.device)
        held.holdingInode = Int64(bitPattern: copies.inode)
        held.copied = true
        try store.write { db in try held.update(db) }
        let target = openat(copies.fd, heldName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard target >= 0 else { throw Failure(description: "cannot make the copy \(held.heldPath): \(Self.describe(errno))") }
        do {
            defer { close(target) }
            try Vault.copy(from: source, to: target)
            for (key, value) in Vault.extendedAttributes(fd: source) {
                _ = value.withUnsafeBytes { qsys_fsetxattr(target, key, $0.baseAddress, value.count) }
            }
            var times = [info.st_atim, info.st_mtim]
            futimens(target, &times)
            guard fsync(target) == 0 else { throw Failure(description: "cannot flush the copy \(held.heldPath): \(Self.describe(errno))") }
        } catch {
            unlinkat(copies.fd, heldName, 0)
            throw error
        }
        fsync(copies.fd)
        var after = stat(), there = stat()
        guard fstat(source, &after) == 0, after.st_size == info.st_size, after.st_mtim.tv_sec == info.st_mtim.tv_sec, after.st_mtim.tv_nsec == info.st_mtim.tv_nsec,
              fstatat(folderFD, PathBytes.cString(name), &there, AT_SYMLINK_NOFOLLOW) == 0, there.st_dev == info.st_dev, there.st_ino == info.st_ino else {
            unlinkat(copies.fd, heldName, 0)
            throw Failure(description: "\(held.originalPath) changed while it was being copied to be held; left where it is")
        }
        if info.st_nlink > 1 {
            // Its other names keep the original inode: nothing reaches it through them either.
            guard account != geteuid(), fchown(source, geteuid(), getegid()) == 0, fchmod(source, 0) == 0 else {
                unlinkat(copies.fd, heldName, 0)
                throw Failure(description: "\(held.originalPath) has other names (hard links) on another filesystem: it cannot be held")
            }
            held.linksLocked = true
            if let handle = Self.handle(of: source) { (held.inodeHandle, held.inodeHandleType) = (handle.bytes, handle.type) }
            try? store.write { [held] db in try held.update(db) }
        }
        guard unlinkat(folderFD, PathBytes.cString(name), 0) == 0 else {
            unlinkat(copies.fd, heldName, 0)
            throw Failure(description: "\(held.originalPath) cannot be removed once copied: \(Self.describe(errno))")
        }
        fsync(folderFD)
    }

    /// The last resort of child mode for a file that could be neither held nor moved into the
    /// vault (a copy of it cannot fit, say): the file where it is, if it is still the version
    /// `expected` names, gets this service as its owner and mode 0000, so that the account reads
    /// it under no name. Reached by the same walk as ``hold(path:root:expected:)`` (no link
    /// followed); only where this service is not the account itself.
    public func lockInPlace(path: String, root: String, expected: FileIdentity) throws {
        guard account != geteuid() else { throw Failure(description: "\(path): a person's own agent cannot lock a file from its own account") }
        let (components, name) = try Self.parts(of: path, under: root)
        let (folderFD, code) = try openFolder(components, under: root)
        guard folderFD >= 0 else { throw Failure(description: "\(path): its folder cannot be opened without following a link: \(Self.describe(code))") }
        defer { close(folderFD) }
        let fd = openat(folderFD, PathBytes.cString(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "\(path) cannot be opened to be locked: \(Self.describe(errno))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, case let now = FileIdentity(info), now.device == expected.device, now.inode == expected.inode,
              now.size == expected.size, now.modificationNanoseconds == expected.modificationNanoseconds else {
            throw Failure(description: "\(path) is no longer the file that was judged; not locked")
        }
        guard fchown(fd, geteuid(), getegid()) == 0, fchmod(fd, 0) == 0 else {
            throw Failure(description: "\(path) cannot be locked: \(Self.describe(errno))")
        }
    }

    /// Whether the file at `path` is one ``lockInPlace(path:root:expected:)`` locked: this
    /// service's, mode 0000, where this service is not the account (the account can make no
    /// such file, nor link one: it may not read it).
    public func isLockedInPlace(_ path: String) -> Bool {
        guard account != geteuid() else { return false }
        var info = stat()
        return lstat(PathBytes.cString(path), &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_uid == geteuid() && info.st_mode & 0o7777 == 0
    }

    /// A file with other names (hard links): its owner becomes this service and its mode 0000, so
    /// no name reaches it while it is held (its own were recorded, and come back with it). Only
    /// where this service is not the account itself (a person's own agent protects no one from
    /// its own links).
    func lockLinks(_ held: inout HeldFile, in folder: Int32) {
        guard account != geteuid() else { return }
        let fd = openat(folder, Self.name(of: held), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        held.linksLocked = true
        if let handle = Self.handle(of: fd) { (held.inodeHandle, held.inodeHandleType) = (handle.bytes, handle.type) }
        try? store.write { [held] db in try held.update(db) }
        fchown(fd, geteuid(), getegid())
        fchmod(fd, 0)
    }

    /// Held by a copy with other names: the original inode (still reached by them, locked) gets
    /// its owner and mode back, found by its handle; only if it is still locked by this service.
    func unlockOriginalInode(_ held: HeldFile, mount: Int32) {
        guard held.linksLocked == true, let bytes = held.inodeHandle, let type = held.inodeHandleType else { return }
        let fd = bytes.withUnsafeBytes { qsys_open_by_handle(mount, $0.baseAddress, bytes.count, type, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o7777 == 0 else { return }
        unlockLinks(held, fd: fd)
    }

    /// The owner and mode the file had when it was held, back on the inode (its other names reach it again).
    func unlockLinks(_ held: HeldFile, fd: Int32) {
        guard held.linksLocked == true, let uid = held.ownerUid, let gid = held.ownerGid, let mode = held.fileMode else { return }
        fchown(fd, uid_t(uid), gid_t(gid))
        fchmod(fd, mode_t(mode))
    }

    /// The file handle of an open file or folder, where the filesystem has them.
    static func handle(of fd: Int32) -> (bytes: Data, type: Int32)? {
        var bytes = [UInt8](repeating: 0, count: 128)
        var type: Int32 = 0
        var length = 0
        guard qsys_handle_of(fd, &bytes, bytes.count, &type, &length) == 0 else { return nil }
        return (Data(bytes[0..<length]), type)
    }

    // MARK: - Putting back

    /// The folder a held file arrived in, open: by its file handle (wherever it is now, needs
    /// CAP_DAC_READ_SEARCH and open_by_handle_at, which the unit's `@system-service` filter
    /// refuses with EPERM: under the unit the walk decides), else walked to again from its pinned watched folder without
    /// following a link; it must be the same folder (device and inode), and belong to ``account``.
    /// Where that folder is gone, the watched folder itself, if it belongs to the account.
    func arrivalFolder(of held: HeldFile) throws(Failure) -> (fd: Int32, path: String) {
        guard let root = held.root, let device = held.folderDevice, let inode = held.folderInode else {
            throw Failure(description: "\(held.originalPath): where it arrived was not recorded", refusedPutBack: true)
        }
        let relative = held.relativeFolder.map { $0.split(separator: "/").map(String.init) } ?? []
        let pin = try? pinRoot(root)
        defer { if let pin, pin.owned { close(pin.fd) } }
        var fd: Int32 = -1
        var gone = false
        if let bytes = held.folderHandle, let type = held.folderHandleType, let mount = pin?.fd ?? folder(of: held)?.fd {
            (fd, gone) = Self.openByHandle(bytes, type: type, mount: mount, flags: Self.O_PATH | O_DIRECTORY | O_CLOEXEC)
        }
        if fd < 0, !gone, let pin {
            fd = Self.walk(from: pin.fd, relative).fd
            var info = stat()
            if fd >= 0 && (fstat(fd, &info) != 0 || Int64(bitPattern: UInt64(info.st_dev)) != device || Int64(bitPattern: UInt64(info.st_ino)) != inode) {
                close(fd)
                fd = -1
            }
        }
        let path = (held.originalPath as NSString).deletingLastPathComponent
        let removable = removableRoots.withLock { $0.contains(root) }
        if fd < 0, removable, pin == nil || Int64(bitPattern: pin!.device) != device {
            // Another filesystem at its place (the folder the medium covered), or none at all.
            throw Failure(description: "\(held.originalPath): the medium it was on is no longer mounted at \(root); it is not put back", refusedPutBack: true)
        }
        if fd < 0, let pin {
            // Its folder is gone (or was replaced): the watched folder itself.
            fd = dup(pin.fd)
            return try checkedOwner(fd, path: pin.path, held: held)
        }
        guard fd >= 0 else { throw Failure(description: "\(held.originalPath): the folder it arrived in is gone, and so is \(root)", refusedPutBack: true) }
        return try checkedOwner(fd, path: path, held: held)
    }

    /// A folder opened by its file handle, wherever it is now, or -1. `gone` when the handle says
    /// the folder is no more (ESTALE: a folder found at its place now is another, maybe with its
    /// inode number), or opens one that was removed but is still in memory because another process
    /// holds it open (no link left; nothing can be made in it, ENOENT). -1 and not gone where
    /// handles do not work (no CAP_DAC_READ_SEARCH, or the unit's filter refuses the call): a walk decides.
    static func openByHandle(_ bytes: Data, type: Int32, mount: Int32, flags: Int32) -> (fd: Int32, gone: Bool) {
        let fd = bytes.withUnsafeBytes { qsys_open_by_handle(mount, $0.baseAddress, bytes.count, type, flags) }
        guard fd >= 0 else { return (-1, errno == ESTALE) }
        guard !isRemoved(fd) else {
            close(fd)
            return (-1, true)
        }
        return (fd, false)
    }

    /// Whether the folder open as `fd` was removed (a removed folder has no link left).
    static func isRemoved(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_nlink == 0
    }

    /// `fd` if it is a folder of the account's (never root's, never this service's).
    func checkedOwner(_ fd: Int32, path: String, held: HeldFile) throws(Failure) -> (fd: Int32, path: String) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            close(fd)
            throw Failure(description: "\(held.originalPath): the folder it arrived in is not a folder any more", refusedPutBack: true)
        }
        guard Vault.accountMayWrite(info, account: Int64(account)) else {
            close(fd)
            throw Failure(description: "\(held.originalPath): the folder it arrived in now belongs to uid \(info.st_uid), not to the account (uid \(account)); it is not put there",
                          refusedPutBack: true)
        }
        return (fd, path)
    }

    /// Puts a held file back under its own name, into the folder it arrived in (or `name (1).ext`
    /// when that was taken since: nothing is overwritten), with its owner and mode as they were.
    /// Returns where it is and its identity there. Throws ``Failure`` with `refusedPutBack` when
    /// that folder is not the account's (it stays held).
    @discardableResult
    public func putBack(_ held: HeldFile) throws -> (path: String, identity: FileIdentity) {
        if held.holdingDevice == nil { return try putBackByPath(held) }
        guard let area = folder(of: held) else {
            try? forget(held)
            throw Failure(description: "\(held.heldPath) is no longer held (its holding folder is gone)")
        }
        let heldName = Self.name(of: held)
        var info = stat()
        guard fstatat(area.fd, heldName, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            // Gone from the holding folder (moved into the vault meanwhile): nothing to do.
            try? forget(held)
            throw Failure(description: "\(held.heldPath) is no longer held")
        }
        var target = try arrivalFolder(of: held)
        defer { close(target.fd) }
        restoreAccessTime(held)
        if held.copied == true { return try putBackCopy(held, from: area, to: target) }
        let file = openat(area.fd, heldName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        if file >= 0 { unlockLinks(held, fd: file); close(file) }
        let original = (held.originalPath as NSString).lastPathComponent
        var attempt = 0
        var lookedAgain = false
        while true {
            let candidate = Vault.candidateName(original, attempt: attempt)
            if qsys_rename_noreplace(area.fd, heldName, target.fd, PathBytes.cString(candidate)) == 0 {
                var there = stat()
                fstatat(target.fd, PathBytes.cString(candidate), &there, AT_SYMLINK_NOFOLLOW)
                fsync(target.fd)
                try? forget(held)
                return (target.path + "/" + candidate, FileIdentity(there))
            }
            let code = errno
            if code == EEXIST && attempt < 1000 { attempt += 1; continue }
            if code == ENOENT && !lookedAgain && Self.isRemoved(target.fd) {
                // Its folder was removed since it was found: looked for once more (the watched folder, then).
                lookedAgain = true
                let again = try arrivalFolder(of: held)
                close(target.fd)
                target = again
                attempt = 0
                continue
            }
            throw Failure(description: "\(held.originalPath) cannot be put back: \(Self.describe(code)); it stays held")
        }
    }

    /// A held copy goes back as a new file in the folder it arrived in: written beside, flushed,
    /// given its owner, mode, attributes and times, then renamed into place without replacing.
    func putBackCopy(_ held: HeldFile, from area: Pinned, to target: (fd: Int32, path: String)) throws -> (path: String, identity: FileIdentity) {
        let heldName = Self.name(of: held)
        let source = openat(area.fd, heldName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard source >= 0 else { throw Failure(description: "\(held.heldPath) cannot be opened: \(Self.describe(errno))") }
        defer { close(source) }
        let partial = ".quarantine-returning-" + heldName
        let writeFD = try Self.reopen(target.fd)
        defer { close(writeFD) }
        let output = openat(writeFD, PathBytes.cString(partial), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw Failure(description: "cannot write into \(target.path): \(Self.describe(errno)); it stays held") }
        do {
            defer { close(output) }
            try Vault.copy(from: source, to: output)
            for (key, value) in Vault.extendedAttributes(fd: source) {
                _ = value.withUnsafeBytes { qsys_fsetxattr(output, key, $0.baseAddress, value.count) }
            }
            if let uid = held.ownerUid, let gid = held.ownerGid { fchown(output, uid_t(uid), gid_t(gid)) }
            if let mode = held.fileMode { fchmod(output, mode_t(mode)) }
            var info = stat()
            fstat(source, &info)
            var times = [timespec(tv_sec: Int(held.accessNanoseconds / 1_000_000_000), tv_nsec: Int(held.accessNanoseconds % 1_000_000_000)), info.st_mtim]
            futimens(output, &times)
            guard fsync(output) == 0 else { throw Failure(description: "cannot flush \(target.path)/\(partial): \(Self.describe(errno))") }
        } catch {
            unlinkat(writeFD, PathBytes.cString(partial), 0)
            throw error
        }
        let original = (held.originalPath as NSString).lastPathComponent
        var attempt = 0
        while true {
            let candidate = Vault.candidateName(original, attempt: attempt)
            if qsys_rename_noreplace(writeFD, partial, writeFD, PathBytes.cString(candidate)) == 0 {
                var there = stat()
                fstatat(writeFD, PathBytes.cString(candidate), &there, AT_SYMLINK_NOFOLLOW)
                fsync(writeFD)
                unlockOriginalInode(held, mount: writeFD)
                unlinkat(area.fd, heldName, 0)
                try? forget(held)
                return (target.path + "/" + candidate, FileIdentity(there))
            }
            let code = errno
            if code == EEXIST && attempt < 1000 { attempt += 1; continue }
            unlinkat(writeFD, PathBytes.cString(partial), 0)
            throw Failure(description: "\(held.originalPath) cannot be put back: \(Self.describe(code)); it stays held")
        }
    }

    /// An O_PATH folder descriptor reopened for writing into (openat needs more than O_PATH).
    static func reopen(_ fd: Int32) throws(Failure) -> Int32 {
        let opened = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard opened >= 0 else { throw Failure(description: "cannot open a folder: \(describe(errno))") }
        return opened
    }

    /// A file held before v12 (in a private folder of its watched folder, by path).
    func putBackByPath(_ held: HeldFile) throws -> (path: String, identity: FileIdentity) {
        let parentPath = (held.originalPath as NSString).deletingLastPathComponent
        let parentFD = try Self.openTrusted(parentPath)
        defer { close(parentFD) }
        _ = try checkedOwner(dup(parentFD), path: parentPath, held: held).fd
        guard let area = folder(of: held) else { try? forget(held); throw Failure(description: "\(held.heldPath) is no longer held") }
        defer { close(area.fd) }
        let original = (held.originalPath as NSString).lastPathComponent
        var attempt = 0
        while true {
            let candidate = Vault.candidateName(original, attempt: attempt)
            if qsys_rename_noreplace(area.fd, Self.name(of: held), parentFD, PathBytes.cString(candidate)) == 0 {
                var info = stat()
                fstatat(parentFD, PathBytes.cString(candidate), &info, AT_SYMLINK_NOFOLLOW)
                try? forget(held)
                return (parentPath + "/" + candidate, FileIdentity(info))
            }
            let code = errno
            if code == EEXIST && attempt < 1000 { attempt += 1; continue }
            if code == ENOENT { try? forget(held); throw Failure(description: "\(held.heldPath) is no longer held") }
            throw Failure(description: "\(held.originalPath) cannot be put back: \(Self.describe(code)); it stays at \(held.heldPath)")
        }
    }

    /// The check read it: its access time goes back to what it was when it was held (the
    /// modification time was never touched). Before it goes back, or into the vault.
    public func restoreAccessTime(_ held: HeldFile) {
        guard let area = folder(of: held) else { return }
        defer { if held.holdingDevice == nil { close(area.fd) } }
        var times = [timespec(tv_sec: Int(held.accessNanoseconds / 1_000_000_000), tv_nsec: Int(held.accessNanoseconds % 1_000_000_000)),
                     timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_OMIT
        utimensat(area.fd, Self.name(of: held), &times, AT_SYMLINK_NOFOLLOW)
    }

    /// The held file went on (into the vault): nothing is held any more.
    public func forget(_ held: HeldFile) throws {
        try store.write { db in _ = try HeldFile.deleteOne(db, key: held.id) }
    }

    /// Where a held file arrived, for the vault item it becomes (a release puts it back there).
    public func arrival(of held: HeldFile) -> Vault.Arrival? {
        guard let root = held.root, let device = held.folderDevice, let inode = held.folderInode else { return nil }
        var arrival = Vault.Arrival(root: root, relativeFolder: held.relativeFolder ?? "", device: device, inode: inode,
                                    handle: held.folderHandle, handleType: held.folderHandleType, account: Int64(account))
        if held.linksLocked == true { (arrival.inodeHandle, arrival.inodeHandleType) = (held.inodeHandle, held.inodeHandleType) }
        return arrival
    }

    /// The owner, group and mode the held file had (before its other names were locked), to be
    /// recorded for it where it goes instead (the vault).
    public func originalOwnership(of held: HeldFile) -> (uid: uid_t, gid: gid_t, mode: mode_t)? {
        guard held.linksLocked == true, let uid = held.ownerUid, let gid = held.ownerGid, let mode = held.fileMode else { return nil }
        return (uid_t(uid), gid_t(gid), mode_t(mode))
    }

    /// At start (adult mode), after the vault's own recovery: every file still held goes back
    /// where it was (it is checked again, as a new arrival). One line per file put back.
    public func recover() -> [String] {
        let held = (try? store.read { db in try HeldFile.fetchAll(db) }) ?? []
        var lines: [String] = []
        for file in held {
            if let back = try? putBack(file) { lines.append("\(PathBytes.display(file.heldPath)) -> \(PathBytes.display(back.path))") }
        }
        return lines
    }

    /// The file that arrived at `originalPath` and is held now (the latest, if several were), or
    /// nil. A record whose held file is gone is forgotten.
    public func held(originalPath: String) -> HeldFile? {
        while holdsInProgress.withLock({ $0.contains(originalPath) }) { usleep(2_000) }
        let records = (try? store.read { db in
            try HeldFile.filter(Column("originalPath") == originalPath).order(Column("id").desc).fetchAll(db)
        }) ?? []
        for record in records {
            if isStillHeld(record) { return record }
            try? forget(record)
        }
        return nil
    }

    /// Whether the held file of `record` is still where it is held, as the same inode.
    func isStillHeld(_ record: HeldFile) -> Bool {
        guard let area = folder(of: record) else { return false }
        defer { if record.holdingDevice == nil { close(area.fd) } }
        var info = stat()
        return fstatat(area.fd, Self.name(of: record), &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFREG
            && (record.copied == true || (Int64(bitPattern: UInt64(info.st_dev)) == record.device && Int64(bitPattern: UInt64(info.st_ino)) == record.inode))
    }

    /// At start in child mode, instead of ``recover()``: nothing goes back unchecked. Every file
    /// still held stays held, to be judged again where it is; records of files no longer held
    /// (moved into the vault before a crash) are forgotten. Returns what stays held.
    public func keepHeld() -> [HeldFile] {
        let held = (try? store.read { db in try HeldFile.fetchAll(db) }) ?? []
        return held.filter { record in
            if isStillHeld(record) { return true }
            try? forget(record)
            return false
        }
    }

    /// Files held right now.
    public func heldFiles() throws -> [HeldFile] { try store.read { db in try HeldFile.fetchAll(db) } }

    /// The identities (device, inode) of the holding folders: a watcher that reaches them
    /// (a whole home watched) leaves them out by identity, never by a name.
    public func holdingFolderIdentities() -> [(device: UInt64, inode: UInt64)] {
        _ = try? currentArea()
        var result = areas.withLock { $0.byKey.values.map { (device: $0.device, inode: $0.inode) } }
        if let copies = try? copiesArea() { result.append((copies.device, copies.inode)) }
        return result
    }
}
