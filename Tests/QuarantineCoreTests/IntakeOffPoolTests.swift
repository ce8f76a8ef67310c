import Foundation
import Locking
import MediaDecoding
@testable import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

/// The vault's moves and copies run off Swift's cooperative threads (two on a 2-core machine):
/// a long one (a hard-linked 10 GB video is copied, and hashed) must not stop the other
/// accounts' pipelines, nor anything else of the process, while it lasts.
@Suite("Intake off the cooperative threads")
struct IntakeOffPoolTests {
    @Test("with as many long moves into the vault as there are cooperative threads, another account's intake still judges and hides a card at once", .ownThread)
    func longMovesHoldNoCooperativeThread() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-offpool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Each move of the slow account's vault stops at its first step until the test lets it
        // go: a copy that takes as long as the test wants (the vault's crash-point seam).
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let slow = try Self.vault(in: folder.appendingPathComponent("slow")) { step in
            guard step == .journaled else { return }
            entered.signal()
            _ = gate.wait(timeout: .now() + 60)
        }
        let other = try Self.vault(in: folder.appendingPathComponent("other"), crashPoint: nil)
        let flagging = IntakeTests.StandInAnalysis.judging(sensitive: true)
        let settings = { var settings = Settings(); settings.mode = .adult; return settings }()
        let moves = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var tasks: [Task<Intake.Outcome, Never>] = []
        for index in 0..<moves {
            let entry = try Self.arrive("video-\(index).png", in: folder.appendingPathComponent("slow"), vault: slow)
            let intake = flagging.intake(slow)
            tasks.append(Task.detached { await intake.handle(entry, kind: .image, settings: settings) })
        }
        // Every move is under way (each would hold a cooperative thread, were it run on one).
        var reached = 0
        for _ in 0..<moves where entered.wait(timeout: .now() + 20) == .success { reached += 1 }
        // Another account's card, judged and hidden meanwhile.
        let card = try Self.arrive("card.png", in: folder.appendingPathComponent("other"), vault: other)
        let done = Locked<Intake.Outcome?>(nil)
        let started = ContinuousClock.now
        let probe = Task.detached {
            let outcome = await flagging.intake(other).handle(card, kind: .image, settings: settings)
            done.withLock { $0 = outcome }
        }
        while done.withLock({ $0 }) == nil && ContinuousClock.now - started < .seconds(5) { usleep(10_000) }
        let took = ContinuousClock.now - started
        let probeOutcome = done.withLock { $0 }
        // The long moves end; every file is in its vault.
        for _ in 0..<moves { gate.signal() }
        for task in tasks {
            guard case .hidden = await task.value else { Issue.record("a slow move did not end in the vault"); continue }
        }
        await probe.value
        #expect(reached == moves, "only \(reached) of \(moves) moves started at once")
        guard case .hidden = probeOutcome else {
            Issue.record("the other account's card waited for the long moves (\(String(describing: probeOutcome)) after \(took)): they held Swift's cooperative threads")
            return
        }
        #expect(took < .seconds(5))
    }

    /// A vault and its database in `folder`, with a crash-point seam.
    static func vault(in folder: URL, crashPoint: (@Sendable (Vault.MoveStep) throws -> Void)?) throws -> Vault {
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Downloads"), withIntermediateDirectories: true)
        return try Vault(root: folder.appendingPathComponent("vault").path, store: AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path),
                         crashPoint: crashPoint)
    }

    /// A small picture arriving in `folder`'s Downloads, queued.
    static func arrive(_ name: String, in folder: URL, vault: Vault) throws -> BacklogEntry {
        let url = folder.appendingPathComponent("Downloads/\(name)")
        try Data(try IntakeTests.png(card: false, width: 64 + Int.random(in: 0...400), height: 48)).write(to: url)
        let entry = BacklogEntry(path: url.path, root: url.deletingLastPathComponent().path, direction: .incoming, identity: try MediaFile(path: url.path).identity)
        try vault.store.enqueue([entry], mode: .adult)
        return entry
    }
}
