import CSystemShims
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private copy of a browser's SQLite database with its `-journal` and `-wal`, taken without
/// parsing any of them: their bytes, each in a memory file (memfd) of this process.
///
/// Why a copy: both browsers keep their history database locked while they run (measured with
/// Chromium 156 and Firefox ESR 153: a plain read-only open fails with "database is locked"), and
/// Firefox keeps its newest rows in the `-wal` for seconds, which an `immutable=1` open of the
/// main file does not see. Whoever parses the copy (``HistoryParser``: a guardian service's
/// sandboxed analysis worker, or a person's own agent) makes the committed page image from the
/// bytes (``HistoryImage``) and reads it in memory. The process that copies only reads bytes:
/// the browser's files are opened O_RDONLY, never by SQLite; nothing is created next to them,
/// nor on any disk.
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

    /// The copies: the main file's, and the side files' that exist.
    let files: HistoryFiles

    /// The side files copied along, in the order they are read (before the main file).
    static let sideSuffixes = ["-journal", "-wal"]
    /// SQLite's journal magic. A rollback journal ending with it carries a super-journal name,
    /// which SQLite would open and might delete after rolling back: such a journal is refused.
    static let journalMagic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]

    /// Copies `database` (and its side files) into memory files.
    ///
    /// - Parameters:
    ///   - allowedOwners: the users whose files may be read; any other owner is refused.
    ///   - maximumSize: the most bytes read, the database and its side files together.
    ///   - attempts: how many times a copy that changed under the reader is taken again.
    static func make(of database: String, allowedOwners: Set<uid_t>, maximumSize: Int64, attempts: Int = 3) throws(Failure) -> DatabaseCopy {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try makeOnce(of: database, allowedOwners: allowedOwners, maximumSize: maximumSize)
            } catch .busy where attempt < attempts {
                usleep(20_000)
            }
        }
    }

    /// Closes the memory files (once: the copy is not used after).
    func remove() {
        files.close()
    }

    // MARK: - One attempt

    /// An opened source file and what fstat said about it before reading.
    private struct Source {
        let suffix: String
        let fd: Int32
        let stamp: FileStamp
    }

    private static func makeOnce(of database: String, allowedOwners: Set<uid_t>, maximumSize: Int64) throws(Failure) -> DatabaseCopy {
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

        var copies: [String: Int32] = [:]
        do {
            for source in sources {
                let copy = qsys_memfd("history" + source.suffix)
                guard copy >= 0 else { throw Failure.unreadable("no memory file for the copy: \(String(cString: strerror(errno)))") }
                copies[source.suffix] = copy
                try copyFile(from: source.fd, size: source.stamp.size, to: copy)
            }
            for source in sources where FileStamp(fd: source.fd) != source.stamp { throw Failure.busy }
            if let journal = copies["-journal"], try namesSuperJournal(journal) {
                throw Failure.unreadable("its journal names a super-journal")
            }
            return DatabaseCopy(files: HistoryFiles(main: copies[""]!, wal: copies["-wal"], journal: copies["-journal"]))
        } catch let failure as Failure {
            copies.values.forEach { close($0) }
            throw failure
        } catch {
            copies.values.forEach { close($0) }
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

    /// Copies at most `size` bytes (the size seen before reading: bytes appended meanwhile are
    /// caught by the stamp check) into the memory file `out`.
    private static func copyFile(from fd: Int32, size: Int64, to out: Int32) throws(Failure) {
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
    private static func namesSuperJournal(_ fd: Int32) throws(Failure) -> Bool {
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
