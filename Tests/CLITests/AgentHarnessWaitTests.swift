import Foundation
import Synchronization
import Testing

/// How ``AgentHarness/wait(timeout:_:)`` polls: the condition (which runs the CLI, a costly
/// process start) is evaluated again only when the state under the home changed or a second
/// passed, and a change there is never missed.
@Suite("Agent harness: waiting on the agent's state")
struct AgentHarnessWaitTests {
    @Test("a file written, grown or touched under the home changes the stamp; SQLite's -wal, -shm and -journal do not")
    func stamp() throws {
        let agent = try AgentHarness(); defer { agent.cleanUp() }
        let before = agent.stateStamp()
        let data = agent.cli.home.appendingPathComponent(".local/share/quarantine")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let afterFolder = agent.stateStamp()
        #expect(afterFolder != before, "a new folder")
        for name in ["audit.sqlite3-wal", "audit.sqlite3-shm", "audit.sqlite3-journal"] {
            try Data("x".utf8).write(to: data.appendingPathComponent(name))
        }
        #expect(agent.stateStamp() == afterFolder, "a reader's own SQLite files are left out")
        let file = agent.downloads.appendingPathComponent("card.jpg")
        try Data("a".utf8).write(to: file)
        let written = agent.stateStamp()
        #expect(written != afterFolder, "a new file")
        try Data("ab".utf8).write(to: file)
        let grown = agent.stateStamp()
        #expect(grown != written, "a file grown")
        var times = [timespec(tv_sec: 1, tv_nsec: 0), timespec(tv_sec: 1, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, file.path, &times, 0) == 0)
        #expect(agent.stateStamp() != grown, "a file touched")
        try Data("log line\n".utf8).write(to: agent.log)
        #expect(agent.stateStamp() != grown, "the agent's log")
    }

    @Test("with nothing changing the condition is evaluated about once a second, not at every poll; a change is seen at the next poll; a condition that never holds fails the wait")
    func evaluations() async throws {
        let agent = try AgentHarness(); defer { agent.cleanUp() }
        let count = Mutex<Int>(0)
        let held = await agent.wait(timeout: 2.5) { count.withLock { $0 += 1 }; return false }
        #expect(!held)
        // Before: 1 + a poll every 0.1 to 0.5 s (about 9 in 2.5 s). Now: the first, one a second, the last.
        let evaluations = count.withLock { $0 }
        #expect(evaluations >= 2 && evaluations <= 5, "\(evaluations) evaluations in 2.5 s")
        // A change made while the condition runs (here: by the condition itself) is looked at
        // at the next poll (0.1 s later), not a second later.
        let flag = agent.downloads.appendingPathComponent("flag")
        let times = Mutex<[ContinuousClock.Instant]>([])
        let seen = await agent.wait(timeout: 10) {
            let n = times.withLock { $0.append(.now); return $0.count }
            if n == 1 { try Data("1".utf8).write(to: flag) }
            return n >= 2
        }
        #expect(seen)
        let at = times.withLock { $0 }
        #expect(at.count == 2 && at[1] - at[0] < .milliseconds(800), "evaluated again \(at.count == 2 ? "\(at[1] - at[0])" : "never") after the change")
    }
}
