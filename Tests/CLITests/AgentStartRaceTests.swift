import Foundation
import Testing
import TestSupport

/// The agent starting on a fresh home while `quarantine status` (and `list`) are polled, as a
/// panel applet or a login script does (issue 27): it once exited at start with SQLITE_BUSY on
/// `PRAGMA journal_mode = WAL`. The built binary, several rounds, several pollers each.
@Suite("Agent start while polled")
struct AgentStartRaceTests {
    /// Three rounds, each a case of its own (they run side by side, not one after another); the
    /// last two without models.
    @Test("the agent always starts while status and list are polled; every poll answers", arguments: 0..<3)
    func startWhilePolled(round: Int) async throws {
        var pollFailures: [String] = []
        do {
            let agent = try AgentHarness()
            defer { agent.cleanUp() }
            // The race is the database's set-up, before any model loads: round 0 starts the whole
            // agent, the other rounds one without models (it starts, says it cannot analyse and
            // keeps watching; see AgentTests' missing model), whose start is the same up to the
            // models, without their ~1 s of CPU in the analysis worker.
            if round > 0 {
                let empty = agent.cli.home.appendingPathComponent("no-models")
                try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
                agent.extraEnvironment["QUARANTINE_DATA_DIR"] = empty.path
            }
            let stop = FailureList()
            let settled = FailureList()
            let failures = FailureList()
            let group = DispatchGroup()
            for poller in 0..<4 {
                group.enter()
                Thread {
                    while !stop.isSet {
                        let arguments = poller == 3 ? ["list", "--json"] : ["status", "--json"]
                        do {
                            // One poller runs the built binary, the others the same command in
                            // this process (InProcessCLI: the same SQLite opens, a few ms of CPU
                            // each instead of ~80, so they poll far more often).
                            let result = poller == 0 ? try agent.runBinaryBlocking(arguments) : try agent.runBlocking(arguments)
                            // status: 0 running, 3 not (yet) running; list: 0.
                            if ![0, 3].contains(result.status) {
                                failures.append("\(arguments[0]) exited \(result.status): \(result.stderr)")
                            }
                        } catch {
                            failures.append("\(error)")
                        }
                        // The built binary costs ~80 ms of CPU a start, and on a loaded machine
                        // the agent's start (what the polls race) takes many seconds: polled as
                        // often as the others it cost 12 s of CPU for the three rounds. It
                        // polls a few times a second; the in-process pollers keep the race tight.
                        // Once the agent's database is set up (the race) they poll as seldom as the
                        // binary: the rest of the start (its models) took most of the 11 s of CPU.
                        usleep(poller == 0 || settled.isSet ? UInt32.random(in: 150_000...350_000) : UInt32.random(in: 0...50_000))
                    }
                    group.leave()
                }.start()
            }
            try await Task.sleep(for: .microseconds(UInt64.random(in: 0...100_000)))
            try await agent.start(waitForReady: false)
            // The agent opens (makes, migrates) its database milliseconds after it takes its lock
            // (the file appears; see AgentStopTests): the pollers keep the race tight from the
            // start until 2 s after that, many times the set-up's time even on a loaded machine.
            let lock = agent.cli.home.appendingPathComponent(".local/share/quarantine/agent.lock").path
            let settling = Task {
                // (Its own wait, not AgentStopTests.appears: that one spins once cancelled.)
                while !Task.isCancelled && access(lock, F_OK) != 0 { try? await Task.sleep(for: .milliseconds(2)) }
                try? await Task.sleep(for: .seconds(2))
                settled.set()
            }
            let ready = await agent.wait(timeout: 60) { agent.logText.contains("file(s) waiting from before") || agent.process?.isRunning != true }
            stop.set()
            settling.cancel()
            await offPool { group.wait() }
            #expect(ready && agent.process?.isRunning == true, "round \(round): the agent did not start; log:\n\(agent.logText.suffix(2000))")
            #expect(!agent.logText.contains("cannot start"), "round \(round): \(agent.logText.suffix(2000))")
            pollFailures += failures.all.map { "round \(round): \($0)" }
            await agent.stop()
        }
        #expect(pollFailures.isEmpty, "\(pollFailures.count) polls failed: \(pollFailures.prefix(3))")
    }
}

/// Failures noted by several threads.
final class FailureList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ item: String) { lock.withLock { items.append(item) } }
    var all: [String] { lock.withLock { items } }
    private var flag = false
    /// A stop flag besides.
    var isSet: Bool { lock.withLock { flag } }
    func set() { lock.withLock { flag = true } }
}
