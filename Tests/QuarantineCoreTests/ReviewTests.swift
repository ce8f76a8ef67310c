import Foundation
@testable import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore
import Locking

/// The review use cases in process: consent by the rules, then the action, recorded with its actor.
@Suite("Review")
struct ReviewTests {
    @Test("adult mode: a release needs a confirmation; child mode: the guardian's PIN, recorded as the guardian's act")
    func consentThenAct() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let file = place.downloads.appendingPathComponent("a.png")
        try Data(try IntakeTests.png(card: true)).write(to: file)
        let item = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .adult, actor: "test")

        let adult = Review(vault: place.vault, mode: ModeInForce(mode: .adult))
        #expect(throws: Review.Refusal.notConfirmed) { _ = try adult.consent(to: .release, confirmed: false, pin: nil) }
        #expect(adult.actor == "cli")

        let child = Review(vault: place.vault, mode: ModeInForce(mode: .child))
        #expect(throws: Review.Refusal.self) { _ = try child.consent(to: .release, confirmed: true, pin: "2468") }   // no PIN set yet
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        #expect(throws: Review.Refusal.wrongPIN()) { _ = try child.consent(to: .release, confirmed: true, pin: "1111") }
        #expect(throws: Review.Refusal.wrongPIN()) { _ = try child.consent(to: .purge, confirmed: true, pin: nil) }
        let consent = try child.consent(to: .release, confirmed: true, pin: "2468")
        let released = try child.release(item.id!, consent: consent)
        #expect(released.path == file.path && FileManager.default.fileExists(atPath: file.path))
        #expect(try child.history(of: item.id).first?.actor == "guardian")
    }

    @Test("guessing the PIN: after 5 wrong PINs the next try waits 1 minute, each wrong one after doubles it, unchecked while waiting; the right PIN clears the count; every wrong one is in the audit log")
    func pinRateLimit() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        let start = Date()
        let clock = TestClock(start)
        let child = Review(vault: place.vault, mode: ModeInForce(mode: .child)) { clock.now.withLock { $0 } }
        for _ in 1...4 {
            #expect(throws: Review.Refusal.wrongPIN(wait: 0)) { _ = try child.consent(to: .release, confirmed: true, pin: "0000") }
        }
        #expect(throws: Review.Refusal.wrongPIN(wait: 60)) { _ = try child.consent(to: .release, confirmed: true, pin: "0000") }
        // Waiting: even the right PIN is not checked.
        clock.now.withLock { $0 = start.addingTimeInterval(59) }
        func expectWait(until: TimeInterval, _ pin: String) {
            do {
                _ = try child.consent(to: .release, confirmed: true, pin: pin)
                Issue.record("accepted while waiting")
            } catch Review.Refusal.waitForPIN(let date) {
                #expect(abs(date.timeIntervalSince(start) - until) < 0.01, "\(date.timeIntervalSince(start))")   // stored to the millisecond
            } catch { Issue.record("\(error)") }
        }
        expectWait(until: 60, "2468")
        clock.now.withLock { $0 = start.addingTimeInterval(61) }
        #expect(throws: Review.Refusal.wrongPIN(wait: 120)) { _ = try child.consent(to: .release, confirmed: true, pin: "1111") }
        clock.now.withLock { $0 = start.addingTimeInterval(61 + 119) }
        expectWait(until: 61 + 120, "2222")
        clock.now.withLock { $0 = start.addingTimeInterval(61 + 121) }
        #expect(throws: Review.Refusal.wrongPIN(wait: 240)) { _ = try child.consent(to: .release, confirmed: true, pin: "3333") }
        clock.now.withLock { $0 = start.addingTimeInterval(61 + 121 + 241) }
        _ = try child.consent(to: .release, confirmed: true, pin: "2468")
        // Cleared: five free tries again.
        #expect(throws: Review.Refusal.wrongPIN(wait: 0)) { _ = try child.consent(to: .release, confirmed: true, pin: "0000") }
        let logged = try child.history().filter { $0.kind == .guardian && $0.detail?.hasPrefix("wrong guardian PIN") == true }
        #expect(logged.count == 8, "\(logged.map(\.detail))")
        #expect(logged.contains { $0.detail == "wrong guardian PIN (7 in a row); the next try must wait 4 minutes" })
        #expect(GuardianPIN.wait(afterFailures: 30) == GuardianPIN.longestWait)
    }

    @Test("a child's request for a release: recorded once with its audit event, open until the item leaves the vault; adult mode has no one to ask")
    func releaseRequest() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let file = place.downloads.appendingPathComponent("c.png")
        try Data(try IntakeTests.png(card: true)).write(to: file)
        let item = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["TEST_CARD 1.00"], mode: .child, actor: "test")
        let adult = Review(vault: place.vault, mode: ModeInForce(mode: .adult))
        #expect(throws: Review.Refusal.self) { try adult.requestRelease(item.id!) }
        let child = Review(vault: place.vault, mode: ModeInForce(mode: .child))
        #expect(throws: Review.Refusal.self) { try child.requestRelease(999) }
        try child.requestRelease(item.id!)
        try child.requestRelease(item.id!)
        #expect(try child.releaseRequests().keys.sorted() == [item.id!])
        #expect(try child.history(of: item.id).filter { $0.kind == .releaseRequested }.count == 1)
        try GuardianPIN(store: place.vault.store).set("2468", rounds: GuardianPIN.testRounds)
        _ = try child.release(item.id!, consent: child.consent(to: .release, confirmed: true, pin: "2468"))
        #expect(try child.releaseRequests().isEmpty)
    }

    @Test("purge candidates come from the injected clock")
    func purgeByClock() throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let file = place.downloads.appendingPathComponent("b.png")
        try Data(try IntakeTests.png(card: false)).write(to: file)
        _ = try place.vault.quarantine(path: file.path, expected: nil, reasons: ["x"], mode: .adult, actor: "test")
        let now = Review(vault: place.vault, mode: ModeInForce(mode: .adult))
        #expect(try now.purgeCandidates(olderThanDays: 1).isEmpty)
        let later = Review(vault: place.vault, mode: ModeInForce(mode: .adult)) { Date().addingTimeInterval(3 * 86_400) }
        #expect(try later.purgeCandidates(olderThanDays: 2).count == 1)
        let purged = try later.purge(later.purgeCandidates(olderThanDays: 2), consent: later.consent(to: .purge, confirmed: true, pin: nil))
        #expect(purged == 1)
        #expect(try later.items().isEmpty)
    }
}

/// A clock a test sets by hand.
final class TestClock: Sendable {
    let now: Locked<Date>
    init(_ start: Date) { now = Locked(start) }
}

extension ReviewTests {
    @Test("a PIN try that cannot be counted (the disk is full) is not checked: the right PIN is not told from a wrong one (issue 26)",
          .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func pinTryOnAFullDisk() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-pin-full-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(mount("tmpfs", folder.path, "tmpfs", 0, "size=1m") == 0, "mount a tmpfs: \(String(cString: strerror(errno)))")
        defer { umount2(folder.path, Int32(MNT_DETACH)); try? FileManager.default.removeItem(at: folder) }
        let store = try AuditStore(path: folder.appendingPathComponent("audit.sqlite3").path)
        let pin = GuardianPIN(store: store)
        try pin.set("2468", rounds: GuardianPIN.testRounds)
        #expect(try pin.check("2468") == .accepted)
        // Fill the file system.
        let filler = folder.appendingPathComponent("filler").path
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 7, count: 4096)
        while write(fd, block, block.count) > 0 {}
        close(fd)
        var answers: [String] = []
        for guess in ["2468", "1111", "2468", "2222"] {
            do { answers.append("\(try pin.check(guess))") } catch { answers.append("error") }
        }
        #expect(answers == ["error", "error", "error", "error"], "with the disk full every try is refused unchecked: \(answers)")
        unlink(filler)
        #expect(try pin.check("1111") == .wrong(inARow: 1, wait: 0), "the uncounted tries left no trace; this one is counted")
        #expect(try pin.check("2468") == .accepted)
    }
}
