#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GuardianAPI
import ServiceSupport

/// Whether a guardian service protects an account, from what only root can write: the account's
/// uid in `/etc/quarantine/protected-uids` (written by `quarantine guardian enable`, kept until
/// `disable`), or its guardian service's socket in `/run/quarantine`. Nothing the account owns
/// (its configuration, its environment) is asked, so the account cannot make itself unprotected.
public enum ProtectedAccount {
    /// The name of the account running this process when a guardian service protects it; nil otherwise.
    public static func current() -> String? {
        let uid = getuid()
        guard uid != 0, let name = AccountLookup.account(uid: uid)?.name else { return nil }
        return isProtected(uid: uid, user: name) ? name : nil
    }

    /// Whether `uid` (named `user`) is protected. When the list exists but cannot be read, or
    /// reads wrong, an account with a guardian configuration (`/etc/quarantine/USER.toml`)
    /// counts as protected (fail closed, as pam_quarantine does), any other as not.
    public static func isProtected(uid: uid_t, user: String, filter: SessionMountFilter = SessionMountFilter()) -> Bool {
        var info = stat()
        if lstat(GuardianPaths(user: user).socket, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { return true }
        do { return try filter.protectedUIDs().contains(uid) } catch {
            return lstat(GuardianPaths(user: user).configuration, &info) == 0
        }
    }
}
