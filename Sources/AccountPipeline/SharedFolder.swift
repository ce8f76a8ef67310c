import Foundation
import QuarantineBase

/// A folder every account can write in (sticky, world-writable) that the guardian service
/// watches for the protected account's own files: `/tmp`, `/var/tmp`, `/dev/shm`.
///
/// Under its unit the service has a private `/tmp` and `/var/tmp` of its own (`PrivateTmp=yes`,
/// for its own temporary files), and the unit binds the host's at side paths
/// (`BindPaths=/tmp:/run/quarantine/host/tmp ...`): there it watches the side path, and names
/// what it finds by the host's path (`/tmp/card.png`) to people. Without the unit (no bind there)
/// it watches the folder itself.
public struct SharedFolder: Sendable, Equatable {
    /// The folder as the account and people know it: `/tmp`.
    public var path: String
    /// Where this process reaches the host's folder: the side path when the unit bound it there,
    /// else ``path``.
    public var reachedAt: String
    /// Why the host's folder cannot be reached (only a private one of the unit's is there), or nil.
    public var unreachable: String?

    public init(path: String, reachedAt: String? = nil, unreachable: String? = nil) {
        self.path = path
        self.reachedAt = reachedAt ?? path
        self.unreachable = unreachable
    }

    /// The side paths where the guardian unit binds the host's folders (its `BindPaths=`).
    public static let sidePaths: [(path: String, side: String?)] = [
        ("/tmp", Paths.socketFolder + "/host/tmp"), ("/var/tmp", Paths.socketFolder + "/host/var-tmp"), ("/dev/shm", nil),
    ]

    /// The shared folders as this process reaches them: through a side path that is a mount point
    /// in `mounts` (the unit bound the host's folder there), else directly. With no table (it
    /// cannot be read), directly. A folder that is systemd's private one for the unit, with no
    /// bind of the host's at its side path (a unit installed before it had one), is unreachable.
    public static func standard(mounts: MountTable?) -> [SharedFolder] {
        sidePaths.map { entry in
            guard let side = entry.side, let mounts else { return SharedFolder(path: entry.path) }
            if mounts.isMountPoint(side) { return SharedFolder(path: entry.path, reachedAt: side) }
            if mounts.isPrivateTemporaryFolder(entry.path) {
                return SharedFolder(path: entry.path, unreachable: "the service's unit gives it a private \(entry.path) and binds no host's one at \(side):"
                    + " install its unit again with 'sudo quarantine guardian enable'")
            }
            return SharedFolder(path: entry.path)
        }
    }

    /// `path` (as this process reaches it) named as people know it: a path below a side path
    /// becomes the same path below the host's folder; any other path is returned as it is.
    public static func shown(_ path: String, in folders: [SharedFolder]) -> String {
        for folder in folders where folder.reachedAt != folder.path {
            if path == folder.reachedAt { return folder.path }
            if path.hasPrefix(folder.reachedAt + "/") { return folder.path + path.dropFirst(folder.reachedAt.count) }
        }
        return path
    }

    /// `text` (a detail of the history, a message) with every path below a side path named as
    /// people know it.
    public static func shownText(_ text: String, in folders: [SharedFolder]) -> String {
        var result = text
        for folder in folders where folder.reachedAt != folder.path && result.contains(folder.reachedAt) {
            result = result.replacingOccurrences(of: folder.reachedAt + "/", with: folder.path + "/")
            if result.hasSuffix(folder.reachedAt) { result = String(result.dropLast(folder.reachedAt.count)) + folder.path }
        }
        return result
    }

    /// Where the guardian unit binds the host's `/run/user` (its `BindPaths=`): `ProtectHome=tmpfs`
    /// hides the host's own there.
    public static let runtimeSidePath = Paths.socketFolder + "/host/run-user"

    /// The runtime folder of the account `uid` (`/run/user/<uid>`, its `XDG_RUNTIME_DIR`) as this
    /// process reaches it: below ``runtimeSidePath`` when that is a mount point in `mounts` (the
    /// unit bound the host's `/run/user` there; logind's later mounts reach it too, the unit's
    /// namespace being a slave of the host's), else directly.
    public static func runtimeFolder(uid: UInt32, mounts: MountTable?) -> SharedFolder {
        let path = "/run/user/\(uid)"
        guard let mounts, mounts.isMountPoint(runtimeSidePath) else { return SharedFolder(path: path) }
        return SharedFolder(path: path, reachedAt: runtimeSidePath + "/\(uid)")
    }
}
