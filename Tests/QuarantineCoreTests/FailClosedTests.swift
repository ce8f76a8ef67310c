import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import Testing
import TestSupport
@testable import QuarantineCore
import Locking

/// Child mode fails closed: a held file goes back only on a clean, other or allowed verdict;
/// every other way a check can end hides it as unverified or keeps it held, recorded for the
/// guardian. In process: a real vault, database and holding folder, stand-in analyses (named so).
@Suite("Fail closed (child mode)")
struct FailClosedTests {
    typealias Place = IntakeTests.Place

    func settings(_ mode: AnalysisMode, hold: Bool = false) -> Settings {
        var s = Settings()
        s.mode = mode
        s.agent.holdWhileChecking = hold
        return s
    }

    func arrive(_ place: Place, _ name: String, card: Bool = false, width: Int = 320) throws -> BacklogEntry {
        try HoldTests().arrive(place, name, card: card, width: width)
    }

    /// An intake with a holding area whose analysis answers `answer`.
    func intake(_ vault: Vault, _ answer: @escaping @Sendable (String, Settings) -> FileReport) -> Intake {
        Intake(vault: vault, holding: Holding(store: vault.store), blocking: { _, work in try work() }, analysis: { path, settings, _ in answer(path, settings) })
    }

    /// An analysis that fails with `code`, as the worker reports such a failure.
    static func failing(_ code: String, _ message: String) -> @Sendable (String, Settings) -> FileReport {
        { path, _ in FileReport(path: path, kind: .image, type: .png, analysis: nil, failure: .init(code: code, message: "\(path): \(message)"), elapsedMilliseconds: 1) }
    }

    static func judging(sensitive: Bool) -> @Sendable (String, Settings) -> FileReport {
        { path, settings in IntakeTests.StandInAnalysis.judging(sensitive: sensitive).answer(path, settings) }
    }

    /// The "kept held" events of the audit log (what the guardian's history shows).
    func keptHeldEvents(_ place: Place) throws -> [String] {
        try place.vault.store.events().filter { $0.kind == .error }.compactMap(\.detail).filter { $0.hasPrefix("kept held") }
    }

    /// Makes the vault refuse every move: its folder is replaced by a plain file.
    func breakVault(_ place: Place) throws {
        let root = place.folder.appendingPathComponent("data/vault").path
        try FileManager.default.removeItem(atPath: root)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: root))
    }

    @Test("flagged, and the vault refuses the move: kept held (not put back), recorded; judged again from where it is held once the vault works")
    func vaultRefused() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        try breakVault(place)
        let outcome = await intake(place.vault, Self.judging(sensitive: true)).handle(entry, kind: .image, settings: settings(.child))
        guard case .keptHeld(let reason, after: .notMoved) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("vault refused"))
        #expect(!FileManager.default.fileExists(atPath: entry.path), "a flagged file came back when the vault refused it")
        let held = try Holding(store: place.vault.store).heldFiles()
        #expect(held.count == 1 && held.allSatisfy { FileManager.default.fileExists(atPath: $0.heldPath) })
        #expect(try keptHeldEvents(place).count == 1)

        // The vault works again: the retry (the agent queues it again) hides it from the holding area.
        try FileManager.default.removeItem(atPath: place.folder.appendingPathComponent("data/vault").path)
        try FileManager.default.createDirectory(atPath: place.folder.appendingPathComponent("data/vault").path, withIntermediateDirectories: true)
        let again = BacklogEntry(path: entry.path, root: entry.root, direction: .incoming, identity: try #require(FileIdentity(statAt: held[0].heldPath)))
        let second = await intake(place.vault, Self.judging(sensitive: true)).handle(again, kind: .image, settings: settings(.child))
        guard case .hidden(let item, .quarantined, _, _) = second else { Issue.record("\(second)"); return }
        #expect(item.originalPath == entry.path)
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
    }

    @Test("no holding folder can be made and the vault refuses too: the file is left, and the guardian is told in the history")
    func neitherHeldNorHidden() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        try breakVault(place)
        let holding = Holding(store: place.vault.store, parent: place.folder.appendingPathComponent("no-such-folder").path)
        let intake = Intake(vault: place.vault, holding: holding, blocking: { _, work in try work() },
                            analysis: { path, settings, _ in Self.judging(sensitive: true)(path, settings) })
        let outcome = await intake.handle(entry, kind: .image, settings: settings(.child))
        guard case .notMoved = outcome else { Issue.record("\(outcome)"); return }
        let details = try place.vault.store.events().compactMap(\.detail)
        #expect(details.filter { $0.hasPrefix("left where it is, readable") }.count == 1, "\(details)")
    }

    @Test("adult mode with hold_while_checking keeps today's behaviour: the vault refused, the file goes back")
    func adultPutsBack() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        try breakVault(place)
        let outcome = await intake(place.vault, Self.judging(sensitive: true)).handle(entry, kind: .image, settings: settings(.adult, hold: true))
        guard case .notMoved = outcome else { Issue.record("\(outcome)"); return }
        #expect(FileManager.default.fileExists(atPath: entry.path))
    }

    @Test("no analysis worker, with on_error = hold and even with on_error = leave: hidden as unverified with the reason, never put back")
    func noWorker() async throws {
        for onError in [ErrorAction.hold, .leave] {
            let place = try Place(); defer { place.cleanUp() }
            let entry = try arrive(place, "photo.png")
            var settings = settings(.child)
            var policy = settings.policy
            policy.onError = onError
            settings.policies[.child] = policy
            let outcome = await intake(place.vault, Self.failing("worker", "no analysis worker could be started")).handle(entry, kind: .image, settings: settings)
            guard case .hidden(let item, .unverified, let reasons, _) = outcome else { Issue.record("\(onError): \(outcome)"); continue }
            #expect(reasons.joined().contains("no analysis worker"), "\(reasons)")
            #expect(item.originalPath == entry.path)
            #expect(!FileManager.default.fileExists(atPath: entry.path), "\(onError): came back without a verdict")
            #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
        }
    }

    @Test("unopenable while held (an I/O error reading it): hidden as unverified, not put back")
    func unopenable() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        let intake = Intake(vault: place.vault, holding: Holding(store: place.vault.store),
                            blocking: { _, _ in throw MediaError(.io, "input/output error", path: entry.path) },
                            analysis: { path, settings, _ in Self.judging(sensitive: false)(path, settings) })
        let outcome = await intake.handle(entry, kind: .image, settings: settings(.child))
        guard case .hidden(_, .unverified, let reasons, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reasons.joined().contains("could not be opened"), "\(reasons)")
        #expect(!FileManager.default.fileExists(atPath: entry.path))
    }

    @Test("the audit database becomes unavailable during the check: kept held, still queued; judged from where it is held once it works")
    func databaseUnavailable() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-failclosed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let downloads = folder.appendingPathComponent("Downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let databasePath = folder.appendingPathComponent("audit.sqlite3").path
        let vault = try Vault(root: folder.appendingPathComponent("vault").path, store: AuditStore(path: databasePath, busyTimeout: 0.2))
        let url = downloads.appendingPathComponent("photo.png")
        try Data(try IntakeTests.png(card: false)).write(to: url)
        let entry = BacklogEntry(path: url.path, root: downloads.path, direction: .incoming, identity: try MediaFile(path: url.path).identity)
        try vault.store.enqueue([entry], mode: .child)
        let locker = Locked<DatabaseLocker?>(nil)
        // The lock is taken while the file is judged: after the hold was recorded, before the verdict.
        let outcome = await intake(vault) { path, settings in
            locker.withLock { $0 = try? DatabaseLocker(path: databasePath) }
            return Self.judging(sensitive: false)(path, settings)
        }.handle(entry, kind: .image, settings: settings(.child))
        guard case .keptHeld(_, after: .databaseUnavailable) = outcome else { Issue.record("\(outcome)"); locker.withLock { $0?.release() }; return }
        #expect(!FileManager.default.fileExists(atPath: url.path), "back without a recorded verdict")
        locker.withLock { $0?.release() }
        #expect(try vault.store.backlogCount() == 1, "still queued")
        let second = await intake(vault, Self.judging(sensitive: false)).handle(entry, kind: .image, settings: settings(.child))
        guard case .clean = second else { Issue.record("\(second)"); return }
        #expect(FileManager.default.fileExists(atPath: url.path))
        #expect(try Holding(store: vault.store).heldFiles().isEmpty)
        #expect(try vault.store.backlogCount() == 0)
    }

    @Test("cancelled at a stop: kept held and queued; at the next start it stays held (no put-back) and is judged where it is")
    func cancelledAtStop() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        let outcome = await intake(place.vault, Self.failing(MediaError.Code.cancelled.rawValue, "analysis was cancelled")).handle(entry, kind: .image, settings: settings(.child))
        guard case .keptHeld(_, after: .cancelled) = outcome else { Issue.record("\(outcome)"); return }
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        // The next start (child mode): nothing goes back.
        let kept = Holding(store: place.vault.store).keepHeld()
        #expect(kept.count == 1)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        let second = await intake(place.vault, Self.judging(sensitive: true)).handle(entry, kind: .image, settings: settings(.child))
        guard case .hidden(_, .quarantined, _, _) = second else { Issue.record("\(second)"); return }
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
    }

    @Test("crashed the analysis while held (given up at the next start): hidden as unverified from where it is held")
    func givenUpWhileHeld() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "card.png", card: true)
        _ = try Holding(store: place.vault.store).hold(path: entry.path, root: entry.root)
        // Two crashes the crash journal recorded.
        try place.vault.store.recordCrash(path: entry.path)
        try place.vault.store.recordCrash(path: entry.path)
        let outcome = await intake(place.vault, Self.judging(sensitive: false)).handle(entry, kind: .image, settings: settings(.child))
        guard case .givenUp(_, then: .hidden(let item, .unverified, _, _)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(item.originalPath == entry.path)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
    }

    @Test("changed again and again while held (another name or descriptor writes it): hidden as unverified after a few rounds")
    func keepsChanging() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let entry = try arrive(place, "photo.png")
        let rounds = Locked(0)
        let outcome = await intake(place.vault) { path, settings in
            // Written through another descriptor after it was hashed, before it is judged.
            rounds.withLock { $0 += 1 }
            let handle = FileHandle(forWritingAtPath: path)
            handle?.seekToEndOfFile()
            handle?.write(Data([0]))
            try? handle?.close()
            return Self.judging(sensitive: false)(path, settings)
        }.handle(entry, kind: .image, settings: settings(.child))
        guard case .hidden(_, .unverified, let reasons, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reasons.joined().contains("kept changing"))
        #expect(rounds.withLock { $0 } == Intake.changedRounds)
        #expect(!FileManager.default.fileExists(atPath: entry.path))
    }

    @Test("clean and other still go back")
    func goodVerdictsGoBack() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let clean = try arrive(place, "clean.png")
        guard case .clean = await intake(place.vault, Self.judging(sensitive: false)).handle(clean, kind: .image, settings: settings(.child)) else {
            Issue.record("not clean"); return
        }
        let other = try arrive(place, "other.png", width: 300)
        let outcome = await intake(place.vault) { path, _ in FileReport(path: path, kind: .other, type: .png, analysis: nil, failure: nil, elapsedMilliseconds: 1) }
            .handle(other, kind: .image, settings: settings(.child))
        guard case .other = outcome else { Issue.record("\(outcome)"); return }
        #expect(FileManager.default.fileExists(atPath: clean.path) && FileManager.default.fileExists(atPath: other.path))
        #expect(try Holding(store: place.vault.store).heldFiles().isEmpty)
    }

    @Test("full disk (a 1 MiB tmpfs under the vault): the flagged file stays held, never back in the folder",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullDisk() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let vaultRoot = place.folder.appendingPathComponent("data/vault").path
        #expect(mount("tmpfs", vaultRoot, "tmpfs", 0, "size=1m") == 0, "mount a tmpfs: \(String(cString: strerror(errno)))")
        defer { _ = umount2(vaultRoot, Int32(MNT_DETACH)) }
        chmod(vaultRoot, 0o700)
        // Fill it.
        let filler = FileHandle(forWritingAtPath: { FileManager.default.createFile(atPath: vaultRoot + "/filler", contents: nil); return vaultRoot + "/filler" }())!
        let block = Data(repeating: 1, count: 64 * 1024)
        while (try? filler.write(contentsOf: block)) != nil {}
        try? filler.close()
        let entry = try arrive(place, "card.png", card: true)
        let outcome = await intake(place.vault, Self.judging(sensitive: true)).handle(entry, kind: .image, settings: settings(.child))
        guard case .keptHeld(let reason, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(reason.contains("vault refused"), "\(reason)")
        #expect(!FileManager.default.fileExists(atPath: entry.path), "a flagged file came back when the disk was full")
        #expect(try Holding(store: place.vault.store).heldFiles().count == 1)
        #expect(try keptHeldEvents(place).count == 1)
    }
}
