import Foundation
import Logging
import MediaDecoding
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceLifecycle
import Testing
import TestSupport
import Locking
@testable import AccountPipeline
@testable import QuarantineAgent

/// The whole agent in the test process (issue 29): its group of parts (intake, dispatcher, status
/// publisher, reloader, database watch, notifications) on a real home, watcher, vault and
/// database; the analysis is a stand-in engine (named so) where the point is the agent's wiring,
/// and the real models, in process, beside it.
@Suite("Agent in process", .serialized)
struct AgentInProcessTests {
    /// A stand-in for the analysis engine: a file whose name contains "card" is sensitive, any
    /// other picture is clean; counts its calls.
    final class StandInEngine: AnalysisEngine {
        let calls = Locked(0)
        var workers: Int { 1 }
        var problem: String? { nil }

        func runBlocking<T: Sendable>(video: Bool, _ work: @escaping @Sendable () throws -> T) async throws -> T {
            try await offPool("stand-in-engine", work)
        }

        func report(forFileAt path: String, settings: Settings, progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
            calls.withLock { $0 += 1 }
            let sensitive = (path as NSString).lastPathComponent.contains("card")
            let identity = (try? MediaFile(path: path).identity) ?? FileIdentity(device: 0, inode: 0, size: 0, modificationNanoseconds: 0)
            let analysis = SensitivityAnalysis(path: path, kind: .image, type: .png, isSensitive: sensitive, detections: [], nsfwScore: sensitive ? 0.9 : 0.1,
                                               reasons: sensitive ? ["open_nsfw 0.90"] : [], mode: settings.mode, width: 320, height: 240,
                                               identity: identity, elapsedMilliseconds: 1)
            return FileReport(path: path, kind: .image, type: .png, analysis: analysis, failure: nil, elapsedMilliseconds: 1)
        }

        func previewFrame(forFileAt path: String) async -> RGBImage? { nil }
    }

    /// A home with Downloads, its data and configuration folders, and an adult-mode configuration.
    struct Home {
        let folder: URL
        var downloads: String { folder.appendingPathComponent("Downloads").path }
        var environment: [String: String] {
            ["HOME": folder.path, "XDG_DATA_HOME": folder.appendingPathComponent("data").path,
             "XDG_CONFIG_HOME": folder.appendingPathComponent("config").path, "PATH": "/usr/bin:/bin"]
        }

        init(configuration: String) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-agent-\(UUID().uuidString)")
            try FileManager.default.createDirectory(atPath: folder.appendingPathComponent("Downloads").path, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: folder.appendingPathComponent("config/quarantine").path, withIntermediateDirectories: true)
            try Data(configuration.utf8).write(to: folder.appendingPathComponent("config/quarantine/config.toml"))
        }

        func cleanUp() { try? FileManager.default.removeItem(at: folder) }
    }

    static let configuration = """
        mode = "adult"
        [watch]
        incoming = ["~/Downloads"]
        [agent]
        notifications = false
        settle_ms = 100

        """

    static func waitUntil(_ seconds: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// Runs an agent for `home` (judging through `engine`, or the models in process when nil,
    /// with `configure`'s changes to its options), gives it `body`, then stops it as SIGTERM
    /// would and checks every part ended.
    static func withAgent(_ home: Home, engine: (any AnalysisEngine)?, configure: (inout QuarantineAgent.Options) -> Void = { _ in },
                          _ body: @Sendable (QuarantineAgent) async throws -> Void) async throws {
        try await FolderWatcherTurn.run {
            var options = QuarantineAgent.Options(environment: home.environment)
            if let engine { options.engine = { _ in engine } }
            configure(&options)
            let logger = Logger(label: "agent-in-process-test")
            let agent = try QuarantineAgent(options: options, logger: logger, hangups: nil)
            let group = ServiceGroup(configuration: .init(services: [agent], logger: logger))
            let running = Task { try await group.run() }
            do {
                #expect(await waitUntil(60) { agent.pipeline.state.withLock { $0.state == "running" } }, "the agent did not start")
                try await body(agent)
            } catch {
                await group.triggerGracefulShutdown()
                _ = try? await running.value
                throw error
            }
            // A graceful shutdown (SIGTERM): the dispatcher ends, then the other parts, then run().
            await group.triggerGracefulShutdown()
            let stopped = Task { try await running.value }
            let ended = await waitUntil(60) { agent.pipeline.state.withLock { $0.state == "stopped" } }
            #expect(ended, "the agent did not stop")
            try await stopped.value
        }
    }

    @Test("a stand-in engine: the card arriving in Downloads is moved into the vault, the plain picture stays; the status counts both; SIGTERM stops every part")
    func standInEngine() async throws {
        let home = try Home(configuration: Self.configuration); defer { home.cleanUp() }
        let engine = StandInEngine()
        try await Self.withAgent(home, engine: engine) { agent in
            try Data(try IntakeTests.png(card: false)).write(to: URL(fileURLWithPath: home.downloads + "/card.png"))
            try Data(try IntakeTests.png(card: false, width: 200)).write(to: URL(fileURLWithPath: home.downloads + "/plain.png"))
            let held = await Self.waitUntil(40) { !FileManager.default.fileExists(atPath: home.downloads + "/card.png") }
            #expect(held, "the card is still in Downloads")
            #expect(await Self.waitUntil(15) { ((try? agent.pipeline.vault.store.items()) ?? []).count == 1 })
            let items = try agent.pipeline.vault.store.items()
            #expect(items.map { ($0.originalPath as NSString).lastPathComponent } == ["card.png"])
            #expect(await Self.waitUntil(15) { engine.calls.withLock { $0 } == 2 }, "the stand-in judged \(engine.calls.withLock { $0 }) file(s)")
            #expect(FileManager.default.fileExists(atPath: home.downloads + "/plain.png"))
            // The status publisher wrote what the agent counted.
            #expect(await Self.waitUntil(15) { ((try? agent.pipeline.vault.store.agentStatus())??.counters["quarantined"]) == 1 })
        }
        #expect(try !FileManager.default.fileExists(atPath: home.downloads + "/card.png"))
    }

    @Test("the real models in process (agent.sandbox = false): the test card arriving in Downloads is moved into the vault, a plain picture stays")
    func realEngine() async throws {
        let home = try Home(configuration: Self.configuration + "sandbox = false\n"); defer { home.cleanUp() }
        try await Self.withAgent(home, engine: nil) { agent in
            try Data(try IntakeTests.png(card: true)).write(to: URL(fileURLWithPath: home.downloads + "/picture.png"))
            try Data(try IntakeTests.png(card: false, width: 640, height: 480)).write(to: URL(fileURLWithPath: home.downloads + "/plain.png"))
            let held = await Self.waitUntil(60) { !FileManager.default.fileExists(atPath: home.downloads + "/picture.png") }
            #expect(held, "the test card is still in Downloads")
            #expect(await Self.waitUntil(15) { ((try? agent.pipeline.vault.store.items()) ?? []).contains { $0.reasons.contains("TEST_CARD") } })
            #expect(await Self.waitUntil(30) { ((try? agent.pipeline.vault.store.agentStatus())??.counters["clean"]) == 1 }, "the plain picture was not judged clean")
            #expect(FileManager.default.fileExists(atPath: home.downloads + "/plain.png"))
        }
    }
}
