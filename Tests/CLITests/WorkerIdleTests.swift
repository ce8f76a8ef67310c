import Foundation
import Testing

/// The analysis worker ends when it has had nothing to judge for `agent.worker_idle_seconds`,
/// and the next file starts it again (issue 27, "What it costs while nothing happens").
@Suite("Worker idle exit")
struct WorkerIdleTests {
    @Test("a person's agent starts no worker before the first file (status: not started yet); the first card starts it and is hidden; with worker_idle_seconds = 2 the worker ends about 2 s after; status says idle, not broken; a card arriving then is hidden by a worker started again, and child mode never holds a file for want of a worker meanwhile")
    func idleWorkerEndsAndComesBack() async throws {
        let agent = try AgentHarness(config: nil); defer { agent.cleanUp() }
        // Child mode: there, a service that cannot analyse holds what waits ("nothing can analyse
        // it now"); an idle worker, or one not started yet, must not count as that.
        try "mode = \"child\"\n[watch]\nincoming = [\"\(agent.downloads.path)\"]\n[agent]\nworker_idle_seconds = 2\n"
            .write(to: agent.cli.home.appendingPathComponent(".config/quarantine/config.toml"), atomically: true, encoding: .utf8)
        try await agent.start()
        // Ready, and no worker: the models are loaded for the first file, not at start.
        #expect(agent.workerProcesses().isEmpty, "a worker runs before any file; log:\n\(agent.logText)")
        let waiting = try #require((try await agent.status()["last_status"] as? [String: Any])?["analysis"] as? String)
        #expect(waiting.hasPrefix("worker not started yet (the first file starts it"), "\(waiting)")
        #expect(!agent.logText.contains("analysis worker confined"), "log:\n\(agent.logText)")
        #expect((try await agent.status()["last_status"] as? [String: Any])?["problem"] == nil)

        // The first card starts one, which says how it is confined, and is hidden.
        let opening = agent.downloads.appendingPathComponent("first.jpg")
        try await agent.writeCard(opening)
        #expect(await agent.wait(timeout: 20) { try await agent.items().count == 1 }, "log:\n\(agent.logText)")
        #expect(!FileManager.default.fileExists(atPath: opening.path))
        #expect(agent.logText.contains("analysis worker started in ") && agent.logText.contains(" for the first file (pid "), "log:\n\(agent.logText)")
        #expect(agent.logText.contains("analysis worker confined: "), "log:\n\(agent.logText)")
        let first = try #require(agent.workerProcesses().first, "a worker runs right after the first card; log:\n\(agent.logText)")
        let born = try #require(Self.startedSecondsSinceBoot(first))
        let judged = Self.secondsSinceBoot()

        // Gone about 2 s after the card with nothing more to judge.
        #expect(await agent.wait(timeout: 6) { kill(first, 0) != 0 && errno == ESRCH }, "worker \(first) still runs; log:\n\(agent.logText)")
        let (lived, after) = (Self.secondsSinceBoot() - born, Self.secondsSinceBoot() - judged)
        #expect(lived >= 2 && after < 6, "the worker lived \(lived) s, \(after) s after its card: not its start, the card and the 2 s idle time")
        #expect(agent.workerProcesses().isEmpty)

        // The status says so, and no problem.
        #expect(await agent.wait(timeout: 5) { ((try await agent.status()["last_status"] as? [String: Any])?["analysis"] as? String)?.hasPrefix("worker idle") == true },
                "log:\n\(agent.logText)")
        let last = try #require(try await agent.status()["last_status"] as? [String: Any])
        #expect(last["problem"] == nil, "status reports a problem while the worker is idle: \(last)")
        let text = try await agent.run(["status"])
        #expect(text.stdout.contains("analysis: worker idle since "), "\(text.stdout)")
        #expect(!text.stdout.contains("problem:"), "\(text.stdout)")

        // A card arriving now: a worker starts again and it is hidden.
        let card = agent.downloads.appendingPathComponent("card.jpg")
        try await agent.writeCard(card)
        #expect(await agent.wait(timeout: 20) { try await agent.items().count == 2 }, "log:\n\(agent.logText)")
        #expect(!FileManager.default.fileExists(atPath: card.path))
        #expect(agent.logText.contains("analysis worker started again in "), "log:\n\(agent.logText)")
        #expect(!agent.logText.contains("nothing can analyse it now"), "held as if nothing could analyse; log:\n\(agent.logText)")
        #expect((try await agent.counters()["held_waiting"] ?? 0) == 0)
        // Another process than the first: named by the log (on a loaded machine the new worker
        // may have ended idle again, 2 s after this card, before it could be looked for).
        let line = try #require(agent.logText.split(separator: "\n").last { $0.contains("analysis worker started again") }, "log:\n\(agent.logText)")
        let again = line.split(separator: "(pid ").last.map { $0.prefix { $0.isNumber } }.flatMap { Int32($0) }
        #expect(again != nil && again != first, "\(line)")
        #expect(await agent.stop().status == 0)
    }
}

extension WorkerIdleTests {
    /// When process `pid` started, in seconds since boot (/proc/PID/stat's starttime).
    static func startedSecondsSinceBoot(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let fields = text.split(separator: ")").last?.split(separator: " "), fields.count > 19,
              let ticks = Double(fields[19]) else { return nil }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func secondsSinceBoot() -> Double {
        Double(((try? String(contentsOfFile: "/proc/uptime", encoding: .utf8)) ?? "0").split(separator: " ")[0]) ?? 0
    }
}

extension AgentHarness {
    /// The analysis workers among the agent's descendants (it may run under a wrapper).
    func workerProcesses() -> [Int32] {
        guard let root = process?.processIdentifier else { return [] }
        var found: [Int32] = [], queue = [root]
        while let next = queue.popLast() {
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(next)/task")) ?? [] {
                let children = ((try? String(contentsOfFile: "/proc/\(next)/task/\(task)/children", encoding: .utf8)) ?? "")
                    .split(separator: " ").compactMap { Int32($0) }
                queue += children
                found += children.filter { ((try? String(contentsOfFile: "/proc/\($0)/cmdline", encoding: .utf8)) ?? "").contains("analysis-worker") }
            }
        }
        return found
    }
}
