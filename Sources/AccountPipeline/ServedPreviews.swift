import Foundation
import Locking
import PathBytes
import QuarantineStore

/// The blurred previews a service handed out, by size and sha256, so that the copy the account's
/// CLI makes of one (`quarantine show` writes it to `/tmp/quarantine-preview-UID/item-N.jpg`) is
/// not held and judged as a new picture of the account's. (Its bytes are on the allow list too,
/// ``Review/openPreview(of:)``, but the list is consulted by a lane after the file is held at
/// once: the path `show` printed was gone until then.)
///
/// Only the very bytes handed out count: the account was given them to look at, so a file with
/// exactly those bytes, wherever it is saved, shows nothing new. Any other file of the same size
/// is checked as usual; a name or a folder counts for nothing.
public final class ServedPreviews: Sendable {
    /// Previews larger than this are not remembered (they are checked like any file).
    public static let largest = 16 << 20
    /// How many previews are remembered (the oldest are forgotten first).
    public static let capacity = 512

    private let known = Locked<(order: [String], sizes: [Int64: Set<String>])>(([], [:]))

    public init() {}

    /// Remembers the preview an open descriptor reads (from its start; the offset is left as it was).
    public func remember(_ fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0, info.st_size <= Self.largest,
              let digest = Self.digest(fd) else { return }
        let size = Int64(info.st_size), key = "\(size):\(digest)"
        known.withLock { known in
            guard known.sizes[size, default: []].insert(key).inserted else { return }
            known.order.append(key)
            if known.order.count > Self.capacity {
                let oldest = known.order.removeFirst()
                if let oldSize = Int64(oldest.prefix { $0 != ":" }) {
                    known.sizes[oldSize]?.remove(oldest)
                    if known.sizes[oldSize]?.isEmpty == true { known.sizes[oldSize] = nil }
                }
            }
        }
    }

    /// Whether the file at `path` is, byte for byte, a preview handed out, and is still the file
    /// that was noticed (`device`, `inode`, `size`, `modificationNanoseconds`): read through one
    /// descriptor opened without following a link. Cheap for any other size (nothing is read).
    public func isServed(path: String, device: UInt64, inode: UInt64, size: Int64, modificationNanoseconds: Int64) -> Bool {
        guard let keys = known.withLock({ $0.sizes[size] }), !keys.isEmpty else { return false }
        let fd = LongPaths.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, UInt64(info.st_dev) == device, UInt64(info.st_ino) == inode,
              Int64(info.st_size) == size,
              Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) == modificationNanoseconds,
              let digest = Self.digest(fd) else { return false }
        return keys.contains("\(size):\(digest)")
    }

    /// The sha256 of what `fd` reads from its start, as hex (nil when it cannot be read).
    static func digest(_ fd: Int32) -> String? { try? Vault.sha256(fd: fd) }
}
