import Foundation

/// Whether an unprivileged account can make a user namespace, and so mount a folder that only
/// it sees (`unshare -r -m`, then a tmpfs over `~/Downloads`): no watcher outside that
/// namespace sees what is saved there. Read from the kernel's switches; `guardian enable`,
/// `guardian status` and `doctor` say what is in force and what each way to close it costs.
public struct UserNamespaces: Sendable, Equatable {
    /// `kernel.unprivileged_userns_clone` (a Debian and Ubuntu kernel patch; nil where absent).
    public var unprivilegedClone: Int?
    /// `user.max_user_namespaces` (global: it counts for root and every account alike).
    public var maxUserNamespaces: Int?
    /// `kernel.apparmor_restrict_unprivileged_userns` (AppArmor 4; nil where absent).
    public var appArmorRestriction: Int?

    public init(unprivilegedClone: Int?, maxUserNamespaces: Int?, appArmorRestriction: Int?) {
        self.unprivilegedClone = unprivilegedClone
        self.maxUserNamespaces = maxUserNamespaces
        self.appArmorRestriction = appArmorRestriction
    }

    /// What this machine's kernel says now.
    public static func current(procSys: String = "/proc/sys") -> UserNamespaces {
        func read(_ name: String) -> Int? {
            guard let data = FileManager.default.contents(atPath: procSys + "/" + name) else { return nil }
            return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return UserNamespaces(unprivilegedClone: read("kernel/unprivileged_userns_clone"), maxUserNamespaces: read("user/max_user_namespaces"),
                              appArmorRestriction: read("kernel/apparmor_restrict_unprivileged_userns"))
    }

    /// The switch that closes them, if one is in force.
    public var closedBy: String? {
        if unprivilegedClone == 0 { return "kernel.unprivileged_userns_clone = 0" }
        if maxUserNamespaces == 0 { return "user.max_user_namespaces = 0" }
        if appArmorRestriction == 1 { return "kernel.apparmor_restrict_unprivileged_userns = 1" }
        return nil
    }

    /// One line for `guardian status` and `doctor`.
    public var guardianWords: String {
        if let closedBy { return "private mounts: closed for unprivileged accounts (\(closedBy))" }
        return "private mounts: user namespaces are open to every account; a protected account's sessions are closed to mounts by pam_quarantine ('quarantine guardian status' says whether it is in force; 'quarantine guardian enable --help')"
    }

    /// What `guardian enable` explains: the ways to close private mounts and what each costs.
    public var ways: String {
        var lines = ["Private mounts: an account that can make a user namespace (unshare -r -m) can mount a folder that only it sees, and no watcher sees what is saved there."]
        if let closedBy {
            lines.append("On this machine they are closed for unprivileged accounts (\(closedBy)).")
            return lines.joined(separator: "\n")
        }
        lines.append("On this machine they are open. Ways to close them, and what each costs:")
        lines.append("  - pam_quarantine.so (what 'quarantine guardian enable' installs): the protected account's sessions get a seccomp filter that refuses every mount system call, while user namespaces stay open, so Chromium's and Firefox's sandboxes keep working; the account loses FUSE mounts (sshfs, AppImages), Flatpak apps and rootless containers. The way that keeps browsers working.")
        if unprivilegedClone != nil {
            lines.append("  - sysctl kernel.unprivileged_userns_clone=0 (this kernel has it): no unprivileged account can make one. Chromium then falls back to its setuid sandbox where it is installed (chrome-sandbox), else runs less confined; Flatpak apps and rootless containers (podman) stop working for every account.")
        }
        lines.append("  - sysctl user.max_user_namespaces=0: closes them for everyone, root included: Chromium's and Flatpak's sandboxes and rootless containers stop working for every account.")
        lines.append("  - an AppArmor 4 kernel (kernel.apparmor_restrict_unprivileged_userns=1, as Ubuntu 24.04 ships) closes them for every program without a profile that allows them, so browsers with such a profile keep their sandbox (Debian 12's kernel does not have it).")
        lines.append("Put the chosen line in /etc/sysctl.d/ to keep it after a reboot; 'quarantine guardian status' and 'quarantine doctor' say what is in force.")
        return lines.joined(separator: "\n")
    }
}
