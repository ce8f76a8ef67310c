import Testing
@testable import QuarantineAgent

/// The agent's log lines: metadata that a script (or journalctl -o cat | grep) can take apart.
@Suite("Log lines")
struct LogLineTests {
    @Test("metadata values: bare when unambiguous; quoted and escaped with spaces, quotes, = or control characters")
    func fields() {
        #expect(JournalLogHandler.field("/home/a/Downloads/card.jpg") == "/home/a/Downloads/card.jpg")
        #expect(JournalLogHandler.field("/home/a/My Downloads/x.jpg") == "\"/home/a/My Downloads/x.jpg\"")
        #expect(JournalLogHandler.field("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(JournalLogHandler.field("line\nbreak\u{1}") == "\"line\\nbreak\\x01\"")
        #expect(JournalLogHandler.field("k=v") == "\"k=v\"")
        #expect(JournalLogHandler.field("") == "\"\"")
    }
}
