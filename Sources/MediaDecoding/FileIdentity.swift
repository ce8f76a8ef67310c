#if canImport(Glibc)
import Glibc
#endif

/// What identifies one version of one file: device, inode, size and modification time.
///
/// The analyzer records it when it reads a file; whoever acts on the verdict later (the vault)
/// re-checks it, so a file that was replaced or changed meanwhile is never acted on blindly.
public struct FileIdentity: Sendable, Hashable, Codable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    /// Modification time in nanoseconds since the epoch.
    public var modificationNanoseconds: Int64

    public init(device: UInt64, inode: UInt64, size: Int64, modificationNanoseconds: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationNanoseconds = modificationNanoseconds
    }

    /// The identity in a `stat` result.
    public init(_ info: stat) {
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                  modificationNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }
}
