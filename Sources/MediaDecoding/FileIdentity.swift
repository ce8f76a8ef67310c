import PathBytes
#if canImport(Glibc)
import Glibc
#endif

/// What identifies one version of one file: device, inode, size, modification time and status
/// change time. The last one no program can set (`utime` restores an mtime, never a ctime), so a
/// file rewritten in place with its old size and mtime put back is still a new version.
///
/// The analyzer records it when it reads a file; whoever acts on the verdict later (the vault)
/// re-checks it, so a file that was replaced or changed meanwhile is never acted on blindly.
public struct FileIdentity: Sendable, Hashable, Codable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since the epoch.
    public var modificationNanoseconds: Int64
    /// Status change time (`st_ctim`) in nanoseconds since the epoch; 0 where unknown.
    public var changeNanoseconds: Int64

    public init(device: UInt64, inode: UInt64, size: Int64, modificationNanoseconds: Int64, changeNanoseconds: Int64 = 0) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
        self.changeNanoseconds = changeNanoseconds
    }

    /// The identity in a `stat` result.
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modificationNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
                  changeNanoseconds: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    /// The identity of what is at `path` now (a link itself, not what it points to); nil when
    /// nothing is.
    public init?(statAt path: String) {
        var info = stat()
        guard lstat(PathBytes.cString(path), &info) == 0 else { return nil }
        self.init(info)
    }

    enum CodingKeys: String, CodingKey { case device, inode, size, modificationNanoseconds, changeNanoseconds }

    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        self.init(device: try values.decode(UInt64.self, forKey: .device), inode: try values.decode(UInt64.self, forKey: .inode),
                  size: try values.decode(Int64.self, forKey: .size), modificationNanoseconds: try values.decode(Int64.self, forKey: .modificationNanoseconds),
                  changeNanoseconds: try values.decodeIfPresent(Int64.self, forKey: .changeNanoseconds) ?? 0)
    }
}
