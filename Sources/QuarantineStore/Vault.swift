import CSystemShims
import Crypto
import Foundation
import GRDB
import MediaDecoding
import QuarantineBase
import PathBytes

/// Where flagged files are kept out of sight, never lost, and from where they come back exactly
/// as they were.
///
/// Each item has a folder `vault/<id>-<8 random hex digits>/` (0700) holding `item` (0600),
/// `preview.jpg` and `meta.json` (the item's record, from which `doctor --repair` rebuilds a lost
/// database). A move
/// is written to the journal before it starts and marked done after; ``recover()`` finishes or
/// rolls back whatever a crash interrupted, so every file ends up in exactly one place.
/// Same filesystem: `renameat2(RENAME_NOREPLACE)`; across filesystems: copy, fsync, verify the
/// hash, then unlink. Nothing is ever overwritten.
public final class Vault: Sendable {
    public let root: String
    public let store: AuditStore
    /// Test seam: called at each step of a move. A test makes it throw ``SimulatedCrash`` to stop
    /// a move dead at that step, as a kill would: no clean-up runs after it.
    let crashPoint: (@Sendable (MoveStep) throws -> Void)?

    /// The steps of a move, in order, where a crash can leave it.
    enum MoveStep: String, CaseIterable, Sendable {
        /// The journal names both places; nothing moved yet.
        case journaled
        /// Across filesystems: the copy is written and verified under its `.part` name.
        case partialWritten
        /// The file (or the copy) is at its destination.
        case inPlace
        /// Across filesystems: the journal says the copy is complete.
        case copyRecorded
        /// Across filesystems: the original is removed.
        case originalRemoved
    }

    /// A kill, simulated by a test at a ``MoveStep``.
    struct SimulatedCrash: Error {}

    /// Opens the vault at `root` (created 0700). Nothing is recovered here: see ``claim(waitingUpTo:)``
    /// and ``recoverIfIdle()``.
    public convenience init(root: String, store: AuditStore) throws {
        try self.init(root: root, store: store, crashPoint: nil, tightened: [])
    }

    init(root: String, store: AuditStore, crashPoint: (@Sendable (MoveStep) throws -> Void)?, tightened: [String] = []) throws {
        self.root = root
        self.store = store
        self.crashPoint = crashPoint
        self.tightened = tightened
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(PathBytes.cString(root), 0o700)
    }

    /// The per-user vault and database under `${XDG_DATA_HOME:-~/.local/share}/quarantine`.
    /// Folders and files there that others could read are tightened first (see ``tightened``).
    ///
    /// With `readOnly` (the commands that change nothing), the database is opened only to read
    /// it (``AuditStore/reading(path:busyTimeout:agentRunning:waitingUpTo:)``): never created
    /// or migrated while an agent may be doing so, so such a command never holds a starting
    /// agent off.
    /// `busyTimeout`: how long the database waits for another process's lock (tests shorten it).
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment, readOnly: Bool = false,
                                busyTimeout: Double = 10) throws -> Vault {
        let base = baseDirectory(environment: environment)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let tightened = tightenPermissions(base: base)
        let store = readOnly
            ? try AuditStore.reading(path: base + "/audit.sqlite3", busyTimeout: busyTimeout,
                                     agentRunning: { AgentLock.runningAgent(environment: environment) != nil })
            : try AuditStore(path: base + "/audit.sqlite3", busyTimeout: busyTimeout)
        return try Vault(root: base + "/vault", store: store, crashPoint: nil, tightened: tightened)
    }

    /// What ``standard(environment:)`` found readable by others and made private, one line each
    /// ("/home/a/.local/share/quarantine: 0755 -> 0700"); empty when all was private already.
    /// Callers say it once: after that nothing is loose any more.
    public let tightened: [String]

    /// Makes the data folder and the vault 0700, and the audit database and its `-wal`/`-shm`
    /// 0600, where they are looser (an older version, or `make setup`, made them 0755/0644).
    static func tightenPermissions(base: String) -> [String] {
        var lines: [String] = []
        func tighten(_ path: String, to wanted: mode_t) {
            var info = stat()
            guard lstat(PathBytes.cString(path), &info) == 0, info.st_mode & S_IFMT != S_IFLNK else { return }
            let current = info.st_mode & 0o7777
            guard current & ~wanted != 0, chmod(PathBytes.cString(path), current & wanted) == 0 else { return }
            lines.append("\(path): \(String(current, radix: 8)) -> \(String(current & wanted, radix: 8))")
        }
        tighten(base, to: 0o700)
        tighten(base + "/vault", to: 0o700)
        for suffix in ["", "-wal", "-shm"] { tighten(base + "/audit.sqlite3" + suffix, to: 0o600) }
        return lines
    }

    /// `${XDG_DATA_HOME:-~/.local/share}/quarantine`: the vault, the database, the models; or
    /// `$QUARANTINE_STATE_DIR` itself (the guardian service: `/var/lib/quarantine/USER`).
    public static func baseDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        Paths(environment: environment).state
    }

    func folder(_ name: String) -> String { root + "/" + name }

    /// The blurred preview of an item, if it has one.
    public func previewPath(of item: VaultItem) -> String? {
        guard let name = item.vaultName, let preview = item.previewName else { return nil }
        return folder(name) + "/" + preview
    }
    func itemPath(_ name: String) -> String { folder(name) + "/item" }
    /// Where the vault keeps item's own bytes (never shown: read only to decode its preview).
    public func contentPath(of item: VaultItem) -> String? { item.vaultName.map(itemPath) }

    // MARK: - Quarantine

    /// Linux's O_PATH (a descriptor that names a file without read access), which Glibc's
    /// Swift module does not import.
    static let openPathOnly: Int32 = 0o10000000

    /// Moves the file at `path` into the vault. When `expected` is given, the file must still be
    /// exactly what was analysed (device, inode, size, modification time).
    @discardableResult
    /// `recordedAs` is where the file belongs when it is not where it is now (held aside while it
    /// was checked): the item is recorded, and released, there.
    public func quarantine(path: String, recordedAs: String? = nil, expected: FileIdentity?, reasons: [String], mode: AnalysisMode, actor: String,
                           preview: RGBImage? = nil, origin: DownloadSource? = nil, hash: ContentHash = .compute) throws -> VaultItem {
        do {
            return try whileMoving {
                try moveIn(path: path, recordedAs: recordedAs, expected: expected, reasons: reasons, mode: mode, actor: actor, preview: preview, origin: origin,
                           hash: hash)
            }
        } catch let crash as SimulatedCrash {
            throw crash
        } catch {
            // Every refusal is in the audit log too; nothing was moved.
            try? store.record(.error, path: recordedAs ?? path, mode: mode, actor: actor, detail: "not quarantined: \(error)")
            throw error
        }
    }

    /// How ``quarantine(path:recordedAs:expected:reasons:mode:actor:preview:origin:hash:)`` gets
    /// the item's sha256.
    public enum ContentHash: Sendable, Equatable {
        /// Read the file and hash it.
        case compute
        /// The caller hashed this version already (used only with an expected identity).
        case known(String)
        /// Not hashed: the file is too large to be judged (recorded without a hash).
        case skipped
    }

    func moveIn(path given: String, recordedAs: String? = nil, expected: FileIdentity?, reasons: [String], mode: AnalysisMode, actor: String,
                preview: RGBImage?, origin: DownloadSource? = nil, hash: ContentHash = .compute) throws -> VaultItem {
        // Stored absolute (without resolving links), so a release from anywhere finds the place.
        func absolute(_ given: String) -> String {
            given.hasPrefix("/") ? URL(fileURLWithPath: given).standardized.path
                : URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(given).standardized.path
        }
        let path = absolute(given)
        let recorded = recordedAs.map(absolute) ?? path
        var fd = open(PathBytes.cString(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        // A file this user may not read can still be renamed into the vault (child mode holds
        // it as unverified): held by an O_PATH descriptor, hashed once the vault made it readable.
        let unreadable = fd < 0 && (errno == EACCES || errno == EPERM)
        if unreadable { fd = open(PathBytes.cString(path), Self.openPathOnly | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw VaultError.system("cannot open \(path) to quarantine it", errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.system("cannot examine \(path)", errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw VaultError.refused("\(path) is not a regular file") }
        let identity = FileIdentity(info)
        if let expected, expected != identity {
            throw VaultError.refused("\(path) changed after it was analysed; it was left where it is")
        }
        if unreadable && info.st_nlink > 1 {
            throw VaultError.refused("\(path) cannot be read and has other names (hard links): it can only be copied into the vault, which needs read access")
        }
        // The folder it is in, by descriptor: the move and any recovery work on that folder and
        // this name, never on the path again (a folder of it swapped for a link changes nothing).
        let sourceName = (path as NSString).lastPathComponent
        let sourceFolder = open(PathBytes.cString((path as NSString).deletingLastPathComponent), Holding.O_PATH | O_DIRECTORY | O_CLOEXEC)
        guard sourceFolder >= 0 else { throw VaultError.system("cannot open the folder of \(path)", errno) }
        defer { close(sourceFolder) }
        var there = stat()
        guard fstatat(sourceFolder, PathBytes.cString(sourceName), &there, AT_SYMLINK_NOFOLLOW) == 0, there.st_dev == info.st_dev, there.st_ino == info.st_ino else {
            throw VaultError.refused("\(path) was replaced while it was being moved; left in place")
        }
        // A hash the caller took of this very version (`expected` matched above) is not taken
        // again: a large file is read once. A file too large to judge is not read at all, so
        // that a huge (or sparse) file never holds the mover for minutes; it has no recorded
        // hash (as an unreadable one), so it can only be renamed, never copied and checked.
        let digest: String
        switch hash {
        case _ where unreadable: digest = ""
        case .known(let sha256) where expected != nil && sha256.count == 64: digest = sha256
        case .skipped: digest = ""
        default: digest = try Self.sha256(fd: fd)
        }
        if case .skipped = hash, info.st_nlink > 1 {
            throw VaultError.refused("\(path) is too large to be judged and has other names (hard links): it can only be copied into the vault, which would read all of it")
        }
        let attributes = unreadable ? [:] : Self.extendedAttributes(fd: fd)
        var item = VaultItem(
            id: nil, createdAt: Date(), originalPath: recorded, vaultName: nil, previewName: nil, size: Int64(info.st_size), sha256: digest,
            mode: UInt32(info.st_mode), uid: info.st_uid, gid: info.st_gid,
            accessNanoseconds: Int64(info.st_atim.tv_sec) * 1_000_000_000 + Int64(info.st_atim.tv_nsec),
            modificationNanoseconds: identity.modificationNanoseconds, extendedAttributes: VaultItem.encode(attributes: attributes),
            originURL: attributes["user.xdg.origin.url"].flatMap { String(data: $0, encoding: .utf8) } ?? origin?.url,
            referrerURL: attributes["user.xdg.origin.url"] != nil ? attributes["user.xdg.referrer.url"].flatMap { String(data: $0, encoding: .utf8) } : origin?.referrer,
            reasons: String(decoding: try JSONEncoder().encode(reasons), as: UTF8.self), analysisMode: mode,
            status: .quarantining)
        item.folderRealPath = realpath(PathBytes.cString(URL(fileURLWithPath: recorded).deletingLastPathComponent().path), nil).map { pointer in
            defer { free(pointer) }
            return PathBytes.string(cString: pointer)
        }
        // Intent first: the journal names both places before anything moves.
        let journalId: Int64
        (item, journalId) = try store.beginQuarantine(item) { self.itemPath($0) }
        let id = item.id!
        let name = item.vaultName!
        try? recordPlace(journalId: journalId, role: .source, folder: sourceFolder, name: sourceName)
        try crashPoint?(.journaled)
        do {
            guard mkdir(PathBytes.cString(folder(name)), 0o700) == 0 || errno == EEXIST else { throw VaultError.system("cannot create \(folder(name))", errno) }
            // The vault's own folder (which may sit under a link, a data folder on another disk).
            let itemFolder = open(PathBytes.cString(folder(name)), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard itemFolder >= 0 else { throw VaultError.system("cannot open \(folder(name))", errno) }
            defer { close(itemFolder) }
            // A file with other names (hard links) is copied, never renamed: the vault keeps an
            // inode of its own, which no outside name can change, and the other names stay
            // where they are, each judged on its own.
            try move(fd: fd, identity: identity, from: path, in: (sourceFolder, sourceName), to: Destination(folder: itemFolder, name: "item", path: itemPath(name)),
                     sha256: digest, journalId: journalId, copying: info.st_nlink > 1, readable: !unreadable)
            chmod(PathBytes.cString(itemPath(name)), 0o600)
            if unreadable, case .compute = hash, let hash = try? Self.sha256(path: itemPath(name)) { item.sha256 = hash }
        } catch let crash as SimulatedCrash {
            throw crash
        } catch {
            // Nothing moved (or the move was undone): forget the intent; the refusal is recorded by the caller.
            try? store.abandonQuarantine(itemId: id, journalId: journalId)
            rmdir(PathBytes.cString(folder(name)))
            throw error
        }
        if let preview, writePreview(preview, inFolder: name) {
            item.previewName = Self.previewName
        }
        item.status = .quarantined
        // The same record beside the item, so the vault explains itself even without the database.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // Best effort: the database is the record; a meta.json that cannot be written loses nothing.
        if let meta = try? encoder.encode(item) {
            _ = FileManager.default.createFile(atPath: folder(name) + "/meta.json", contents: meta, attributes: [.posixPermissions: 0o600])
        }
        let finished = item
        try store.finishQuarantine(finished, journalId: journalId,
                                   event: AuditEvent(.quarantined, itemId: id, path: recorded, mode: mode, actor: actor, detail: reasons.joined(separator: ", ")))
        return finished
    }

    /// Writes the blurred preview of an item hidden without one (a file hidden on sight because
    /// it is blocked: its picture is decoded afterwards, from the vault's own copy) and records
    /// it. Returns the item as it now is; an item that already has one is left as it is.
    @discardableResult
    public func attachPreview(_ image: RGBImage, to itemId: Int64) throws -> VaultItem {
        guard var item = try store.item(itemId), let name = item.vaultName else { throw VaultError.refused("item \(itemId) is not in the vault") }
        guard item.previewName == nil, item.status == .quarantined else { return item }
        guard writePreview(image, inFolder: name) else { throw VaultError.system("cannot write the preview of item \(itemId) in \(folder(name))", errno) }
        item.previewName = Self.previewName
        try store.setPreview(of: itemId, name: Self.previewName)
        return item
    }

    /// The blurred preview's file name in an item's folder.
    static let previewName = "preview.jpg"

    /// Writes `image`, blurred, as the preview (0600) in item folder `name`; false when it could
    /// not be encoded or written.
    func writePreview(_ image: RGBImage, inFolder name: String) -> Bool {
        guard let jpeg = try? BlurredPreview.jpeg(from: image) else { return false }
        return FileManager.default.createFile(atPath: folder(name) + "/" + Self.previewName, contents: Data(jpeg), attributes: [.posixPermissions: 0o600])
    }

    // MARK: - Release

    /// What a release did.
    public struct Release: Sendable {
        public var path: String
        /// The original name was taken, so the file came back under another.
        public var renamed: Bool
        public var ownerRestored: Bool
    }

    /// Puts item `id` back (at its original path, or into `directory`), never overwriting: a
    /// taken name becomes `name (1).ext`; a missing folder is recreated. Restores mode, owner
    /// where permitted, times and extended attributes, and allows its hash from then on.
    @discardableResult
    public func release(id: Int64, to directory: String? = nil, mode: AnalysisMode, actor: String) throws -> Release {
        try whileMoving { try moveOut(id: id, to: directory, mode: mode, actor: actor) }
    }

    func moveOut(id: Int64, to directory: String?, mode: AnalysisMode, actor: String) throws -> Release {
        guard var item = try store.item(id) else { throw VaultError.refused("there is no item \(id) in the vault") }
        guard item.status == .quarantined, let name = item.vaultName else {
            throw VaultError.refused("item \(id) is \(item.status.rawValue), not in the vault")
        }
        let original = URL(fileURLWithPath: item.originalPath)
        let recordedFolder = directory.map { URL(fileURLWithPath: $0).standardized.path } ?? original.deletingLastPathComponent().path
        // Opened without following a symbolic link that was not there when the file was hidden
        // (a folder `--to` names is the person's own choice, links and all).
        // Held by a service for an account: back only into the folder it arrived in (by identity),
        // and only if that is the account's. Otherwise by path, never following a link that was
        // not there when it was hidden; folders made again belong to the file's owner.
        let arrival = directory == nil ? try? arrival(of: id) : nil
        let (folderFD, folderPath) = try arrival.map { try openArrivalFolder($0, itemId: id) }
            ?? (Self.openFolder(recordedFolder, creating: true, allowedRealPath: directory == nil ? item.folderRealPath : nil,
                                followingLinks: directory != nil, owner: geteuid() == uid_t(item.uid) ? nil : (uid_t(item.uid), gid_t(item.gid))), recordedFolder)
        defer { close(folderFD) }
        let source = itemPath(name)
        let fd = open(PathBytes.cString(source), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.system("the vault copy of item \(id) cannot be opened", errno) }
        defer { close(fd) }
        var info = stat()
        fstat(fd, &info)
        let identity = FileIdentity(info)
        // What comes back must be what was hidden.
        // An item hidden unreadable whose owner is not this user has no recorded hash.
        guard try item.sha256.isEmpty || Self.sha256(fd: fd) == item.sha256 else {
            throw VaultError.refused("the vault's copy of item \(id) is not what was hidden (its sha256 changed); it stays in the vault")
        }
        var attempt = 0
        var destination = ""
        var journalId: Int64 = 0
        while true {
            guard attempt < 10_000 else { throw VaultError.refused("no free name for item \(id) in \(folderPath)") }
            let candidate = Self.candidateName(original.lastPathComponent, attempt: attempt)
            destination = folderPath + "/" + candidate
            // fstatat, not faccessat: access(2) checks with the real uid and drops capabilities, so
            // the guardian service (CAP_DAC_READ_SEARCH) got EACCES for every name in a child's
            // 0700 folder and counted up names for ever. Any error but ENOENT stops here.
            var existing = stat()
            if fstatat(folderFD, candidate, &existing, AT_SYMLINK_NOFOLLOW) == 0 { attempt += 1; continue }
            guard errno == ENOENT else { throw VaultError.system("the folder \(folderPath) cannot be looked into", errno) }
            journalId = try store.beginRelease(itemId: id, source: source, destination: destination)
            try? recordPlace(journalId: journalId, role: .destination, folder: folderFD, name: candidate)
            try crashPoint?(.journaled)
            do {
                try move(fd: fd, identity: identity, from: source, to: Destination(folder: folderFD, name: candidate, path: destination),
                         sha256: item.sha256, journalId: journalId)
                break
            } catch VaultError.exists {
                // Someone took the name meanwhile: nothing moved; try the next name.
                try store.abandonRelease(itemId: id, journalId: journalId)
                attempt += 1
            } catch let crash as SimulatedCrash {
                throw crash
            } catch {
                try? store.abandonRelease(itemId: id, journalId: journalId)
                throw error
            }
        }
        let placedName = URL(fileURLWithPath: destination).lastPathComponent
        let ownerRestored = restoreMetadata(of: item, folder: folderFD, name: placedName)
        // Its other names (hard links), locked while it was held and hidden, reach it again.
        if let arrival { _ = unlockOtherNames(arrival, item: item, mount: folderFD) }
        let placed = Self.releasedVersion(in: folderFD, name: placedName, sha256: item.sha256)
        try? FileManager.default.removeItem(atPath: folder(name))
        item.status = .released
        let renamed = attempt > 0
        try store.finishRelease(item, journalId: journalId,
                                seen: placed.map { SeenFile(path: destination, identity: $0, sha256: item.sha256.isEmpty ? nil : item.sha256, mode: mode, verdict: .allowed, itemId: id) },
                                event: AuditEvent(.released, itemId: id, path: destination, mode: mode, actor: actor,
                                                  detail: renamed ? "restored under a new name: \(item.originalPath) was taken" : nil))
        return Release(path: destination, renamed: renamed, ownerRestored: ownerRestored)
    }

    /// The version a release just put back as `name` in `folder`, as the agent will see it
    /// arrive (owner, mode and times restored): recorded as seen with the release, so that an
    /// agent holding new files does not take it away again to find it on the allow list. Only
    /// when it holds the released bytes, read again here: the name is in the account's folder,
    /// and other bytes written into the file meanwhile (in place, same inode) must be judged.
    static func releasedVersion(in folder: Int32, name: String, sha256: String) -> FileIdentity? {
        guard !sha256.isEmpty else { return nil }
        // Read without touching its access time, which the release has just put back (O_NOATIME
        // needs the file's owner or CAP_FOWNER; otherwise the time is put back after the read).
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
        var fd = openat(folder, PathBytes.cString(name), flags | 0o1000000 /* O_NOATIME */)
        let touchesAccessTime = fd < 0 && errno == EPERM
        if touchesAccessTime { fd = openat(folder, PathBytes.cString(name), flags) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        guard (try? Self.sha256(fd: fd)) == sha256 else { return nil }
        if touchesAccessTime {
            var times = [info.st_atim, timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_OMIT
            futimens(fd, &times)
        }
        // Nothing written meanwhile (a write moves the modification time; the access time's own
        // restoring moves only the change time).
        var after = stat()
        guard fstat(fd, &after) == 0, after.st_ino == info.st_ino, after.st_size == info.st_size,
              after.st_mtim.tv_sec == info.st_mtim.tv_sec, after.st_mtim.tv_nsec == info.st_mtim.tv_nsec,
              touchesAccessTime || (after.st_ctim.tv_sec == info.st_ctim.tv_sec && after.st_ctim.tv_nsec == info.st_ctim.tv_nsec) else { return nil }
        return FileIdentity(after)
    }

    /// Records the owner, group and mode item `id` had before it was held (a held file with other
    /// names had them changed, so that no name reached it): what a release restores.
    public func recordOwnership(of id: Int64, uid: uid_t, gid: gid_t, mode: mode_t) throws -> VaultItem {
        try store.write { db in
            guard var item = try VaultItem.fetchOne(db, key: id) else { throw VaultError.refused("there is no item \(id) in the vault") }
            item.uid = UInt32(uid)
            item.gid = UInt32(gid)
            item.mode = (item.mode & ~0o7777) | UInt32(mode & 0o7777)
            try item.update(db)
            return item
        }
    }

    /// `name.ext`, `name (1).ext`, `name (2).ext`, ...
    static func candidateName(_ name: String, attempt: Int) -> String {
        guard attempt > 0 else { return name }
        let url = URL(fileURLWithPath: name)
        let ext = url.pathExtension
        let stem = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        return ext.isEmpty ? "\(stem) (\(attempt))" : "\(stem) (\(attempt)).\(ext)"
    }

    // MARK: - Block

    /// What a block did.
    public struct Block: Sendable {
        public var deleted: Bool
        /// The host now blocked, with `origin`.
        public var blockedHost: String?
    }

    /// Blocks item `id`: deletes it (or, with `keep`, seals it in the vault for good), puts its
    /// sha256 on the block list so the same bytes arriving again are quarantined without
    /// analysis, and with `origin` blocks the host of its origin URL too.
    @discardableResult
    public func block(id: Int64, keep: Bool, origin: Bool, mode: AnalysisMode, actor: String) throws -> Block {
        guard var item = try store.item(id) else { throw VaultError.refused("there is no item \(id) in the vault") }
        guard item.status == .quarantined, let name = item.vaultName else {
            throw VaultError.refused("item \(id) is \(item.status.rawValue), not in the vault")
        }
        var host: String? = nil
        if origin {
            guard let url = item.originURL.flatMap(URL.init(string:)), let h = url.host, !h.isEmpty else {
                throw VaultError.refused("item \(id) has no origin URL to block (the browser did not record one)")
            }
            host = h.lowercased()
        }
        if !keep {
            let path = itemPath(name)
            guard unlink(PathBytes.cString(path)) == 0 || errno == ENOENT else { throw VaultError.system("cannot delete \(path)", errno) }
            try? FileManager.default.removeItem(atPath: folder(name))
        }
        item.status = keep ? .sealed : .blocked
        let reason = "blocked by \(actor) on \(ISO8601DateFormatter().string(from: Date())): \(item.reasonList.joined(separator: ", "))"
        var events = [AuditEvent(.blocked, itemId: id, path: item.originalPath, mode: mode, actor: actor,
                                 detail: [keep ? "kept sealed" : "deleted", host.map { "origin \($0) blocked" }].compactMap { $0 }.joined(separator: "; "))]
        if !keep { events.append(AuditEvent(.deleted, itemId: id, path: item.originalPath, mode: mode, actor: actor)) }
        try store.recordBlock(item, reason: reason, host: host, events: events)
        return Block(deleted: !keep, blockedHost: host)
    }

    // MARK: - Purge

    /// Items still in the vault (quarantined or sealed) that were hidden before `date`.
    public func purgeCandidates(before date: Date) throws -> [VaultItem] {
        try store.items().filter { $0.createdAt < date }
    }

    /// Deletes the given items for good, recording each one; returns how many went.
    @discardableResult
    public func purge(_ items: [VaultItem], actor: String) throws -> Int {
        var count = 0
        for var item in items {
            guard let id = item.id, let name = item.vaultName, item.status.isInVault else { continue }
            try? FileManager.default.removeItem(atPath: folder(name))
            item.status = .purged
            try store.update(item, event: AuditEvent(.purged, itemId: id, path: item.originalPath, mode: item.analysisMode, actor: actor,
                                                     detail: "hidden \(ISO8601DateFormatter().string(from: item.createdAt)); deleted by purge"))
            count += 1
        }
        return count
    }

    // MARK: - Moving

    /// Where a move puts a file: a name in an open folder (so no component of its path can be
    /// swapped for a link meanwhile), and the path for messages and the journal.
    struct Destination {
        var folder: Int32
        var name: String
        var path: String
    }

    /// Moves the file open as `fd` from `source` to `destination` (which must not exist). With
    /// `copying`, the file is copied (as across filesystems) even on one filesystem.
    func move(fd: Int32, identity: FileIdentity, from source: String, in sourcePlace: (folder: Int32, name: String)? = nil, to destination: Destination,
              sha256: String, journalId: Int64, copying: Bool = false, readable: Bool = true) throws {
        // The source as a name in an open folder (a path only for the vault's own files).
        let (sourceFolder, sourceName) = sourcePlace ?? (AT_FDCWD, source)
        if !copying && qsys_rename_noreplace(sourceFolder, PathBytes.cString(sourceName), destination.folder, PathBytes.cString(destination.name)) == 0 {
            // Make sure what moved is the file we hold, not one swapped in at that path.
            var moved = stat()
            if fstatat(destination.folder, PathBytes.cString(destination.name), &moved, AT_SYMLINK_NOFOLLOW) == 0,
               UInt64(moved.st_dev) == identity.device, UInt64(moved.st_ino) == identity.inode {
                fsync(destination.folder)
                if sourcePlace == nil { fsyncDirectory(of: source) } else { fsyncFolder(sourceFolder) }
                try crashPoint?(.inPlace)
                return
            }
            _ = qsys_rename_noreplace(destination.folder, PathBytes.cString(destination.name), sourceFolder, PathBytes.cString(sourceName))
            throw VaultError.refused("\(source) was replaced while it was being moved; left in place")
        }
        let code = copying ? EXDEV : errno
        if code == EEXIST { throw VaultError.exists }
        guard code == EXDEV else { throw VaultError.system("cannot move \(source) to \(destination.path)", code) }
        guard readable else {
            throw VaultError.refused("\(source) cannot be read, and the vault is on another filesystem: moving it there would need a copy")
        }
        // Another filesystem: copy, flush, verify, then remove the original. Only when the copy
        // fits with room to spare: a huge (or sparse) file would otherwise fill the vault's disk
        // before failing, and be tried again, filling it again, every retry.
        if let refusal = Self.copyRefusal(size: identity.size, into: destination.folder, describing: source) { throw VaultError.refused(refusal) }
        guard !sha256.isEmpty else {
            throw VaultError.refused("\(source) was not hashed (too large to be judged): it can be renamed into the vault, not copied and checked")
        }
        let partial = destination.name + ".part"
        do {
            try Self.writeVerifiedCopy(of: fd, into: destination.folder, name: partial, sha256: sha256, describing: source)
            try crashPoint?(.partialWritten)
            guard qsys_rename_noreplace(destination.folder, PathBytes.cString(partial), destination.folder, PathBytes.cString(destination.name)) == 0 else {
                throw errno == EEXIST ? VaultError.exists : VaultError.system("cannot put \(destination.path) in place", errno)
            }
            fsync(destination.folder)
            try crashPoint?(.inPlace)
        } catch let crash as SimulatedCrash {
            throw crash
        } catch {
            unlinkat(destination.folder, PathBytes.cString(partial), 0)
            throw error
        }
        try store.markCopied(journalId: journalId)
        try crashPoint?(.copyRecorded)
        // Remove the original only if the path still names the file we copied.
        var current = stat()
        if fstatat(sourceFolder, PathBytes.cString(sourceName), &current, AT_SYMLINK_NOFOLLOW) == 0,
           UInt64(current.st_dev) == identity.device, UInt64(current.st_ino) == identity.inode {
            unlinkat(sourceFolder, PathBytes.cString(sourceName), 0)
            if sourcePlace == nil { fsyncDirectory(of: source) } else { fsyncFolder(sourceFolder) }
        }
        try crashPoint?(.originalRemoved)
    }

    /// Opens the folder `path` for a move into it, component by component, never following a
    /// symbolic link, creating missing folders when `creating`. A link is followed only when
    /// `followingLinks` (a folder the person named), or when the whole path still resolves to
    /// `allowedRealPath` (the link was there when the file was hidden, and leads to the same
    /// place). Anything else that is not a folder is refused, naming it.
    static func openFolder(_ path: String, creating: Bool, allowedRealPath: String?, followingLinks: Bool = false,
                           owner: (uid: uid_t, gid: gid_t)? = nil) throws -> Int32 {
        var fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.system("cannot open /", errno) }
        var walked = ""
        for component in path.split(separator: "/") where component != "." && !component.isEmpty {
            let name = String(component)
            walked += "/" + name
            var next = openat(fd, PathBytes.cString(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && creating {
                if mkdirat(fd, name, 0o755) != 0 && errno != EEXIST {
                    let code = errno
                    close(fd)
                    throw VaultError.system("cannot recreate the folder \(walked)", code)
                }
                next = openat(fd, PathBytes.cString(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                // Made again for the file's owner (by a service): theirs, with the usual mode,
                // whatever this process's umask (a service's 077 would leave them unreachable).
                if next >= 0, let owner {
                    fchown(next, owner.uid, owner.gid)
                    fchmod(next, 0o755)
                }
            }
            if next < 0 && (errno == ELOOP || errno == ENOTDIR) {
                var info = stat()
                let isLink = fstatat(fd, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_mode & S_IFMT == S_IFLNK
                close(fd)
                let resolved = realpath(PathBytes.cString(path), nil).map { pointer -> String in defer { free(pointer) }; return PathBytes.string(cString: pointer) }
                if isLink && (followingLinks || (allowedRealPath != nil && resolved == allowedRealPath)) {
                    let followed = open(PathBytes.cString(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                    guard followed >= 0 else { throw VaultError.system("cannot open \(path)", errno) }
                    return followed
                }
                throw VaultError.refused(isLink
                    ? "\(walked) is now a symbolic link (it was a folder when the file was hidden); nothing was released. Put it elsewhere with --to DIR"
                    : "\(walked) is not a folder; nothing was released. Put it elsewhere with --to DIR")
            }
            guard next >= 0 else {
                let code = errno
                close(fd)
                throw VaultError.system("cannot open the folder \(walked)", code)
            }
            close(fd)
            fd = next
        }
        return fd
    }

    /// fsync of a folder open as `fd` (O_PATH or not).
    func fsyncFolder(_ fd: Int32) {
        let opened = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if opened >= 0 { fsync(opened); close(opened) }
    }

    func fsyncDirectory(of path: String) {
        let dir = open(PathBytes.cString(URL(fileURLWithPath: path).deletingLastPathComponent().path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { fsync(dir); close(dir) }
    }

    /// Mode, owner (where permitted), extended attributes, then times. Returns whether the owner
    /// was restored.
    func restoreMetadata(of item: VaultItem, at path: String) -> Bool {
        restoreMetadata(of: item, folder: AT_FDCWD, name: path)
    }

    /// The same, for `name` in the open folder `folder`.
    func restoreMetadata(of item: VaultItem, folder: Int32, name: String) -> Bool {
        let fd = openat(folder, PathBytes.cString(name), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        fchmod(fd, mode_t(item.mode & 0o7777))
        let owner = fchown(fd, uid_t(item.uid), gid_t(item.gid)) == 0
        for (name, value) in item.attributes {
            _ = value.withUnsafeBytes { qsys_fsetxattr(fd, name, $0.baseAddress, value.count) }
        }
        var times = [timespec(tv_sec: Int(item.accessNanoseconds / 1_000_000_000), tv_nsec: Int(item.accessNanoseconds % 1_000_000_000)),
                     timespec(tv_sec: Int(item.modificationNanoseconds / 1_000_000_000), tv_nsec: Int(item.modificationNanoseconds % 1_000_000_000))]
        futimens(fd, &times)
        return owner
    }

    // MARK: - Who may recover

    var lockPath: String { root + "/.lock" }

    /// Opens the lock file and takes it as `operation` (LOCK_SH or LOCK_EX, maybe with LOCK_NB);
    /// the descriptor, or nil when `LOCK_NB` was given and someone else holds it.
    func lockFile(_ operation: Int32) throws -> Int32? {
        let fd = open(PathBytes.cString(lockPath), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw VaultError.system("cannot open the vault's lock \(lockPath)", errno) }
        while flock(fd, operation) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { return nil }
            throw VaultError.system("cannot lock \(lockPath)", code)
        }
        return fd
    }

    /// Runs a move with the vault's lock held shared, so no recovery runs under it.
    func whileMoving<T>(_ body: () throws -> T) throws -> T {
        guard let fd = try lockFile(LOCK_SH) else { throw VaultError.refused("the vault is being recovered; try again") }
        defer { close(fd) }
        return try body()
    }

    /// The vault, held by one long-lived process (the agent) for as long as it lives.
    public final class Claim: Sendable {
        let descriptor: Int32
        /// One line per interrupted move that was finished or rolled back when the claim was made.
        public let recovered: [String]
        /// How many previews of an older version (24 px) were made again at 6 px (``softenOldPreviews()``).
        public let softenedPreviews: Int
        init(descriptor: Int32, recovered: [String], softenedPreviews: Int = 0) {
            self.descriptor = descriptor
            self.recovered = recovered
            self.softenedPreviews = softenedPreviews
        }
        deinit { close(descriptor) }
    }

    /// Takes the vault for a long-lived process: waits (up to `seconds`) until no move of another
    /// process is under way, recovers every interrupted move, then keeps the vault's lock shared
    /// until the claim is released, so no other process recovers under it.
    public func claim(waitingUpTo seconds: Double = 30) throws -> Claim {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let fd = try lockFile(LOCK_EX | LOCK_NB) {
                let lines: [String]
                do { lines = try recover() } catch { close(fd); throw error }
                let softened = softenOldPreviews()
                // Downgrade: others may move again, but no one else recovers while we live.
                while flock(fd, LOCK_SH) != 0 && errno == EINTR {}
                return Claim(descriptor: fd, recovered: lines, softenedPreviews: softened)
            }
            if Date() >= deadline { throw VaultError.refused("another process keeps the vault busy (\(lockPath)); is another agent running?") }
            usleep(50_000)
        }
    }

    /// Recovers interrupted moves if nobody holds the vault (no agent runs, no move is under way);
    /// nil when someone does, and recovery is theirs.
    @discardableResult
    public func recoverIfIdle() throws -> [String]? {
        guard let fd = try lockFile(LOCK_EX | LOCK_NB) else { return nil }
        defer { close(fd) }
        return try recover()
    }

    // MARK: - Recovery

    /// Finishes or rolls back every move a crash interrupted, so each file is in exactly one
    /// place. Returns one line per entry handled. The caller holds the vault's lock exclusively.
    @discardableResult
    func recover() throws -> [String] {
        var lines: [String] = []
        for entry in try store.unfinishedMoves() {
            let item = try store.item(entry.itemId)
            let places = places(journalId: entry.id ?? 0)
            // The vault's side is a path of its own; the other side (the account's folders) only
            // by the folder recorded for it, checked by identity, or not at all.
            let vaultPath = entry.operation == .quarantine ? entry.destination : entry.source
            let outsidePath = entry.operation == .quarantine ? entry.source : entry.destination
            let outsideRole: PlaceRole = entry.operation == .quarantine ? .source : .destination
            let vaultFolder = open(PathBytes.cString((vaultPath as NSString).deletingLastPathComponent), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            let vaultName = (vaultPath as NSString).lastPathComponent
            var outside: (fd: Int32, name: String)?
            if let place = places[outsideRole] {
                outside = openPlace(place, journaledPath: outsidePath).map { ($0, place.name) }
            } else if places.isEmpty {
                // Journaled before places were recorded: by the path, never following a link in it.
                if let fd = try? Self.openFolder((outsidePath as NSString).deletingLastPathComponent, creating: false, allowedRealPath: nil) {
                    outside = (fd, (outsidePath as NSString).lastPathComponent)
                }
            }
            defer {
                if vaultFolder >= 0 { close(vaultFolder) }
                if let outside { close(outside.fd) }
            }
            func exists(_ folder: Int32, _ name: String) -> Bool {
                var info = stat()
                return folder >= 0 && fstatat(folder, PathBytes.cString(name), &info, AT_SYMLINK_NOFOLLOW) == 0
            }
            func hash(_ folder: Int32, _ name: String) -> String? {
                let fd = openat(folder, PathBytes.cString(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                guard fd >= 0 else { return nil }
                defer { close(fd) }
                return try? Self.sha256(fd: fd)
            }
            let inVault = exists(vaultFolder, vaultName)
            let outsideKnown = outside != nil
            let atOutside = outside.map { exists($0.fd, $0.name) } ?? false
            // The partial copy: in the vault's folder (a hide) or beside the released name.
            if entry.operation == .quarantine {
                unlinkat(vaultFolder, PathBytes.cString(vaultName + ".part"), 0)
            } else if let outside {
                unlinkat(outside.fd, PathBytes.cString(outside.name + ".part"), 0)
            }
            let (atSource, atDestination) = entry.operation == .quarantine ? (atOutside, inVault) : (inVault, atOutside)
            let (sourceSide, destinationSide): ((Int32, String)?, (Int32, String)?) = entry.operation == .quarantine
                ? (outside.map { ($0.fd, $0.name) }, (vaultFolder, vaultName)) : ((vaultFolder, vaultName), outside.map { ($0.fd, $0.name) })
            var outcome: String
            if !outsideKnown {
                // The account's side cannot be reached safely: decided by the vault's side alone,
                // and nothing is done there.
                if entry.operation == .quarantine {
                    outcome = inVault ? "finished (the folder it came from was not touched: it was not where it was)" : "rolled back"
                } else {
                    outcome = inVault ? "rolled back (the folder it went to was not touched: it was not where it was)" : "finished (the folder it went to was not touched)"
                }
            } else if atDestination && atSource, let source = sourceSide, let destination = destinationSide {
                // A cross-filesystem copy finished but the original was not yet removed.
                let copyOK = hash(destination.0, destination.1) == item?.sha256
                let sourceOK = hash(source.0, source.1) == item?.sha256
                if copyOK && sourceOK {
                    unlinkat(source.0, PathBytes.cString(source.1), 0)
                    outcome = "finished"
                } else {
                    unlinkat(destination.0, PathBytes.cString(destination.1), 0)
                    outcome = "rolled back (the copy did not match)"
                }
            } else if atDestination {
                outcome = "finished"
            } else if atSource {
                outcome = "rolled back"
            } else {
                outcome = "lost track: neither \(entry.source) nor \(entry.destination) exists"
            }
            let finished = outcome.hasPrefix("finished")
            let operation = entry.operation
            let status: VaultItem.Status = switch (operation, finished) {
            case (.quarantine, true): .quarantined
            case (.quarantine, false): .purged
            case (.release, true): .released
            case (.release, false): .quarantined
            }
            try store.resolve(entry, finished: finished, status: status,
                              event: AuditEvent(.recovered, itemId: operation == .quarantine && !finished ? nil : entry.itemId, path: entry.source,
                                                mode: item?.analysisMode ?? .adult, actor: "recovery", detail: "\(operation.rawValue) \(outcome)"))
            forgetPlaces(journalId: entry.id ?? 0)
            if operation == .release && finished, let item, let outside { _ = restoreMetadata(of: item, folder: outside.fd, name: outside.name) }
            if operation == .quarantine && finished, vaultFolder >= 0 { fchmodat(vaultFolder, PathBytes.cString(vaultName), 0o600, 0) }
            if operation == .quarantine && !finished { rmdir(PathBytes.cString((entry.destination as NSString).deletingLastPathComponent)) }
            lines.append("\(entry.operation.rawValue) of \(entry.source): \(outcome)")
        }
        return lines
    }

    // MARK: - Bytes

    /// The sha256 of an open file's bytes, as lowercase hex.
    public static func sha256(fd: Int32) throws -> String {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw VaultError.system("cannot read for hashing", errno) }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += off_t(n)
        }
        return hasher.finalize().hexString
    }

    public static func sha256(path: String) throws -> String {
        let fd = open(PathBytes.cString(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.system("cannot open \(path)", errno) }
        defer { close(fd) }
        return try sha256(fd: fd)
    }

    static func copy(from input: Int32, to output: Int32) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, $0.count, offset) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw VaultError.system("cannot read while copying", errno) }
            if n == 0 { return }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, n - written) }
                if w < 0 && errno == EINTR { continue }
                if w < 0 { throw VaultError.system("cannot write while copying (disk full?)", errno) }
                written += w
            }
            offset += off_t(n)
        }
    }

    /// Copies the file open as `input` to a new file `partial` (0600, never an existing one),
    /// flushes it, and checks that what reached the disk hashes to `expected`. Each descriptor is
    /// closed exactly once, whatever fails; on failure `partial` may be left for the caller to unlink.
    /// Why a copy of `size` bytes may not be written into the folder `folder` (nil: it may): it
    /// must fit with room to spare (5 % of the filesystem, at most 64 MiB), so that
    /// a huge or sparse file never fills the disk before failing.
    public static func copyRefusal(size: Int64, into folder: Int32, describing source: String) -> String? {
        var space = statvfs()
        guard fstatvfs(folder, &space) == 0 else { return nil }
        let free = Int64(space.f_bavail) * Int64(space.f_frsize)
        let spare = min(Int64(64 << 20), (Int64(space.f_blocks) * Int64(space.f_frsize)) / 20)
        guard size > free - spare else { return nil }
        return "\(source) (\(size >> 20) MiB) does not fit in the vault with room to spare (\(max(0, free) >> 20) MiB free); nothing was copied"
    }

    static func writeVerifiedCopy(of input: Int32, to partial: String, sha256 expected: String, describing source: String) throws {
        try writeVerifiedCopy(of: input, into: AT_FDCWD, name: partial, sha256: expected, describing: source)
    }

    /// The same, for `name` in the open folder `folder`.
    static func writeVerifiedCopy(of input: Int32, into folder: Int32, name partial: String, sha256 expected: String, describing source: String) throws {
        let out = openat(folder, PathBytes.cString(partial), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard out >= 0 else { throw VaultError.system("cannot create \(partial)", errno) }
        do {
            defer { close(out) }
            try copy(from: input, to: out)
            guard fsync(out) == 0 else { throw VaultError.system("cannot flush \(partial)", errno) }
        }
        let check = openat(folder, PathBytes.cString(partial), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard check >= 0 else { throw VaultError.system("cannot read back \(partial)", errno) }
        defer { close(check) }
        guard try sha256(fd: check) == expected else {
            throw VaultError.refused("the copy of \(source) does not match its hash; nothing was removed")
        }
    }

    /// Records where item `itemId` came from, found after it was hidden (a browser writes its
    /// download history a moment after the file): only where nothing was known. A site that is
    /// blocked adds its reason to the item's (hidden by analysis first, it is from there too).
    @discardableResult
    public func recordOrigin(_ origin: DownloadSource, of itemId: Int64, actor: String) throws -> Bool {
        let blocked = try origin.host.map { try store.isBlocked(host: $0) } ?? false
        return try store.recordOrigin(origin, of: itemId, blockedReason: blocked ? "blocked: " + AuditStore.blockedSiteReason(origin.host ?? "") : nil, actor: actor)
    }

    /// Where a download came from: the host of the `user.xdg.origin.url` attribute wget and curl set.
    public static func originHost(fd: Int32) -> String? {
        guard let data = extendedAttributes(fd: fd)["user.xdg.origin.url"], let text = String(data: data, encoding: .utf8),
              let host = URL(string: text)?.host, !host.isEmpty else { return nil }
        return host.lowercased()
    }

    static func extendedAttributes(fd: Int32) -> [String: Data] {
        let size = qsys_flistxattr(fd, nil, 0)
        guard size > 0 else { return [:] }
        var names = [CChar](repeating: 0, count: size)
        let got = qsys_flistxattr(fd, &names, size)
        guard got > 0 else { return [:] }
        var result: [String: Data] = [:]
        for raw in names[0..<got].split(separator: 0) {
            let name = String(decoding: raw.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let length = qsys_fgetxattr(fd, name, nil, 0)
            guard length >= 0 else { continue }
            var value = [UInt8](repeating: 0, count: length)
            let read = qsys_fgetxattr(fd, name, &value, length)
            if read >= 0 { result[name] = Data(value[0..<read]) }
        }
        return result
    }
}

/// Why the vault did not act; nothing was moved or lost when it throws.
public enum VaultError: Error, CustomStringConvertible {
    case refused(String)
    case system(String, Int32)
    case exists

    public var description: String {
        switch self {
        case .refused(let message): return message
        case .system(let message, let code): return "\(message): \(String(cString: strerror(code)))"
        case .exists: return "the destination exists"
        }
    }
}
