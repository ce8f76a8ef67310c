import _CryptoExtras
import Crypto
import Foundation
import GRDB

/// The guardian's PIN, which child mode asks for before a release, a block or a mode change.
/// Only a salted scrypt hash is stored (N = 2^15, r = 8, p = 1: about 32 MB and a tenth of a
/// second per try), in the audit database.
///
/// Everything in a user's home can be changed by that user; the PIN is a speed bump for a child,
/// not protection against someone with the account's full rights.
public struct GuardianPIN: Sendable {
    let store: AuditStore
    static let rounds = 1 << 15

    public init(store: AuditStore) { self.store = store }

    public var isSet: Bool {
        (try? store.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM guardian WHERE id = 1") }) ?? nil ?? false
    }

    /// Whether `pin` is acceptable: 4 to 12 digits.
    public static func isValid(_ pin: String) -> Bool {
        (4...12).contains(pin.count) && pin.allSatisfy(\.isASCII) && pin.allSatisfy(\.isNumber)
    }

    public func set(_ pin: String) throws {
        guard Self.isValid(pin) else { throw VaultError.refused("a PIN is 4 to 12 digits") }
        var salt = [UInt8](repeating: 0, count: 16)
        for i in salt.indices { salt[i] = UInt8.random(in: 0...255) }
        let hash = try Self.derive(pin, salt: salt, rounds: Self.rounds)
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO guardian (id, salt, hash, rounds, setAt) VALUES (1, ?, ?, ?, ?)",
                           arguments: [Data(salt), Data(hash), Self.rounds, Date()])
        }
    }

    /// Whether `pin` is the guardian's (constant-time comparison).
    public func verify(_ pin: String) throws -> Bool {
        guard let row = try store.read({ db in try Row.fetchOne(db, sql: "SELECT salt, hash, rounds FROM guardian WHERE id = 1") }) else { return false }
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
