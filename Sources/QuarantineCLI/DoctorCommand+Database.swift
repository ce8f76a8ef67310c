import Foundation
import PathBytes
import QuarantineStore

extension Doctor {
    /// The audit database's own checks: that it and its folder can be written (SQLite writes its
    /// -wal and -shm beside it), that no other process holds its write lock, and that every page
    /// is sound (SQLite's quick_check). With `repair`, a damaged file is moved aside (never
    /// deleted: `audit.sqlite3.damaged-<time>`, its -wal and -shm with it) so that a new one is
    /// made and the vault's items listed again from their meta.json (the vault check after this).
    static func databaseChecks(path: String, repair: Bool) -> [Check] {
        var checks: [Check] = []
        let folder = (path as NSString).deletingLastPathComponent
        let exists = FileManager.default.fileExists(atPath: path)
        var unwritable: [String] = []
        if exists && access(path, W_OK) != 0 { unwritable.append("\(path) (\(String(cString: strerror(errno))))") }
        if FileManager.default.fileExists(atPath: folder) && access(folder, W_OK) != 0 { unwritable.append("its folder \(folder) (\(String(cString: strerror(errno))))") }
        checks.append(Check(name: "database writable", ok: unwritable.isEmpty, detail: unwritable.isEmpty
            ? "\(path)\(exists ? "" : " (not made yet: the first command makes it)") and its folder can be written"
            : "cannot write \(unwritable.joined(separator: " nor ")): make them writable by you ('chmod u+w', or remount the file system read-write); until then the agent checks nothing"))
        guard exists else { return checks }

        let store: AuditStore
        do { store = try AuditStore(path: path, busyTimeout: 1) } catch {
            let fault = DatabaseFault(error)
            if fault == .damaged { return checks + damaged(path: path, findings: "\(error)", repair: repair) }
            checks.append(Check(name: "database", ok: false, detail: fault.map { "\($0.message(path: path)) [\(error)]" } ?? "cannot open \(path): \(error)"))
            return checks
        }
        do {
            try store.probe(timeout: 1)
            checks.append(Check(name: "database lock", ok: true, detail: "no other process holds its write lock"))
        } catch let error as DatabaseFaultError where error.fault == .locked {
            let holders = lockHolders(of: [path, path + "-wal", path + "-shm"])
            checks.append(Check(name: "database lock", ok: false, detail: "\(path) is locked by another process"
                + (holders.isEmpty ? "" : " (holding locks on it: \(holders.joined(separator: ", ")))")
                + ": until it lets go nothing is recorded and the agent checks nothing; end that program or let it finish"))
        } catch {
            // Another fault (read-only, damaged...): the checks around this one name it.
            if DatabaseFault(error) == .damaged { return checks + damaged(path: path, findings: "\(error)", repair: repair) }
            if !(DatabaseFault(error) == .readOnly && !unwritable.isEmpty) {
                checks.append(Check(name: "database lock", ok: false, detail: "\(error)"))
            }
        }
        do {
            if let findings = try store.quickCheck() { return checks + damaged(path: path, findings: findings, repair: repair) }
            checks.append(Check(name: "database integrity", ok: true, detail: "every page is sound (SQLite quick_check)"))
        } catch {
            return checks + damaged(path: path, findings: "\(error)", repair: repair)
        }
        return checks
    }

    /// A damaged database: named with the fix, or (`repair`) moved aside.
    static func damaged(path: String, findings: String, repair: Bool) -> [Check] {
        guard repair else {
            return [Check(name: "database integrity", ok: false, detail: "\(path) is damaged (SQLite quick_check: \(findings)): "
                + "run 'quarantine doctor --repair' to move it aside and rebuild the list of hidden items from the vault")]
        }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let aside = path + ".damaged-" + formatter.string(from: Date())
        for suffix in ["-wal", "-shm", ""] where FileManager.default.fileExists(atPath: path + suffix) {
            guard rename(path + suffix, aside + suffix) == 0 else {
                return [Check(name: "database integrity", ok: false, detail: "\(path) is damaged (\(findings)) and cannot be moved aside to \(aside + suffix): \(String(cString: strerror(errno)))")]
            }
        }
        return [Check(name: "repaired", ok: true, detail: "\(path) was damaged (\(findings)): moved aside to \(aside) (kept, not deleted); a new database is made and the vault's items are listed again from their meta.json. The history and the allow and block lists stay in the damaged file")]
    }

    /// The processes (pid and name) that hold a POSIX or flock lock on any of `paths`, from
    /// /proc/locks (matched by device and inode), this one excepted.
    static func lockHolders(of paths: [String]) -> [String] {
        var inodes = Set<String>()
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            let device = UInt64(info.st_dev)
            inodes.insert(String(format: "%02x:%02x:%llu", (device >> 8) & 0xfff, (device & 0xff) | ((device >> 12) & 0xfff00), UInt64(info.st_ino)))
        }
        // Read to its end (PathBytes.wholeFile): `String(contentsOfFile:)` stops after a /proc
        // file's first 4 KiB, about 60 locks, and a busy system holds more.
        guard let bytes = PathBytes.wholeFile("/proc/locks") else { return [] }
        let text = String(decoding: bytes, as: UTF8.self)
        var pids: [Int32] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (blocked waiters: "1: -> POSIX ...")
            guard let at = fields.firstIndex(where: { $0 == "POSIX" || $0 == "FLOCK" || $0 == "OFDLCK" }), fields.count > at + 4,
                  let pid = Int32(fields[at + 3]), pid != getpid(), inodes.contains(String(fields[at + 4])), !pids.contains(pid) else { continue }
            pids.append(pid)
        }
        return pids.map { pid in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            return "pid \(pid)" + (name.map { " (\($0))" } ?? "")
        }
    }
}
