import Foundation
import SandboxProbe
import Testing
@testable import AccountPipeline

/// A kill is not a crash (issue 27): only a fatal signal the process saw pins the files in flight.
@Suite("Crash journal")
struct CrashJournalTests {
    @Test("SIGSEGV and SIGABRT write the files in flight (not one done before); a SIGKILL writes nothing; the next start reads each once and empties it")
    func fatalSignalsOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("crash-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = try CrashJournal(databasePath: folder.appendingPathComponent("audit.sqlite3").path)
        let card = "/home/sam/Downloads/card \u{1F600}.png"
        #expect(crash_journal_probe(journal.descriptor, card, 1) == SIGSEGV)
        #expect(crash_journal_probe(journal.descriptor, card, 2) == SIGABRT)
        #expect(journal.takeCrashes() == [card], "each file once, the one finished before the crash not at all")
        #expect(journal.takeCrashes() == [], "emptied when read")
        #expect(crash_journal_probe(journal.descriptor, card, 3) == SIGKILL)
        #expect(journal.takeCrashes() == [], "a SIGKILL counts nothing")
    }
}
