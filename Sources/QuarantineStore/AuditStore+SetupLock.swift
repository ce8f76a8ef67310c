import Foundation

extension AuditStore {
    /// Held while one process creates, turns to WAL and migrates the database, so no two do it
    /// at once: an exclusive `flock` on `<database>.setup-lock` beside it, released when this
    /// is (or when the process dies, however it dies). Readers never take it.
    final class SetupLock {
        private let descriptor: Int32

        /// Takes the lock, waiting up to `timeout` seconds for another process's set-up. When
        /// the lock file cannot be opened at all (a folder others made, a file system without
        /// locks), goes on without it: SQLite's own locking and the retries still apply.
        init(databasePath: String, timeout: Double) throws {
            let path = databasePath + ".setup-lock"
            let fd = Glibc.open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            descriptor = fd
            guard fd >= 0 else { return }
            let deadline = Date().addingTimeInterval(timeout)
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                if code == EINTR { continue }
                guard code == EWOULDBLOCK else { return } // no locks here: go on without
                if Date() >= deadline {
                    // (deinit closes the descriptor: the object is whole already)
                    throw DatabaseFaultError(fault: .locked, path: databasePath,
                                             underlying: "another process has been setting the database up for over \(Int(timeout)) s (\(path))")
                }
                usleep(10_000)
            }
        }

        deinit { if descriptor >= 0 { Glibc.close(descriptor) } }
    }
}
