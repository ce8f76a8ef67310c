import Foundation
import PathBytes

/// The whole text of a /proc file (``PathBytes/wholeFile(_:limit:)``: Foundation's readers stop
/// after such a file's first page, 4 KiB, and a process's maps, an inotify descriptor's fdinfo
/// with more than ~40 watches or /proc/locks can be longer).
public func procFileText(_ path: String) -> String? {
    PathBytes.wholeFile(path).map { String(decoding: $0, as: UTF8.self) }
}

/// A file's identity as the kernel's inotify fdinfo lines name it: `sdev:` (the kernel's own
/// device encoding, major << 20 | minor) and `ino:`, both hexadecimal.
public struct WatchedInode: Hashable, Sendable {
    public let device: UInt64
    public let inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity of `path` itself (not followed), in the kernel's device encoding.
    public init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let dev = UInt64(info.st_dev)
        // glibc's encoding of dev_t, undone (gnu_dev_major / gnu_dev_minor).
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
        let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
        self.init(device: major << 20 | minor, inode: UInt64(info.st_ino))
    }

    /// The files a process's inotify descriptors watch, from its fdinfo (`/proc/<pid>/fdinfo`).
    public static func watched(byProcess pid: String = "self") -> Set<WatchedInode> {
        var watched = Set<WatchedInode>()
        let fm = FileManager.default
        for fd in (try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
            guard (try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == "anon_inode:inotify",
                  let info = procFileText("/proc/\(pid)/fdinfo/\(fd)") else { continue }
            for line in info.split(separator: "\n") where line.hasPrefix("inotify wd:") {
                var inode: UInt64?
                var device: UInt64?
                for field in line.split(separator: " ") {
                    if field.hasPrefix("ino:") { inode = UInt64(field.dropFirst(4), radix: 16) }
                    if field.hasPrefix("sdev:") { device = UInt64(field.dropFirst(5), radix: 16) }
                }
                if let inode, let device { watched.insert(WatchedInode(device: device, inode: inode)) }
            }
        }
        return watched
    }
}
