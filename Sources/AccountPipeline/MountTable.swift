import Foundation
import PathBytes

/// The mount points of this process's mount namespace, read from `/proc/self/mountinfo`.
///
/// The guardian service asks it two things: which removable media are mounted for the protected
/// account now (`/media/<account>/...`, `/run/media/<account>/...`), and whether the side path
/// where its unit binds the host's `/tmp` is a mount of its own (then that is the host's folder,
/// not an empty one).
public struct MountTable: Sendable, Equatable {
    /// Every mount point, as a path (the kernel's octal escapes undone), in the table's order.
    public var mountPoints: [String]
    /// The folder of its filesystem each mount shows (the fourth field: `/` for a whole
    /// filesystem, a folder for a bind), by mount point; the last mount at a point wins.
    public var sources: [String: String]

    public init(mountPoints: [String], sources: [String: String] = [:]) {
        self.mountPoints = mountPoints
        self.sources = sources
    }

    /// The table of `text` (the format of `/proc/self/mountinfo`: the mount point is the fifth field).
    public init(mountinfo text: String) {
        var points: [String] = []
        var sources: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 4 else { continue }
            let point = Self.unescape(String(fields[4]))
            points.append(point)
            sources[point] = Self.unescape(String(fields[3]))
        }
        mountPoints = points
        self.sources = sources
    }

    /// Whether `path` is a private temporary folder systemd made for a unit (`PrivateTmp=`): a
    /// bind of a `systemd-private-...` folder, empty for everyone else's files.
    public func isPrivateTemporaryFolder(_ path: String) -> Bool {
        sources[path]?.contains("/systemd-private-") == true
    }

    /// This process's table now; nil when `/proc/self/mountinfo` cannot be read.
    public static func current(path: String = "/proc/self/mountinfo") -> MountTable? {
        // Read to its end: Foundation's readers stop after a /proc file's first 4 KiB, and a
        // medium mounted last is listed last.
        guard let bytes = PathBytes.wholeFile(path) else { return nil }
        return MountTable(mountinfo: PathBytes.string(bytes))
    }

    /// Whether `path` is a mount point.
    public func isMountPoint(_ path: String) -> Bool { mountPoints.contains(path) }

    /// The mount points strictly below any of `folders` (a folder itself is not one), sorted,
    /// each once.
    public func mountPoints(below folders: [String]) -> [String] {
        let prefixes = folders.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        return Array(Set(mountPoints.filter { point in prefixes.contains { point.hasPrefix($0) && point.count > $0.count } })).sorted()
    }

    /// `\040` (space), `\011` (tab), `\012` (newline), `\134` (backslash) as the bytes they stand for.
    static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let source = Array(field.utf8)
        var index = 0
        while index < source.count {
            if source[index] == UInt8(ascii: "\\"), index + 3 < source.count {
                let digits = source[(index + 1)...(index + 3)]
                if digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }) {
                    bytes.append(digits.reduce(0) { $0 &* 8 &+ ($1 - UInt8(ascii: "0")) })
                    index += 4
                    continue
                }
            }
            bytes.append(source[index])
            index += 1
        }
        return PathBytes.string(bytes)
    }
}
