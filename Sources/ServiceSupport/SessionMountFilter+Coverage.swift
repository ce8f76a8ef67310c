import Foundation

// MARK: - What is in force

extension SessionMountFilter {
    /// An account's running processes: which carry a filter set at login, which do not.
    public struct Coverage: Sendable, Equatable {
        /// Processes of the account under a seccomp filter that a privileged process set (at login).
        public var covered: [Int32] = []
        /// Processes of the account without one: started before the module was in force (or by
        /// root without a PAM session); they can still mount a folder only they see.
        public var uncovered: [(pid: Int32, command: String)] = []

        public static func == (a: Coverage, b: Coverage) -> Bool {
            a.covered == b.covered && a.uncovered.map(\.pid) == b.uncovered.map(\.pid)
        }
    }

    /// One process's lines of /proc/PID/status that matter here.
    struct ProcessState {
        var uid: uid_t
        var parent: Int32
        var seccomp: Int
        var noNewPrivileges: Bool
        var command: String
    }

    static func state(of pid: Int32, proc: String) -> ProcessState? {
        guard let data = FileManager.default.contents(atPath: "\(proc)/\(pid)/status") else { return nil }
        var state = ProcessState(uid: uid_t.max, parent: 0, seccomp: 0, noNewPrivileges: false, command: "")
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            switch parts[0] {
            case "Name": state.command = value
            case "PPid": state.parent = Int32(value) ?? 0
            case "Uid": state.uid = value.split(whereSeparator: { $0 == "\t" || $0 == " " }).first.flatMap { uid_t($0) } ?? uid_t.max
            case "Seccomp": state.seccomp = Int(value) ?? 0
            case "NoNewPrivs": state.noNewPrivileges = value == "1"
            default: break
            }
        }
        return state
    }

    /// Which of the account's processes (real uid) carry a filter set by a privileged process.
    /// A filter is inherited by every descendant and cannot be removed; one set without
    /// no_new_privs needs CAP_SYS_ADMIN, which the account does not have. So a process is covered
    /// when it, or the chain of filtered ancestors above it, reaches a filtered process without
    /// no_new_privs: pam_quarantine's (or another privileged setter's) filter. Chromium's own
    /// filters (set with no_new_privs) do not count.
    public static func coverage(uid: uid_t, proc: String = "/proc") -> Coverage {
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: proc)) ?? []).compactMap { Int32($0) }.sorted()
        var states: [Int32: ProcessState] = [:]
        func state(_ pid: Int32) -> ProcessState? {
            if let known = states[pid] { return known }
            let read = Self.state(of: pid, proc: proc)
            states[pid] = read
            return read
        }
        var memo: [Int32: Bool] = [:]
        func privilegedFilter(_ pid: Int32, depth: Int) -> Bool {
            if let known = memo[pid] { return known }
            guard depth < 4096, let process = state(pid), process.seccomp == 2 else { memo[pid] = false; return false }
            let result = !process.noNewPrivileges || (process.parent > 0 && privilegedFilter(process.parent, depth: depth + 1))
            memo[pid] = result
            return result
        }
        var coverage = Coverage()
        for pid in pids {
            guard let process = state(pid), process.uid == uid else { continue }
            if privilegedFilter(pid, depth: 0) { coverage.covered.append(pid) } else { coverage.uncovered.append((pid, process.command)) }
        }
        return coverage
    }

    /// What is in force for one account, as `guardian status` and `doctor` say it.
    public struct Report: Sendable {
        public var user: String
        public var uid: uid_t
        /// The module file libpam loads (nil: not installed).
        public var module: String?
        /// Each session stack here and whether it loads the module.
        public var stacks: [String: Bool]
        /// Whether the account's uid is in the list (nil: the list cannot be read).
        public var listed: Bool?
        public var listProblem: String?
        public var coverage: Coverage
        /// PAM services that open sessions without the module (root's runuser on Debian).
        public var servicesWithout: [String]
        /// The global switch that closes user namespaces for unprivileged accounts, if any.
        public var namespaces: UserNamespaces

        /// New sessions of the account get the filter: module there, in every stack, listed.
        public var inForce: Bool {
            module != nil && !stacks.isEmpty && stacks.values.allSatisfy { $0 } && listed == true
        }
        /// Private mounts are closed for the account's new sessions, by either way.
        public var closed: Bool { inForce || namespaces.closedBy != nil }

        /// The `private mounts:` line.
        public var words: String {
            var parts: [String] = []
            if inForce {
                parts.append("private mounts: closed for \(user)'s sessions by pam_quarantine (no mount system calls; user namespaces, and so browsers' sandboxes, still work)")
            } else if let closedBy = namespaces.closedBy {
                parts.append("private mounts: closed for unprivileged accounts (\(closedBy))")
            } else {
                parts.append("private mounts: NOT closed for \(user): \(missing); 'sudo quarantine guardian enable --user \(user)' installs it")
            }
            if inForce || namespaces.closedBy == nil {
                if !coverage.uncovered.isEmpty {
                    let some = coverage.uncovered.prefix(5).map { "\($0.pid) \($0.command)" }.joined(separator: ", ")
                    parts.append("\(coverage.uncovered.count) of \(user)'s \(coverage.covered.count + coverage.uncovered.count) processes run without the filter (\(some)\(coverage.uncovered.count > 5 ? ", ..." : "")): started before it, they can still mount until \(user) logs out of every session")
                } else if !coverage.covered.isEmpty {
                    parts.append("all \(coverage.covered.count) of \(user)'s processes run under it")
                }
            }
            return parts.joined(separator: "; ")
        }

        /// What keeps the module from being in force.
        var missing: String {
            var why: [String] = []
            if module == nil { why.append("pam_quarantine.so is not installed") }
            if stacks.isEmpty { why.append("this machine has no common-session PAM stack") }
            let without = stacks.filter { !$0.value }.keys.sorted()
            if !without.isEmpty { why.append("it is not in \(without.joined(separator: ", "))") }
            if let listProblem { why.append("the list cannot be read (\(listProblem))") } else if listed == false { why.append("\(user) is not in the list") }
            return why.isEmpty ? "?" : why.joined(separator: ", ")
        }

        /// For `--json`.
        public var json: [String: Any] {
            var object: [String: Any] = [
                "in_force": inForce, "closed": closed, "stacks": stacks, "covered_processes": coverage.covered.count,
                "uncovered_processes": coverage.uncovered.map { ["pid": Int($0.pid), "command": $0.command] as [String: Any] },
                "services_without_module": servicesWithout,
            ]
            object["module"] = module.map { $0 as Any } ?? NSNull()
            object["listed"] = listed.map { $0 as Any } ?? NSNull()
            object["list_problem"] = listProblem.map { $0 as Any } ?? NSNull()
            object["namespaces_closed_by"] = namespaces.closedBy.map { $0 as Any } ?? NSNull()
            return object
        }
    }

    /// What is in force for the account now.
    public func report(user: String, uid: uid_t, proc: String = "/proc", namespaces: UserNamespaces = .current()) -> Report {
        var listed: Bool?
        var problem: String?
        do { listed = try protectedUIDs().contains(uid) } catch { problem = "\(error)" }
        var stacks: [String: Bool] = [:]
        for (stack, has) in stackState() { stacks[stack] = has }
        return Report(user: user, uid: uid, module: installedModule, stacks: stacks, listed: listed, listProblem: problem,
                      coverage: Self.coverage(uid: uid, proc: proc), servicesWithout: servicesWithoutModule(), namespaces: namespaces)
    }
}
