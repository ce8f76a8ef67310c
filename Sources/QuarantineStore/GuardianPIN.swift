import _CryptoExtras
import Crypto
import Foundation
import GRDB

/// The guardian's PIN, which child mode asks for before a release, a block or a mode change.
/// Only a salted scrypt hash is stored (N = 2^15, r = 8, p = 1: about 32 MB and a tenth of a
/// second per try), in the audit database.
///
/// Guessing is slowed down: after ``freeAttempts`` wrong PINs in a row, the next try waits
/// ``firstWait``, and each wrong PIN after that doubles the wait (up to ``longestWait``); the
/// right PIN clears the count. Each wrong PIN and each wait is recorded in the audit log. A try
/// is counted (committed) before it is compared, so guesses from several processes at once are
/// each counted, and a try that cannot be counted is not checked at all.
///
/// Everything in a user's home can be changed by that user; the PIN is a speed bump for a child,
/// not protection against someone with the account's full rights.
public struct GuardianPIN: Sendable {
    let store: AuditStore
    static let rounds = 1 << 15
    /// A cheap N for rows that in-process tests make (``set(_:rounds:)``); never used by a program.
    static let testRounds = 1 << 4
    /// Wrong PINs in a row before the first wait.
    public static let freeAttempts = 5
    /// The first wait; each further wrong PIN doubles it.
    public static let firstWait: TimeInterval = 60
    /// The longest wait (a day).
    public static let longestWait: TimeInterval = 86_400

    /// What a try of a PIN came to.
    public enum Check: Sendable, Equatable {
        case accepted
        /// Wrong; `wait` is how long the next try must wait (0 while free tries remain).
        case wrong(inARow: Int, wait: TimeInterval)
        /// Not checked: too many wrong PINs, try again at `until`.
        case locked(until: Date)
    }

    /// The wait after `failures` wrong PINs in a row.
    public static func wait(afterFailures failures: Int) -> TimeInterval {
        guard failures >= freeAttempts else { return 0 }
        let doublings = min(failures - freeAttempts, 20)
        return min(firstWait * Double(1 << doublings), longestWait)
    }

    static func registerAttemptsMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8: guardian PIN attempts") { db in
            try db.create(table: "pinAttempts") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("failures", .integer).notNull()
                t.column("lastFailureAt", .datetime)
            }
        }
    }

    /// Tries `pin`: refused unchecked while a wait runs, else counted, then checked.
    ///
    /// The try is counted as wrong, and that count committed, before the PIN is compared; the
    /// right PIN then clears it. A try that cannot be counted (the disk is full, the database
    /// refuses writes) is refused unchecked: otherwise a child who fills the disk would learn
    /// right from wrong (an error for a wrong PIN whose count failed, "accepted" for the right
    /// one) with no count at all.
    public func check(_ pin: String, actor: String = "cli", now: Date = Date()) throws -> Check {
        enum Counted { case locked(Date), noPIN, counted(inARow: Int, guardian: Row) }
        let counted = try store.write { db -> Counted in
            let row = try Row.fetchOne(db, sql: "SELECT failures, lastFailureAt FROM pinAttempts WHERE id = 1")
            let failures: Int = row?["failures"] ?? 0
            if let last: Date = row?["lastFailureAt"], Self.wait(afterFailures: failures) > 0 {
                let until = last.addingTimeInterval(Self.wait(afterFailures: failures))
                if until > now { return .locked(until) }
            }
            guard let guardian = try Row.fetchOne(db, sql: "SELECT salt, hash, rounds FROM guardian WHERE id = 1") else { return .noPIN }
            try db.execute(sql: "INSERT OR REPLACE INTO pinAttempts (id, failures, lastFailureAt) VALUES (1, ?, ?)", arguments: [failures + 1, now])
            return .counted(inARow: failures + 1, guardian: guardian)
        }
        let inARow: Int, guardian: Row
        switch counted {
        case .locked(let until): return .locked(until: until)
        case .noPIN: return .wrong(inARow: 0, wait: 0)
        case .counted(let n, let row): (inARow, guardian) = (n, row)
        }
        if try Self.matches(pin, guardian) {
            // Counted already; clearing it may fail (a full disk) without harm.
            try? store.write { db in try db.execute(sql: "DELETE FROM pinAttempts") }
            return .accepted
        }
        let wait = Self.wait(afterFailures: inARow)
        let detail = "wrong guardian PIN (\(inARow) in a row)" + (wait > 0 ? "; the next try must wait \(Self.describe(wait))" : "")
        // The PIN guards child mode: recorded as child mode's unless adult mode was set. The count
        // is already written; this line is the audit log's.
        try? store.write { db in
            var event = AuditEvent(.guardian, path: nil, mode: try ModeRecord.fetchOne(db)?.mode ?? .child, actor: actor, detail: detail)
            try event.insert(db)
        }
        return .wrong(inARow: inARow, wait: wait)
    }

    /// "1 minute", "4 minutes", "2 hours".
    public static func describe(_ wait: TimeInterval) -> String {
        let minutes = Int((wait / 60).rounded(.up))
        if minutes < 120 { return minutes == 1 ? "1 minute" : "\(minutes) minutes" }
        let hours = Int((wait / 3600).rounded(.up))
        return "\(hours) hours"
    }

    public init(store: AuditStore) { self.store = store }

    public var isSet: Bool {
        (try? store.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM guardian WHERE id = 1") }) ?? nil ?? false
    }

    /// Whether `pin` is acceptable: 4 to 12 digits.
    public static func isValid(_ pin: String) -> Bool {
        (4...12).contains(pin.count) && pin.allSatisfy(\.isASCII) && pin.allSatisfy(\.isNumber)
    }

    /// Sets the PIN, hashed at the full cost (``rounds``).
    public func set(_ pin: String) throws {
        try set(pin, rounds: Self.rounds)
    }

    /// Sets the PIN hashed with scrypt's `rounds` (N), which the row keeps beside the hash, so a
    /// check derives at the cost the row was made with.
    ///
    /// Internal, for in-process tests only (`@testable import`): they make rows with a cheap N,
    /// since BoringSSL's scrypt is unoptimised in a debug build (about half a second per
    /// derivation at the full cost). No program path, setting or environment variable reaches
    /// it; every PIN a program sets goes through ``set(_:)``.
    func set(_ pin: String, rounds: Int) throws {
        precondition(rounds >= 2 && rounds & (rounds - 1) == 0, "scrypt's N is a power of two")
        guard Self.isValid(pin) else { throw VaultError.refused("a PIN is 4 to 12 digits") }
        var salt = [UInt8](repeating: 0, count: 16)
        for i in salt.indices { salt[i] = UInt8.random(in: 0...255) }
        let hash = try Self.derive(pin, salt: salt, rounds: rounds)
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO guardian (id, salt, hash, rounds, setAt) VALUES (1, ?, ?, ?, ?)",
                           arguments: [Data(salt), Data(hash), rounds, Date()])
        }
    }

    /// Whether `pin` is the guardian's (constant-time comparison) by the stored `salt, hash,
    /// rounds` row. Every try a person makes goes through ``check(_:actor:now:)``, which counts it.
    static func matches(_ pin: String, _ row: Row) throws -> Bool {
        let salt: Data = row["salt"], stored: Data = row["hash"], rounds: Int = row["rounds"]
        let derived = try Self.derive(pin, salt: [UInt8](salt), rounds: rounds)
        guard derived.count == stored.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(derived, stored) { difference |= a ^ b }
        return difference == 0
    }

    static func derive(_ pin: String, salt: [UInt8], rounds: Int) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(from: Array(pin.utf8), salt: salt, outputByteCount: 32, rounds: rounds, blockSize: 8, parallelism: 1)
        return key.withUnsafeBytes { Array($0) }
    }
}
