import Foundation
import GRDB
import MediaDecoding
import SensitivityAnalysis
import Testing
@testable import QuarantineCore
@testable import QuarantineStore

/// A file given up is not given up forever (issue 27): another program, runtime or model tries it again.
@Suite("Given up, then tried again")
struct GivenUpRetryTests {
    @Test("a file left by on_error is not judged again by the same program and models; after a change of program or models it is, and the history says so")
    func triedAgainAfterAChange() async throws {
        let place = try IntakeTests.Place(); defer { place.cleanUp() }
        let failing = IntakeTests.StandInAnalysis { path, _ in
            FileReport(path: path, kind: .image, type: .png, analysis: nil, failure: .init(code: "corrupt", message: "\(path): corrupt data"), elapsedMilliseconds: 1)
        }
        var settings = Settings()
        settings.mode = .adult
        let entry = try place.arrive("odd.png", try IntakeTests.png(card: false, width: 130))
        guard case .left = await failing.intake(place.vault).handle(entry, kind: .image, settings: settings) else { Issue.record("not left"); return }
        #expect(failing.calls.withLock { $0 } == 1)
        // Noticed again (a rescan, a restart): the same program gave it up, so it is not judged again.
        #expect(try place.vault.store.enqueue([entry], mode: .adult) == 0, "not queued again while the basis is the same")
        #expect(try place.vault.store.hasSeen(entry.identity, at: entry.path, in: .adult))
        // The program or its models changed since (as a new build or install would record).
        try place.vault.store.write { db in try db.execute(sql: "UPDATE seenFile SET basis = 'program 1-2, runtime x, models y z'") }
        #expect(try !place.vault.store.hasSeen(entry.identity, at: entry.path, in: .adult))
        #expect(try place.vault.store.enqueue([entry], mode: .adult) == 1, "queued again")
        _ = await failing.intake(place.vault).handle(entry, kind: .image, settings: settings)
        #expect(failing.calls.withLock { $0 } == 2, "judged again")
        let details = try place.vault.store.events().compactMap(\.detail)
        #expect(details.contains { $0.hasPrefix("tried again: it was given up by program 1-2") }, "\(details)")
        // Given up again by this program: seen once more.
        #expect(try place.vault.store.hasSeen(entry.identity, at: entry.path, in: .adult))
    }
}
