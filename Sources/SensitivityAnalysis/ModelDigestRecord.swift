#if canImport(Glibc)
import Glibc
#endif

/// Which pinned files in one folder were hashed already, so that an unchanged model is not read
/// and hashed again at every start (64 MB, about half a second of CPU in a debug build).
///
/// The record is a file, ``fileName``, in the folder of the files it describes, with one line per
/// file: its name, its sha256 and its identity (``Identity``: device, inode, size, modification
/// and status-change times in nanoseconds). A file matches its line only while all of these are
/// unchanged; any write to the file changes its status-change time (which no unprivileged
/// program can set back, unlike the modification time), and a rename over it or a new copy is
/// another inode, so every change is hashed again.
///
/// A record is written only into a folder owned by this process's user and writable by nobody
/// else, and none under `/usr` (a package's files stay as the package manager left them).
///
/// Who can write the record: it lives beside the files, so whoever can write that folder could
/// replace the model itself anyway. A record is believed only when it is a regular file with one
/// link, not a symbolic link, owned by this process's effective user or root, and writable by
/// nobody else (no group or other write bit). A record written by another account (a child
/// beside its guardian's service, another local user) is ignored, and the files are hashed.
public enum ModelDigestRecord {
    /// The record's name in the folder of the files it describes.
    public static let fileName = ".quarantine-verified"
    /// A record larger than this is not ours: ignored.
    static let largestRecord = 64 * 1024

    /// What identifies one version of a file: any write, rename over it or touch changes it.
    public struct Identity: Sendable, Hashable {
        public var device: UInt64
        public var inode: UInt64
        public var size: Int64
        public var modified: timespec
        public var changed: timespec

        public init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = info.st_mtim
            changed = info.st_ctim
        }

        /// The identity of the file at `path` (symbolic links followed, as a loader follows them).
        public init?(ofFileAt path: String) {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            self.init(info)
        }

        /// The identity of the open file `descriptor`.
        public init?(ofDescriptor descriptor: Int32) {
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            self.init(info)
        }

        var fields: [String] {
            ["\(device)", "\(inode)", "\(size)", "\(modified.tv_sec)", "\(modified.tv_nsec)", "\(changed.tv_sec)", "\(changed.tv_nsec)"]
        }

        public static func == (a: Identity, b: Identity) -> Bool { a.fields == b.fields }
        public func hash(into hasher: inout Hasher) { hasher.combine(fields) }
    }

    /// One line of a record.
    struct Line: Equatable {
        var name: String
        var sha256: String
        var identity: [String]

        init(name: String, sha256: String, identity: Identity) {
            self.name = name
            self.sha256 = sha256
            self.identity = identity.fields
        }

        init?(_ text: Substring) {
            let parts = text.split(separator: " ").map(String.init)
            guard parts.count == 9, parts[1].count == 64, parts[2...].allSatisfy({ Int64($0) != nil || UInt64($0) != nil }) else { return nil }
            name = parts[0]
            sha256 = parts[1]
            identity = Array(parts[2...])
        }

        var text: String { ([name, sha256] + identity).joined(separator: " ") }
    }

    /// The record's path for the file at `path`: in the same folder.
    static func recordPath(forFileAt path: String) -> (folder: String, name: String, record: String) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return (folder, name, (folder.isEmpty ? "" : folder) + "/" + fileName)
    }

    /// The sha256 the folder's trusted record gives for the file at `path` in its version
    /// `identity`, or nil (no record, a record not to be believed, or another version).
    public static func recordedDigest(forFileAt path: String, identity: Identity) -> String? {
        let (_, name, record) = recordPath(forFileAt: path)
        let wanted = Line(name: name, sha256: String(repeating: "0", count: 64), identity: identity)
        return trustedLines(at: record)?.first { $0.name == name && $0.identity == wanted.identity }?.sha256
    }

    /// Records that the file at `path`, in its version `identity`, has `sha256`. Best effort: a
    /// folder this process cannot write keeps no record (the files are hashed at each start).
    public static func record(_ sha256: String, forFileAt path: String, identity: Identity) {
        let (folder, name, record) = recordPath(forFileAt: path)
        guard !name.contains(" "), !name.contains("\n"), canRecord(inFolder: folder) else { return }
        var lines = (trustedLines(at: record) ?? []).filter { $0.name != name }
        lines.append(Line(name: name, sha256: sha256, identity: identity))
        let text = lines.suffix(32).map(\.text).joined(separator: "\n") + "\n"
        var template = Array((folder + "/" + fileName + ".XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return }
        let temporary = String(cString: template)
        var written = false
        defer {
            close(fd)
            if !written { unlink(temporary) }
        }
        // Readable by all (a worker user reads root's record); writable by its owner only.
        guard fchmod(fd, 0o644) == 0 else { return }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
        written = rename(temporary, record) == 0
    }

    /// Whether this process keeps records in `folder`: only in a folder of its user's own that
    /// nobody else can write (never, as root, in a folder another account controls and could
    /// point elsewhere by a symbolic link), and never under `/usr` (a package's folders stay as
    /// the package manager wrote them, with nothing left behind on purge).
    public static func canRecord(inFolder folder: String) -> Bool {
        var owner = stat()
        return !folder.hasPrefix("/usr/") && stat(folder, &owner) == 0 && owner.st_uid == geteuid()
            && owner.st_mode & (S_IWGRP | S_IWOTH) == 0 && access(folder, W_OK) == 0
    }

    /// The lines of the record at `path` when it is to be believed (see the type's comment).
    static func trustedLines(at path: String) -> [Line]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, isTrusted(info) else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            offset += n
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap(Line.init)
    }

    /// Whether a record with `info` can only have been written by this process's user or root.
    static func isTrusted(_ info: stat) -> Bool {
        info.st_mode & S_IFMT == S_IFREG && info.st_nlink == 1 && (info.st_uid == geteuid() || info.st_uid == 0)
            && info.st_mode & (S_IWGRP | S_IWOTH) == 0 && info.st_size <= largestRecord
    }
}
