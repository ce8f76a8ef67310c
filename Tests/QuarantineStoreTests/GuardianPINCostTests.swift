import Foundation
import GRDB
import Testing
@testable import QuarantineStore

/// The PIN row keeps scrypt's cost beside the hash: a program sets the full cost, in-process
/// tests may make cheap rows, and every check derives at the row's own cost.
@Suite("guardian PIN cost")
struct GuardianPINCostTests {
    func store() throws -> (AuditStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-pin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (try AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path), folder)
    }

    func storedRounds(_ store: AuditStore) throws -> Int? {
        try store.read { db in try Int.fetchOne(db, sql: "SELECT rounds FROM guardian WHERE id = 1") }
    }

    @Test("set(_:), the only way a program sets a PIN, stores scrypt's full cost N = 2^15 and checks at it")
    func programsSetTheFullCost() throws {
        let (store, folder) = try store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let pin = GuardianPIN(store: store)
        try pin.set("2468")
        #expect(try storedRounds(store) == 1 << 15)
        #expect(try pin.check("2468", actor: "test") == .accepted)
    }

    @Test("a cheap row is checked at its own cost: the right PIN is accepted, a wrong one counted")
    func cheapRowsCheckAtTheirCost() throws {
        let (store, folder) = try store()
        defer { try? FileManager.default.removeItem(at: folder) }
        let pin = GuardianPIN(store: store)
        try pin.set("2468", rounds: GuardianPIN.testRounds)
        #expect(try storedRounds(store) == GuardianPIN.testRounds)
        #expect(try pin.check("1111", actor: "test") == .wrong(inARow: 1, wait: 0))
        #expect(try pin.check("2468", actor: "test") == .accepted)
        // The same PIN at another cost is another hash: the cost is part of what is checked.
        let row = try #require(try store.read { db in try Row.fetchOne(db, sql: "SELECT salt, hash, rounds FROM guardian WHERE id = 1") })
        let salt: Data = row["salt"], hash: Data = row["hash"]
        #expect(try GuardianPIN.derive("2468", salt: [UInt8](salt), rounds: 1 << 5) != [UInt8](hash))
    }
}
