import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private copy of a browser's SQLite database with its `-journal` and `-wal`, taken without
/// opening the browser's files with SQLite at all.
///
/// Why a copy: both browsers keep their history database locked while they run (measured with
/// Chromium 156 and Firefox ESR 153: a plain read-only open fails with "database is locked"), and
/// Firefox keeps its newest rows in the `-wal` for seconds, which an `immutable=1` open of the
/// main file does not see. The copy is opened by SQLite alone, in a folder only this process can
/// enter (0700): a copied `-journal` is rolled back into the copy and a copied `-wal` replayed, so
/// the copy shows what the browser last committed. The browser's files are only ever read
/// (O_RDONLY); no `-shm`, lock or journal is created next to them.
///
/// The copy is consistent when none of the files changed while they were read (inode, size and
/// modification time the same before and after); when one did, it is taken again, a few times.
struct DatabaseCopy {
    /// Why no copy was made.
    enum Failure: Error, Equatable {
        /// No database file there.
        case missing
        /// The database (or its -wal / -journal) is owned by a user not allowed to name the origin.
        case notOwned(uid: UInt32)
        /// Over the size limit (the database and its side files together).
        case tooLarge(bytes: Int64)
        /// The browser kept writing while it was read.
        case busy
        /// Not a regular file, a symbolic link, unreadable, a journal naming a super-journal, ...
        case unreadable(String)
    }

    /// The private folder (0700) holding the copy.
    let folder: String
    /// The copy of the main database file; its -journal / -wal copies lie next to it.
    let path: String

    /// The side files copied along, in the order they are read (before the main file).
    static let sideSuffixes = ["-journal", "-wal"]
    /// SQLite's journal magic. A rollback journal ending with it carries a super-journal name,
    /// which SQLite would open and might delete after rolling back: such a journal is refused.
    static let journalMagic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]

    /// Copies `database` (and its side files) into a new private folder under `temporaryParent`.
    ///
    /// - Parameters:
    ///   - allowedOwners: the users whose files may be read; any other owner is refused.
    ///   - maximumSize: the most bytes read, the database and its side files together.
    ///   - attempts: how many times a copy that changed under the reader is taken again.
    static func make(of database: String, allowedOwners: Set<uid_t>, maximumSize: Int64,
                     temporaryParent: String, attempts: Int = 3) throws(Failure) -> DatabaseCopy {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try makeOnce(of: database, allowedOwners: allowedOwners, maximumSize: maximumSize, temporaryParent: temporaryParent)
            } catch .busy where attempt < attempts {
                usleep(20_000)
            }
        }
    }

    /// Removes the private folder and everything in it.
    func remove() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    // MARK: - One attempt

    /// An opened source file and what fstat said about it before reading.
    private struct Source {
        let suffix: String
        let fd: Int32
        let stamp: FileStamp
    }

    private static func makeOnce(of database: String, allowedOwners: Set<uid_t>, maximumSize: Int64,
                                 temporaryParent: String) throws(Failure) -> DatabaseCopy {
        var sources: [Source] = []
        defer { for source in sources { close(source.fd) } }
        // The side files first: a journal or WAL read before the main file, with none of them
        // changed by the end, describes the main file read after it.
        for suffix in sideSuffixes + [""] {
            guard let source = try openSource(database + suffix, suffix: suffix, allowedOwners: allowedOwners) else {
                if suffix.isEmpty { throw .missing }
                continue
            }
            sources.append(source)
        }
        let total = sources.reduce(Int64(0)) { $0 + $1.stamp.size }
        guard total <= maximumSize else { throw .tooLarge(bytes: total) }

        guard let folder = makePrivateFolder(in: temporaryParent) else { throw .unreadable("no private temporary folder in \(temporaryParent)") }
        let copy = DatabaseCopy(folder: folder, path: folder + "/db")
        do {
            for source in sources {
                try copyFile(from: source.fd, size: source.stamp.size, to: copy.path + source.suffix)
            }
            for source in sources where FileStamp(fd: source.fd) != source.stamp { throw Failure.busy }
            if sources.contains(where: { $0.suffix == "-journal" }), try namesSuperJournal(copy.path + "-journal") {
                throw Failure.unreadable("its journal names a super-journal")
            }
            return copy
        } catch let failure as Failure {
            copy.remove()
            throw failure
        } catch {
            copy.remove()
            throw .unreadable("\(error)")
        }
    }

    /// Opens one file read-only without following a symbolic link and without blocking (a FIFO
    /// named History must not hang the lookup); nil when there is none.
    private static func openSource(_ path: String, suffix: String, allowedOwners: Set<uid_t>) throws(Failure) -> Source? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        if fd < 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw .unreadable(code == ELOOP ? "\(path) is a symbolic link" : "\(path): \(String(cString: strerror(code)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .unreadable("\(path) is not a regular file")
        }
        guard allowedOwners.contains(info.st_uid) else {
            close(fd)
            throw .notOwned(uid: UInt32(info.st_uid))
        }
        return Source(suffix: suffix, fd: fd, stamp: FileStamp(info))
    }

    private static func makePrivateFolder(in parent: String) -> String? {
        var template = Array((parent.hasSuffix("/") ? parent : parent + "/").utf8CString.dropLast()) + Array("quarantine-history-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let made = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: made)   // mkdtemp makes it 0700
        }
    }

    /// Copies at most `size` bytes (the size seen before reading: bytes appended meanwhile are
    /// caught by the stamp check) into a new file only this user can read.
    private static func copyFile(from fd: Int32, size: Int64, to destination: String) throws(Failure) {
        let out = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard out >= 0 else { throw .unreadable("cannot create the copy: \(String(cString: strerror(errno)))") }
        defer { close(out) }
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let n = pread(fd, buffer, min(chunk, Int(size - offset)), off_t(offset))
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable("read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw .busy }   // shrank while read
            var written = 0
            while written < n {
                let w = write(out, buffer + written, n - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    throw .unreadable("write: \(String(cString: strerror(errno)))")
                }
                written += w
            }
            offset += Int64(n)
        }
    }

    /// Whether a rollback journal ends with a super-journal record (its last 8 bytes are the
    /// journal magic), which SQLite would follow to another file.
    private static func namesSuperJournal(_ path: String) throws(Failure) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .unreadable("cannot reopen the journal copy") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable("cannot stat the journal copy") }
        guard info.st_size >= 16 else { return false }
        var tail = [UInt8](repeating: 0, count: 8)
        let n = tail.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 8, off_t(info.st_size - 8)) }
        return n == 8 && tail == journalMagic
    }
}

/// What changes when a file is written: its identity, size and modification time.
struct FileStamp: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }

    init?(fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The stamp of the file at `path` (not following a final symbolic link); nil when absent.
    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}
