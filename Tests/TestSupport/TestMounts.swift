import Foundation

/// Unmounting a test's own mount, and naming what keeps it busy.
///
/// A test's mount sits in `/tmp` or `/run/user`, folders that other parts of the run walk at any
/// moment: a guardian service started by another test watches `/tmp` for its account's files and
/// opens each new folder there while it adds its watches. A plain `umount2` that meets such a walk
/// fails with EBUSY although nothing of the test's own keeps the mount (seen twice in CI).
public enum TestMounts {
    /// The descriptors, working folders and root folders of `pid` (or every process, nil) that
    /// lie at or below `mountPoint`, as `pid comm: what`.
    public static func holders(of mountPoint: String, pid: pid_t? = nil) -> [String] {
        let pids: [String]
        if let pid { pids = [String(pid)] } else {
            pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { Int($0) != nil }
        }
        var found: [String] = []
        for process in pids {
            let comm = ((try? String(contentsOfFile: "/proc/\(process)/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
            var links = ["cwd", "root"].map { "/proc/\(process)/\($0)" }
            links += ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/fd")) ?? []).map { "/proc/\(process)/fd/\($0)" }
            for link in links {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else { continue }
                if target == mountPoint || target.hasPrefix(mountPoint + "/") {
                    found.append("\(process) \(comm): \(link.split(separator: "/").suffix(2).joined(separator: "/")) -> \(target)")
                }
            }
        }
        return found
    }

    /// Unmounts `mountPoint` (without MNT_DETACH), trying again while another process keeps it
    /// busy for a moment, for up to `seconds`. Nil when it is unmounted; else why not, with
    /// the processes that held it at the last try.
    public static func unmount(_ mountPoint: String, within seconds: Double = 3) -> String? {
        let until = Date().addingTimeInterval(seconds)
        var tries = 0
        while true {
            tries += 1
            if umount2(mountPoint, 0) == 0 { return nil }
            let error = errno
            guard error == EBUSY, Date() < until else {
                let held = error == EBUSY ? holders(of: mountPoint) : []
                return "umount2 \(mountPoint): \(String(cString: strerror(error))) after \(tries) tries"
                    + (held.isEmpty ? "" : "; held by \(held.joined(separator: "; "))")
            }
            usleep(50_000)
        }
    }
}
