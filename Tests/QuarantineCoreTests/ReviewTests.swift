import Foundation
import QuarantineStore
import SensitivityAnalysis
import Testing
@testable import QuarantineCore

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
        try GuardianPIN(store: place.vault.store).set("2468")
        #expect(throws: Review.Refusal.wrongPIN) { _ = try child.consent(to: .release, confirmed: true, pin: "1111") }
        #expect(throws: Review.Refusal.wrongPIN) { _ = try child.consent(to: .purge, confirmed: true, pin: nil) }
        let consent = try child.consent(to: .release, confirmed: true, pin: "2468")
        let released = try child.release(item.id!, consent: consent)
        #expect(released.path == file.path && FileManager.default.fileExists(atPath: file.path))
        #expect(try child.history(of: item.id).first?.actor == "guardian")
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
