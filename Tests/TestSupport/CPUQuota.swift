import Foundation

/// A CPU cgroup with a quota (as systemd's `CPUQuota=` sets one for a unit) that a test starts a
/// program in, so that work which must still be under way when the test acts (a video in the
/// middle of its analysis) takes long enough on a quiet machine as on a busy one. Needs root:
/// cgroup v1's `cpu` controller (`/sys/fs/cgroup/cpu`) or cgroup v2 with `cpu` enabled for the
/// root's children.
public final class CPUQuota: Sendable {
    public let path: String
    private let v2: Bool

    /// Nil (with the reason in `why`) where no CPU cgroup can be made here.
    public init?(percentOfOneCPU percent: Int, why: inout String) {
        let name = "quarantine-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        let quota = String(percent * 1000)
        if FileManager.default.fileExists(atPath: "/sys/fs/cgroup/cpu/cpu.cfs_quota_us") {
            path = "/sys/fs/cgroup/cpu/" + name
            v2 = false
            guard mkdir(path, 0o755) == 0 else { why = "mkdir \(path): \(String(cString: strerror(errno)))"; return nil }
            guard (try? (quota + "\n").write(toFile: path + "/cpu.cfs_quota_us", atomically: false, encoding: .utf8)) != nil else {
                why = "cannot set \(path)/cpu.cfs_quota_us"; rmdir(path); return nil
            }
        } else if let controllers = try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.subtree_control", encoding: .utf8),
                  controllers.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "cpu" }) {
            path = "/sys/fs/cgroup/" + name
            v2 = true
            guard mkdir(path, 0o755) == 0 else { why = "mkdir \(path): \(String(cString: strerror(errno)))"; return nil }
            guard (try? "\(quota) 100000\n".write(toFile: path + "/cpu.max", atomically: false, encoding: .utf8)) != nil else {
                why = "cannot set \(path)/cpu.max"; rmdir(path); return nil
            }
        } else {
            why = "no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 with cpu in the root's subtree_control)"
            return nil
        }
    }

    /// A wrapper for a program's arguments (`AgentHarness.start(wrapper:)`): moves itself into
    /// the cgroup, then execs the program, which keeps its process id; its children stay in it.
    public var wrapper: [String] {
        let tasks = path + (v2 ? "/cgroup.procs" : "/tasks")
        return ["/bin/sh", "-c", "echo $$ > '\(tasks)' && exec \"$@\"", "sh"]
    }

    /// Removes the cgroup once the processes in it are gone (tried for up to 5 s).
    public func remove() {
        for _ in 0..<50 {
            if rmdir(path) == 0 || errno == ENOENT { return }
            usleep(100_000)
        }
    }
}
