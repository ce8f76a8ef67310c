import Foundation
import Locking
import MediaDecoding
@testable import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

/// What a release puts back arrives in a watched folder like any new file. Where files are held
/// while checked, it must not vanish again into the holding folder to be found on the allow list
/// (a person who released a file and opens it at once found nothing there: CI saw it).
@Suite("A released file arriving")
struct ReleaseArrivalTests {
    /// An agent's lane that holds files while it checks them, judging with `analysis` (a stand-in).
    static func lane(_ vault: Vault, _ analysis: IntakeTests.StandInAnalysis) -> Intake {
        Intake(vault: vault, holding: Holding(store: vault.store), blocking: { _, work in try work() }, analysis: { path, settings, _ in
            analysis.calls.withLock { $0 += 1 }
            return analysis.answer(path, settings)
        })
    }

    /// Child mode (a file is held while it is checked).
    static let child: Settings = { var settings = Settings(); settings.mode = .child; return settings }()

    /// A picture arrived as `name` in the Downloads of a fresh folder and hidden there by a lane
    /// whose analysis (a stand-in, named so) flags everything.
    struct Hidden {
        let folder: URL
        let vault: Vault
        let item: VaultItem
        let entry: BacklogEntry
        let analysis: IntakeTests.StandInAnalysis
        func cleanUp() { try? FileManager.default.removeItem(at: folder) }
    }

    static func hidden(_ name: String, card: Bool) async throws -> Hidden? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-release-arrival-\(UUID().uuidString)")
        let vault = try IntakeOffPoolTests.vault(in: folder, crashPoint: nil)
        let path = folder.appendingPathComponent("Downloads/" + name).path
        try Data(try IntakeTests.png(card: card)).write(to: URL(fileURLWithPath: path))
        let entry = BacklogEntry(path: path, root: folder.appendingPathComponent("Downloads").path, direction: .incoming, identity: try MediaFile(path: path).identity)
        let flagging = IntakeTests.StandInAnalysis.judging(sensitive: true)
        let hid = await lane(vault, flagging).handle(entry, kind: .image, settings: child)
        guard case .hidden(let item, _, _, _) = hid else {
            Issue.record("\(hid)")
            try? FileManager.default.removeItem(at: folder)
            return nil
        }
        return Hidden(folder: folder, vault: vault, item: item, entry: entry, analysis: flagging)
    }

    /// A second program on the same vault and database, whose release calls `atPlace` right
    /// after the file is back under its name (the vault's crash-point seam).
    static func releasing(in folder: URL, atPlace: @escaping @Sendable () throws -> Void) throws -> Vault {
        try Vault(root: folder.appendingPathComponent("vault").path, store: AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path)) { step in
            if step == .inPlace { try atPlace() }
        }
    }

    @Test("the version a release puts back is seen: its arrival is neither held nor judged, during the release or after it", .ownThread)
    func releasedIsNotHeldAgain() async throws {
        // Hidden first, by a lane that flags it.
        guard let hidden = try await Self.hidden("card.png", card: true) else { return }
        defer { hidden.cleanUp() }
        let (folder, vault, item, arrived, flagging, settings) = (hidden.folder, hidden.vault, hidden.item, hidden.entry, hidden.analysis, Self.child)
        let path = arrived.path
        #expect(flagging.calls.withLock { $0 } == 1)

        // Released by another program (the same database), which stops for a moment right after
        // the file is back under its name: the agent's lane sees it arrive then.
        let arrival = Locked<Task<Intake.Outcome, Never>?>(nil)
        let laneStarted = DispatchSemaphore(value: 0)
        let underWay = Locked<Bool?>(nil)
        let releasing = try Self.releasing(in: folder) {
            underWay.withLock { $0 = try? vault.store.releaseUnderWay(into: path) }
            let entry = BacklogEntry(path: path, root: arrived.root, direction: .incoming, identity: try MediaFile(path: path).identity)
            arrival.withLock { $0 = Task {
                laneStarted.signal()
                return await Self.lane(vault, flagging).handle(entry, kind: .image, settings: settings)
            } }
            _ = laneStarted.wait(timeout: .now() + 5)
            // Time for the lane to reach its hold, were it not waiting for the release.
            Thread.sleep(forTimeInterval: 0.3)
        }
        var placed = stat()
        let released = try releasing.release(id: item.id!, mode: .child, actor: "guardian")
        #expect(released.path == path && stat(path, &placed) == 0)
        #expect(underWay.withLock { $0 } == true, "while the release runs, the path is said to be under way")
        #expect(try vault.store.releaseUnderWay(into: path) == false, "and no longer once it is done")
        let during = try await #require(arrival.withLock { $0 }).value
        guard case .alreadySeen = during else { Issue.record("arrived during the release: \(during)"); return }

        // As inotify reports it after the release: known, not judged, not moved.
        let again = BacklogEntry(path: path, root: arrived.root, direction: .incoming, identity: try MediaFile(path: path).identity)
        let after = await Self.lane(vault, flagging).handle(again, kind: .image, settings: settings)
        guard case .alreadySeen = after else { Issue.record("arrived after the release: \(after)"); return }
        #expect(flagging.calls.withLock { $0 } == 1, "judged once: when it first arrived")
        var now = stat()
        #expect(stat(path, &now) == 0 && now.st_ino == placed.st_ino && now.st_ctim.tv_nsec == placed.st_ctim.tv_nsec, "never moved since the release")
        #expect(try Holding(store: vault.store).heldFiles().isEmpty)
        #expect(try vault.store.hasSeen(try MediaFile(path: path).identity, at: path, in: .adult), "seen in adult mode too (a child-mode record counts for both)")
    }

    @Test("another file put under the released name meanwhile is not taken for it: judged as what it is")
    func swappedIsJudged() async throws {
        guard let hidden = try await Self.hidden("photo.png", card: false) else { return }
        defer { hidden.cleanUp() }
        let (folder, vault, item, flagging, settings) = (hidden.folder, hidden.vault, hidden.item, hidden.analysis, Self.child)
        let path = hidden.entry.path, root = hidden.entry.root
        let intake = Self.lane(vault, flagging)
        // Right after the release put it back, the name gets other bytes (a card, written in place).
        let releasing = try Self.releasing(in: folder) {
            let card = try IntakeTests.png(card: true)
            let fd = open(path, O_WRONLY | O_TRUNC)
            _ = card.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        _ = try releasing.release(id: item.id!, mode: .child, actor: "guardian")
        let outcome = await intake.handle(BacklogEntry(path: path, root: root, direction: .incoming, identity: try MediaFile(path: path).identity), kind: .image, settings: settings)
        guard case .hidden = outcome else { Issue.record("the changed file: \(outcome)"); return }
        #expect(flagging.calls.withLock { $0 } == 2)
    }
}
