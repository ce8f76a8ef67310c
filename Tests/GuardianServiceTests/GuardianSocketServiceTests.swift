import Foundation
import GuardianAPI
import Locking
import Logging
import QuarantineStore
import ServiceLifecycle
import ServiceSupport
import TestSupport
import Testing
@testable import GuardianService

/// The guardian socket as a service of the guardian service's group (issue 29): it serves
/// from the group's start, and a graceful stop of the group ends its accept loop and every
/// handler thread, closes the connections it held and removes the socket.
@Suite("Guardian socket service")
struct GuardianSocketServiceTests {
    @Test("a graceful stop of the group ends the accept loop, the handlers and the connections, and removes the socket")
    func gracefulStop() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guardian-socket-service-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("home/Downloads"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("state"), withIntermediateDirectories: true)
        let configuration = folder.appendingPathComponent("kid.toml")
        try Data("mode = \"child\"\n".utf8).write(to: configuration)
        let vault = try Vault(root: folder.appendingPathComponent("state/vault").path,
                              store: AuditStore(path: folder.appendingPathComponent("state/audit.sqlite3").path))
        let socketPath = folder.appendingPathComponent("kid.sock").path
        let paths = GuardianPaths(user: "kid")
        let logger = Logger(label: "guardian-socket-service-test")
        // Every caller acts as guardian here (the roles are GuardianServerTests' subject).
        let server = try GuardianServer(paths: paths, childUID: 42_420, home: folder.appendingPathComponent("home").path, vault: vault,
                                        configurationPath: configuration.path, logger: logger, socketPath: socketPath,
                                        guardianCheck: { _ in true }, reload: {})
        let threads = 1 + server.limits.handlers
        let group = ServiceGroup(configuration: .init(services: [GuardianSocketService(server: server)], logger: logger))
        let ended = Locked(false)
        let running = Task {
            try await group.run()
            ended.withLock { $0 = true }
        }
        #expect(await Self.waitUntil(60) { server.state.withLock { $0.running } == threads }, "the server's threads did not start")

        // Served through the socket while the group runs; the connection stays open, idle.
        let client = try GuardianClient(paths: paths, socketPath: socketPath)
        let (answer, _) = try await offPool { try client.send(GuardianWire.List()) }
        #expect(answer.refusal == nil && answer.answer != nil)
        // A second connection that never sends anything.
        let quiet = try LocalSocket.connect(to: socketPath)
        try quiet.setTimeouts(receive: .seconds(10), send: .seconds(1))

        await group.triggerGracefulShutdown()
        #expect(await Self.waitUntil(60) { ended.withLock { $0 } }, "the group did not end after a graceful stop")
        try await running.value
        #expect(server.state.withLock { $0.running } == 0, "threads of the server still run")
        #expect(server.state.withLock { $0.stopped })
        // The connections it held were closed: the quiet one reads end of file (not its timeout).
        let started = ContinuousClock.now
        let message = try await offPool { try quiet.receive() }
        #expect(message == nil && ContinuousClock.now - started < .seconds(5), "the idle connection was not closed")
        quiet.close()
        #expect(access(socketPath, F_OK) != 0, "the socket is still there")
        #expect(throws: (any Error).self) { _ = try LocalSocket.connect(to: socketPath) }
    }

    /// Polls `condition` every 20 ms for up to `seconds`.
    static func waitUntil(_ seconds: Double, _ condition: @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}
