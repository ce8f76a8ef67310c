import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing
import TestSupport
@testable import QuarantineCore

/// The core while the audit database refuses writes: nothing is analysed whose verdict could not
/// be recorded, nothing moves, and the fault is named for the agent's gate.
@Suite("Database faults (in process)")
struct DatabaseFaultTests {
    @Test("locked by another process: no analysis starts, the files stay where they are and queued, the fault is named; once released both are judged, each analysed once")
    func lockedDatabase() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-dbfault-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let downloads = folder.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let databasePath = folder.appendingPathComponent("audit.sqlite3").path
        // A busy timeout of 0.2 s instead of the agent's 10 s: the same refusal, sooner.
        let vault = try Vault(root: folder.appendingPathComponent("vault").path, store: AuditStore(path: databasePath, busyTimeout: 0.2))
        func arrive(_ name: String, card: Bool) throws -> BacklogEntry {
            let url = downloads.appendingPathComponent(name)
            try Data(try IntakeTests.png(card: card)).write(to: url)
            let entry = BacklogEntry(path: url.path, root: downloads.path, direction: .incoming, identity: try MediaFile(path: url.path).identity)
            try vault.store.enqueue([entry], mode: .adult)
            return entry
        }
        let card = try arrive("card.png", card: true)
        let photo = try arrive("photo.png", card: false)
        let analysis = IntakeTests.StandInAnalysis { path, settings in
            IntakeTests.StandInAnalysis.judging(sensitive: path.hasSuffix("card.png")).answer(path, settings)
        }
        let intake = analysis.intake(vault)
        var settings = Settings()
        settings.mode = .adult

        let locker = try DatabaseLocker(path: databasePath)
        for entry in [card, photo] {
            let outcome = await intake.handle(entry, kind: .image, settings: settings)
            guard case .databaseUnavailable(let message) = outcome else { Issue.record("\(entry.path): \(outcome)"); continue }
            #expect(message.contains("database is locked"), "\(message)")
        }
        #expect(analysis.calls.withLock { $0 } == 0, "nothing is analysed while its verdict cannot be recorded")
        #expect(FileManager.default.fileExists(atPath: card.path) && FileManager.default.fileExists(atPath: photo.path))
        #expect(try vault.store.backlogCount() == 2, "both stay queued (reads still work in WAL mode)")
        #expect(vault.store.takeWriteFault() == .locked)
        #expect(vault.store.takeWriteFault() == nil, "taken once")
        #expect(throws: DatabaseFaultError.self) { try vault.store.probe(timeout: 0.1) }
        let message = DatabaseFault.locked.message(path: databasePath)
        #expect(message.contains("locked by another process") && message.contains("fuser \(databasePath)"))

        locker.release()
        try vault.store.probe()
        guard case .hidden = await intake.handle(card, kind: .image, settings: settings) else { Issue.record("the card was not hidden"); return }
        guard case .clean = await intake.handle(photo, kind: .image, settings: settings) else { Issue.record("the photo was not found clean"); return }
        #expect(analysis.calls.withLock { $0 } == 2, "each analysed once")
        #expect(!FileManager.default.fileExists(atPath: card.path) && FileManager.default.fileExists(atPath: photo.path))
        #expect(try vault.store.backlogCount() == 0)
        #expect(vault.store.takeWriteFault() == nil)
    }
}
