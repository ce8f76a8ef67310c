import Foundation
import Logging
import QuarantineStore
import Testing
import TestSupport
@testable import AccountPipeline

/// The agent's start with a busy database (issue 27): it waits and starts, never exits.
@Suite("Agent start")
struct AgentStartTests {
    @Test("a new database another process holds locked as the agent starts: the agent waits and opens it once free")
    func lockedAtStart() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-start-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = ["HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path]
        let base = Vault.baseDirectory(environment: environment)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        // A new file held with an exclusive lock (rollback mode): turning it to WAL waits, then
        // gets SQLITE_BUSY past each try's busy timeout (0.3 s here).
        let locker = try DatabaseLocker(path: base + "/audit.sqlite3")
        DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { locker.release() }
        let started = Date()
        let vault = try AccountPipeline.openVault(environment: environment, logger: Logger(label: "test"), busyTimeout: 0.3)
        #expect(Date().timeIntervalSince(started) >= 1.2, "opened while the lock was held?")
        #expect(try vault.store.items().isEmpty)
        try vault.store.record(.analysed, mode: .adult, actor: "agent")
    }

    @Test("a stop asked while the agent waits for a database another process holds locked ends the wait at once (StoppedWhileStarting), not when the lock is let go", .ownThread)
    func stopWhileWaitingForTheDatabase() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-start-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = ["HOME": home.path, "XDG_DATA_HOME": home.appendingPathComponent("data").path]
        let base = Vault.baseDirectory(environment: environment)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let locker = try DatabaseLocker(path: base + "/audit.sqlite3")
        defer { locker.release() }
        // The stop comes 1 s into the wait; the lock is held for as long as the test runs.
        let started = Date()
        let stop: @Sendable () -> Bool = { Date().timeIntervalSince(started) > 1 }
        #expect(throws: AccountPipeline.StoppedWhileStarting.self) {
            _ = try AccountPipeline.openVault(environment: environment, logger: Logger(label: "test"), busyTimeout: 0.3, stopRequested: stop)
        }
        let took = Date().timeIntervalSince(started)
        #expect(took >= 1 && took < 5, "the wait ended \(took) s after it began (asked to stop after 1 s)")
    }
}
