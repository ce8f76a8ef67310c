import AnalysisWorker
import Foundation
import GuardianAPI
import Logging
@testable import AccountPipeline
import ServiceLifecycle
import Testing
@testable import GuardianService

/// A protected account's agent as the guardian service runs it, in this test process, on a
/// fresh folder: the account (a free uid, no real account) with its home and Downloads (its
/// own), the service's state folder, a child-mode configuration, and no analysis worker launcher
/// (a socket that is not there). Made in 0755 folders so that the account reaches its home.
struct GuardedAgentFixture {
    let uid: uid_t
    let folder: URL
    var home: String { folder.appendingPathComponent("home").path }
    var downloads: String { home + "/Downloads" }
    var state: String { folder.appendingPathComponent("state").path }
    var configuration: String { folder.appendingPathComponent("kid.toml").path }
    /// The environment the service gives the account's agent.
    let environment: [String: String]

    /// A fixture in a folder named after `name`; remove it with ``cleanUp()``.
    init(_ name: String) throws {
        uid = try #require(RuntimeFolderTests.freeUID(), "no free uid in 42470..42489")
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-\(name)-\(UUID().uuidString)")
        let home = folder.appendingPathComponent("home").path, state = folder.appendingPathComponent("state").path
        try FileManager.default.createDirectory(atPath: home + "/Downloads", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        chmod(folder.path, 0o755)
        chown(home, uid, uid)
        chown(home + "/Downloads", uid, uid)
        try Data("mode = \"child\"\n".utf8).write(to: URL(fileURLWithPath: folder.appendingPathComponent("kid.toml").path))
        var environment = GuardianService.environment(paths: GuardianPaths(user: "kid"), home: home,
                                                      inherited: [SandboxedAnalysis.Options.launcherVariable: folder.appendingPathComponent("none.sock").path,
                                                                  "PATH": "/usr/bin:/bin"],
                                                      accountUID: uid)
        environment["QUARANTINE_STATE_DIR"] = state
        environment["XDG_CONFIG_HOME"] = state + "/config"
        environment["XDG_RUNTIME_DIR"] = state + "/run"
        self.environment = environment
    }

    func cleanUp() { try? FileManager.default.removeItem(at: folder) }

    /// The agent's options as the guardian service makes them, with `mounts` as its mount table.
    func options(mounts: MountTable?) -> AccountPipeline.Options {
        GuardianService.agentOptions(user: "kid", uid: uid, home: home, environment: environment, configuration: configuration, mounts: mounts)
    }

    /// Runs an agent with `options` until `body` returns, then stops it as SIGTERM would.
    /// (Callers take their turn with ``FolderWatcherTurn`` first: one watcher per process.)
    func withAgent(_ options: AccountPipeline.Options, _ body: (AccountPipeline) async throws -> Void) async throws {
        let logger = Logger(label: "guarded-agent-test")
        let agent = try AccountPipeline(options: options, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [agent], logger: logger))
        let running = Task { try await group.run() }
        defer { Task { await group.triggerGracefulShutdown() } }
        // Under a loaded CI run the agent's start took 3 s: waited for, never a fixed time.
        #expect(await RuntimeFolderTests.waitUntil(30) { agent.state.withLock { $0.state == "running" } }, "the agent did not start")
        try await body(agent)
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
