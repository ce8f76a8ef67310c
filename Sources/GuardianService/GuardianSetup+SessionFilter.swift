import Foundation
import ServiceSupport

// MARK: - Private mounts: pam_quarantine for the protected account's sessions

extension GuardianSetup {
    /// What closing private mounts costs the account, and the stronger way, in plain words.
    public static let sessionFilterCosts = """
        What it costs the account (its sessions only; every other account is untouched):
          - FUSE mounts: sshfs, gvfs's ~/.gvfs and /run/user/UID/gvfs folders, Flatpak's document portal, AppImages \
        (they still run with --appimage-extract-and-run);
          - Flatpak apps (bubblewrap mounts their sandbox) and rootless containers (podman, docker rootless);
          - 'mount' of fstab entries marked user, and systemd user units that ask for a private /tmp or other mount sandboxing.
        Browsers keep their sandboxes: Chromium's and Firefox's use user namespaces and chroot, which stay allowed. \
        Removable media mounted by udisks (the desktop's automount) still work: udisks mounts them, not the account.
        The stronger way closes user namespaces for every account (sysctl user.max_user_namespaces=0 in /etc/sysctl.d/): \
        nothing can then make one, and Chromium's and Flatpak's sandboxes stop working for everyone.
        """

    /// Installs pam_quarantine for the account: the module in libpam's folder (from beside
    /// `executable` when it was built or installed there), the uid in the list, the module's
    /// line in the PAM session stacks; then checks a session opened through `su`. Returns what
    /// `guardian enable` says. Throws when the module cannot be installed where it must be.
    public func sessionFilter(uid: uid_t, executable: String = CommandLine.arguments[0]) throws(GuardianService.StartError) -> String {
        let filter = SessionMountFilter()
        guard uid != 0 else { return "Private mounts: root's sessions are never given pam_quarantine's filter." }
        var lines: [String] = []
        do {
            if let built = SessionMountFilter.moduleBeside(executable: Self.executablePath(executable)) {
                let path = try filter.installModule(from: built)
                lines.append("Installed \(path) (from \(built)).")
            }
            guard filter.installedModule != nil else {
                return "Private mounts are NOT closed for \(paths.user): pam_quarantine.so is not installed (the package ships it; 'make build' puts it beside the program: pam/build.sh).\n" + UserNamespaces.current().ways
            }
            try filter.set(uid: uid, name: paths.user, protected: true)
            let changed = try filter.installLines()
            lines.append(changed.isEmpty ? "pam_quarantine is in \(SessionMountFilter.stacks.joined(separator: " and ")) already."
                                         : "Added pam_quarantine to /etc/pam.d/\(changed.joined(separator: " and /etc/pam.d/")).")
        } catch {
            throw fail("private mounts: \(error)")
        }
        lines.append("Private mounts are closed for \(paths.user)'s new sessions (login, display manager, ssh, su, cron, at, systemd's user manager): "
                     + "no mount system call succeeds in them, so \(paths.user) cannot mount a folder only \(paths.user) sees, and user namespaces still work.")
        let (checked, words) = Self.checkSession(user: paths.user)
        guard checked != false else { throw fail("private mounts: \(words) (pam_quarantine is installed; 'quarantine doctor' says more)") }
        lines.append(words)
        let coverage = SessionMountFilter.coverage(uid: uid)
        if !coverage.uncovered.isEmpty {
            lines.append("Sessions already running are NOT covered: \(coverage.uncovered.count) of \(paths.user)'s processes started before (\(coverage.uncovered.prefix(4).map { "\($0.pid) \($0.command)" }.joined(separator: ", "))). "
                         + "They are covered once \(paths.user) has logged out of every session, and its user manager has stopped, and logged in again ('loginctl terminate-user \(paths.user)' ends them now).")
        } else {
            lines.append("Sessions already running are not covered until \(paths.user) logs in again; none is running now.")
        }
        lines.append(Self.sessionFilterCosts)
        let services = filter.servicesWithoutModule()
        if !services.isEmpty {
            lines.append("PAM services that open sessions without common-session, so without the filter: \(services.joined(separator: ", ")) (on Debian: runuser and runuser-l, root's own tools, which the account cannot use).")
        }
        return lines.joined(separator: "\n")
    }

    /// Takes the account out of the list; removes the module's line from the PAM stacks once no
    /// account is listed. Returns what `guardian disable` says.
    public func removeSessionFilter(uid: uid_t?) -> String {
        let filter = SessionMountFilter()
        guard let uid else { return "" }
        if let listed = try? filter.protectedUIDs(), !listed.contains(uid) { return "" }
        do {
            let left = try filter.set(uid: uid, name: paths.user, protected: false)
            var words = "\(paths.user)'s new sessions may mount again (its running sessions keep the filter until it logs out)."
            if left.isEmpty {
                let changed = try filter.removeLines()
                if !changed.isEmpty { words += " No account is protected any more: pam_quarantine was taken out of /etc/pam.d/\(changed.joined(separator: " and /etc/pam.d/"))." }
            }
            return words
        } catch {
            return "Could not take \(paths.user) out of pam_quarantine's list: \(error)"
        }
    }

    /// The running program's own path (argv[0] may be a bare name found through PATH).
    static func executablePath(_ argument: String) -> String {
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
        return argument
    }

    /// Opens a session for the account through `su` (the PAM stack every login path includes)
    /// and tries a mount there, in a user and mount namespace of its own: what a private mount
    /// needs. True when it was refused, false when it was not, nil when the check could not run;
    /// and the words.
    public static func checkSession(user: String) -> (Bool?, String) {
        let probe = "grep -q '^Seccomp:[[:space:]]*2' /proc/self/status || { echo no-filter; exit 1; }; "
            + "if unshare -r -m mount -t tmpfs quarantine-probe / 2>/dev/null; then echo mounted; exit 1; fi; echo refused"
        let result = CommandRunner.run(["su", "-s", "/bin/sh", "-c", probe, user], timeout: .seconds(20))
        let said = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        if result.succeeded && said == "refused" {
            return (true, "Checked: in a session opened for \(user) through su, a mount in a user namespace of its own is refused.")
        }
        if said == "mounted" || said == "no-filter" {
            return (false, "CHECK FAILED: in a session opened for \(user) through su, \(said == "mounted" ? "a tmpfs WAS mounted" : "there is no filter")")
        }
        return (nil, "Could not check a session for \(user) through su: \(result)")
    }
}
