import Foundation
@testable import AnalysisWorker
import GuardianAPI
@testable import GuardianService
import SensitivityAnalysis
import ServiceSupport
import Testing
import TestSupport

/// A guardian service whose worker launcher is not running starts no analysis worker of its own:
/// its user (`quarantine`) owns every account's database, PIN hash and vault, so a worker as that
/// user would put them all within reach of a decoder exploit.
@Suite("Guardian analysis without its worker launcher", .ownThread)
struct LauncherFailClosedTests {
    /// The worker options a guardian service for uid 42420 makes, with the launcher at `launcher`;
    /// the worker program is /bin/true (one started anyway would end at once, with another error).
    static func options(launcher: String) -> SandboxedAnalysis.Options {
        let environment = GuardianService.environment(paths: GuardianPaths(user: "kid"), home: "/nonexistent",
                                                      inherited: [SandboxedAnalysis.Options.launcherVariable: launcher, "PATH": "/usr/bin:/bin"],
                                                      accountUID: 42_420)
        var options = SandboxedAnalysis.Options(executable: "/bin/true", arguments: [], environment: environment,
                                                configuration: SensitivityAnalyzer.Configuration(), deadline: .seconds(5))
        options.workerUser = nil
        return options
    }

    @Test("no launcher listening (no socket, a file, a link to a socket, a dead launcher's socket): no worker starts here; the problem says the launcher is not running")
    func noWorkerWithoutTheLauncher() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-launcher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("file.sock").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let real = folder.appendingPathComponent("real.sock").path
        let listener = try LocalSocket.listen(at: real, mode: 0o600, backlog: 1)
        defer { listener.close() }
        let link = folder.appendingPathComponent("link.sock").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        for launcher in [folder.appendingPathComponent("missing.sock").path, file, link] {
            let options = Self.options(launcher: launcher)
            #expect(options.account == 42_420 && options.launcher == launcher)
            #expect(SandboxedAnalysis.launcherIsMissing(options))
            do {
                _ = try SandboxedAnalysis(options: options)
                Issue.record("analysis started with no launcher at \(launcher)")
            } catch {
                #expect(error.description.hasPrefix("the worker launcher is not running (nothing listens on \(launcher))"), "\(error)")
            }
        }
        // A launcher that died leaves its socket file behind, with nobody listening: not running
        // either; a launcher started again makes a new socket (the service's retry watches for it).
        let stale = folder.appendingPathComponent("stale.sock").path
        let dead = try LocalSocket.listen(at: stale, mode: 0o600, backlog: 1)
        dead.close()
        let before = try #require(SandboxedAnalysis.launcherSocket(Self.options(launcher: stale)))
        do {
            _ = try SandboxedAnalysis(options: Self.options(launcher: stale))
            Issue.record("analysis started with a dead launcher's socket")
        } catch {
            #expect(error.description.hasPrefix("the worker launcher is not running (nothing listens on \(stale))"), "\(error)")
        }
        unlink(stale)
        Thread.sleep(forTimeInterval: 0.02)   // past the file system's coarse clock tick (a restart takes far longer)
        let again = try LocalSocket.listen(at: stale, mode: 0o600, backlog: 1)
        defer { again.close() }
        #expect(SandboxedAnalysis.launcherSocket(Self.options(launcher: stale)).map { $0 != before } == true)
        // With the socket there, the service asks the launcher (here: it does not answer the
        // way a launcher does), never starts the worker itself.
        #expect(!SandboxedAnalysis.launcherIsMissing(Self.options(launcher: real)))
        // A person's own agent (no protected account) needs no launcher.
        var own = Self.options(launcher: real)
        own.account = nil
        #expect(!SandboxedAnalysis.launcherIsMissing(own))
    }

    @Test("a launcher that stops while a worker starts (the worker killed, the socket left behind): the problem names the launcher, not the worker's end")
    func launcherStoppingDuringAStart() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-launcher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("launcher.sock").path
        let listener = try LocalSocket.listen(at: path, mode: 0o600, backlog: 1)
        // A stand-in launcher: it starts a "worker" (one end of a pair, and an error pipe), then
        // stops as the real one does (the listener shut down and closed, its file left behind,
        // the worker killed: its end of the pair closes before any hello), and answers the
        // service's kill with how the worker ended.
        let served = DispatchSemaphore(value: 0)
        let launcher = Thread {
            defer { served.signal() }
            guard let connection = try? listener.accept(), (try? connection.receive()) != nil,
                  let (service, worker) = try? LocalSocket.pair() else { return }
            var errors: [Int32] = [-1, -1]
            guard pipe(&errors) == 0 else { return }
            try? connection.send(LauncherMessage.encode(.started, LauncherMessage.Started(pid: 999_999)), descriptors: [service.descriptor, errors[0]])
            service.close()
            close(errors[0])
            _ = shutdown(listener.descriptor, Int32(SHUT_RDWR))
            listener.close()
            worker.close()
            close(errors[1])
            if let kill = try? connection.receive(), kill.bytes == [LauncherMessage.Kind.kill.rawValue] {
                try? connection.send(LauncherMessage.encode(.ended, LauncherMessage.Ended(how: "killed at the guardian's request (killed by signal 9)")))
            }
            connection.close()
        }
        launcher.start()
        defer { served.wait() }
        #expect(!SandboxedAnalysis.launcherIsMissing(Self.options(launcher: path)))
        do {
            _ = try SandboxedAnalysis(options: Self.options(launcher: path))
            Issue.record("analysis started with a launcher that stopped")
        } catch {
            #expect(error.description.hasPrefix("the worker launcher is not running (nothing listens on \(path))"), "\(error)")
        }
        // The socket file is still there, a socket, with nobody listening: not running.
        #expect(SandboxedAnalysis.isSocket(path))
        #expect(!SandboxedAnalysis.launcherListens(path))
    }
}
