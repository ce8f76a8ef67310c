#if canImport(Glibc)
import Glibc
#endif

/// Account and group lookups that are safe on any thread: glibc's `_r` functions with buffers of
/// our own (`getpwuid` and `getgrnam` return one static buffer per process, which two threads of
/// the guardian service, or the service and its agent, would overwrite under each other), and
/// `getgrouplist` (MT-safe) for memberships.
public enum AccountLookup {
    /// An account's name and primary group.
    public struct Account: Sendable, Equatable {
        public var name: String
        public var uid: uid_t
        public var gid: gid_t
        public var home: String
    }

    /// The account of `uid` (`getpwuid_r`), or nil when there is none (or NSS failed).
    public static func account(uid: uid_t) -> Account? {
        withBuffer { (buffer: UnsafeMutablePointer<CChar>, size: Int) -> (Int32, Account?) in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwuid_r(uid, &entry, buffer, size, &result)
            guard status == 0, result != nil, let name = entry.pw_name else { return (status, nil) }
            return (0, Account(name: String(cString: name), uid: entry.pw_uid, gid: entry.pw_gid, home: entry.pw_dir.map { String(cString: $0) } ?? ""))
        }
    }

    /// The id of the group named `name` (`getgrnam_r`), or nil.
    public static func groupID(named name: String) -> gid_t? {
        withBuffer { (buffer: UnsafeMutablePointer<CChar>, size: Int) -> (Int32, gid_t?) in
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            let status = getgrnam_r(name, &entry, buffer, size, &result)
            guard status == 0, result != nil else { return (status, nil) }
            return (0, entry.gr_gid)
        }
    }

    /// Every group `account` is in: its primary group and its supplementary groups
    /// (`getgrouplist`, grown until the list fits).
    public static func groups(of account: Account) -> [gid_t] {
        var count: Int32 = 32
        while count <= 65536 {
            var list = [gid_t](repeating: 0, count: Int(count))
            var found = count
            if getgrouplist(account.name, account.gid, &list, &found) >= 0 { return Array(list.prefix(Int(found))) }
            count = max(found, count * 2)
        }
        return [account.gid]
    }

    /// Whether the account of `uid` is in the group named `group` (as a member or by its own
    /// primary group). False when either does not exist.
    public static func isMember(uid: uid_t, ofGroup group: String) -> Bool {
        guard let gid = groupID(named: group), let account = account(uid: uid) else { return false }
        return account.gid == gid || groups(of: account).contains(gid)
    }

    /// Runs `body` with a buffer, doubling it while the lookup says ERANGE (up to 1 MiB).
    static func withBuffer<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> (Int32, T?)) -> T? {
        var size = 4096
        while size <= 1 << 20 {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            let (status, value) = body(buffer, size)
            if status == ERANGE { size *= 2; continue }
            return value
        }
        return nil
    }
}
