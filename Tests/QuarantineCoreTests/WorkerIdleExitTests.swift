import Foundation
import MediaDecoding
import SensitivityAnalysis
import Testing
@testable import AnalysisWorker

/// The primary worker ends after ``SandboxedAnalysis/Options/idleExit`` with nothing to judge,
/// and the next file starts one again (issue 27, "What it costs while nothing happens").
@Suite("Worker idle exit, in process", .serialized)
struct WorkerIdleExitTests {
    func analysis(idleExit: Duration?) throws -> SandboxedAnalysis {
        var configuration = SensitivityAnalyzer.Configuration(workers: 2)
        configuration.lowPriority = false
        return try SandboxedAnalysis(options: .init(executable: SandboxedAnalysisTests.binary, environment: ProcessInfo.processInfo.environment,
                                                    configuration: configuration, idleExit: idleExit))
    }

    @Test("idle: the worker's process ends, activity says idle (no problem); files arriving just as it ends, or after, are all judged, never lost to a dying worker")
    func endsAndComesBack() async throws {
        let place = try SandboxedAnalysisTests.Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(idleExit: .milliseconds(400)); defer { sandboxed.stop() }
        let first = try #require(sandboxed.workerProcesses.first)
        let deadline = ContinuousClock.now + .seconds(5)
        while kill(first, 0) == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(kill(first, 0) != 0, "the idle worker \(first) still runs")
        guard case .idle = sandboxed.activity else { Issue.record("activity \(sandboxed.activity), not idle"); return }
        #expect(sandboxed.problem == nil)

        let card = try place.write("card.png", try SandboxedAnalysisTests.card())
        // Around the idle time after the last file: some arrive as the worker is being ended.
        for pause in [0, 380, 400, 420, 800] {
            try await Task.sleep(for: .milliseconds(pause))
            let before = sandboxed.starts
            let report = await sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
            // One start at most: a worker ended under a file would cost a solo retry, and another.
            #expect(sandboxed.starts - before <= 1, "after \(pause) ms: \(sandboxed.starts - before) workers started for one file")
            #expect(report.failure == nil, "after \(pause) ms: \(String(describing: report.failure))")
            #expect(report.analysis?.isSensitive == true)
        }
        #expect(sandboxed.lastStartDuration != nil)
    }

    @Test("a file on its way to the worker (between taking the worker and handing it the file) keeps it from its idle exit, however long idle it looks; once done, the idle time ends it")
    func fileOnItsWayKeepsTheWorker() async throws {
        let sandboxed = try analysis(idleExit: .seconds(3600)); defer { sandboxed.stop() }
        let worker = try #require(sandboxed.workerProcesses.first)
        let later = ContinuousClock.now + .seconds(7200)
        sandboxed.beginUse()
        sandboxed.endIdlePrimary(now: later)
        #expect(sandboxed.activity == .running([worker]), "ended under a file on its way")
        sandboxed.endUse()
        sandboxed.endIdlePrimary(now: later)
        let deadline = ContinuousClock.now + .seconds(5)
        while kill(worker, 0) == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(kill(worker, 0) != 0)
        guard case .idle = sandboxed.activity else { Issue.record("activity \(sandboxed.activity), not idle"); return }
    }

    @Test("as root, the guardian's side through the worker launcher: the launched worker ends idle (the launcher sees it go), and the next file gets a newly launched one", .enabled(if: getuid() == 0, "needs root to make accounts and switch users"))
    func throughTheLauncher() async throws {
        let accounts = try LauncherServiceTests.Accounts(); defer { accounts.remove() }
        let place = try LauncherServiceTests.Place()
        try place.start(runtime: try place.runtime())
        try place.protect(accounts.user)
        let files = try SandboxedAnalysisTests.Place(); defer { files.cleanUp() }
        let card = try files.write("card.png", try SandboxedAnalysisTests.card())
        var environment = ProcessInfo.processInfo.environment
        environment[SandboxedAnalysis.Options.launcherVariable] = place.socket
        environment[SandboxedAnalysis.Options.accountVariable] = "\(accounts.uid)"
        var configuration = SensitivityAnalyzer.Configuration(workers: 2)
        configuration.lowPriority = false
        let sandboxed = try SandboxedAnalysis(options: .init(executable: SandboxedAnalysisTests.binary, environment: environment,
                                                             configuration: configuration, idleExit: .milliseconds(500)))
        defer { sandboxed.stop() }
        let first = try #require(sandboxed.workerProcesses.first)
        #expect(LauncherServiceTests.gone(first, within: .seconds(5)), "the idle launched worker \(first) still runs")
        #expect(place.service?.waitForWorkers(timeout: .seconds(3)) == true, "workers left: \(place.service?.workers ?? [])")
        guard case .idle = sandboxed.activity else { Issue.record("activity \(sandboxed.activity), not idle"); return }

        let flagged = await sandboxed.report(forFileAt: card, policy: .defaults(for: .child), video: VideoOptions())
        #expect(flagged.failure == nil && flagged.isSensitive, "\(flagged.failure?.message ?? "")")
        let again = try #require(sandboxed.workerProcesses.first)
        #expect(again != first)
        #expect(place.service?.workers == [again])
        sandboxed.stop()
        #expect(place.service?.waitForWorkers(timeout: .seconds(5)) == true)
    }

    @Test("no idle time: the worker is kept however long nothing arrives")
    func keptWithoutIdleTime() async throws {
        let sandboxed = try analysis(idleExit: nil); defer { sandboxed.stop() }
        let first = try #require(sandboxed.workerProcesses.first)
        try await Task.sleep(for: .milliseconds(800))
        #expect(kill(first, 0) == 0)
        #expect(sandboxed.activity == .running([first]))
    }
}
