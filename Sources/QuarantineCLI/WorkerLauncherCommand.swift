import AnalysisWorker
import ArgumentParser
import Foundation
import GuardianAPI
import ServiceSupport
import UnixSignals
import QuarantineBase

/// `quarantine worker-launcher`: starts the guardian services' analysis workers as each protected
/// account's own worker user, so that no guardian service needs CAP_SETUID. Run by its system
/// unit (quarantine-worker-launcher.service) as the user `quarantine` with CAP_SETUID and
/// CAP_SETGID; not for people.
struct WorkerLauncherCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker-launcher",
        abstract: "Starts the guardian services' analysis workers as their own users (run by its system unit, not by hand).",
        shouldDisplay: false)

    @Option(help: ArgumentHelp("The socket the guardian services ask on.", valueName: "path"))
    var socket = LauncherService.defaultSocketPath

    @Option(help: ArgumentHelp("The models and ONNX Runtime, passed to each worker as a descriptor (default: $QUARANTINE_GUARDIAN_RUNTIME, else /var/lib/quarantine/runtime).", valueName: "folder"))
    var runtime: String?

    @Option(help: ArgumentHelp("Where the protected accounts' configurations are.", valueName: "folder"))
    var configurationFolder = Paths.systemConfigurationFolder

    @Option(help: ArgumentHelp("The most workers running for one protected account.", valueName: "n"))
    var maxWorkersPerAccount = 6

    @Option(help: ArgumentHelp("The most workers running in all.", valueName: "n"))
    var maxWorkers = 24

    func run() async throws {
        func fail(_ words: String, _ status: Int32) -> ExitCode {
            FileHandle.standardError.write(Data("quarantine worker-launcher: \(words)\n".utf8))
            return ExitCode(status)
        }
        guard let peer = LauncherService.user(named: GuardianPaths.serviceUser) else {
            throw fail("there is no user \(GuardianPaths.serviceUser) (systemd-sysusers makes it; 'quarantine guardian enable' too)", 78)
        }
        guard SandboxedAnalysis.holdsSetIdentityCapabilities() else {
            throw fail("it lacks CAP_SETUID and CAP_SETGID (its unit gives them): it could not start any worker as its own user", 78)
        }
        guard maxWorkers > 0, maxWorkersPerAccount > 0 else { throw ValidationError("the worker caps must be at least 1") }
        var options = LauncherService.Options(peerUID: peer.uid, runtimeFolder: runtime ?? ProcessInfo.processInfo.environment["QUARANTINE_GUARDIAN_RUNTIME"] ?? GuardianPaths.runtime)
        options.socketPath = socket
        options.configurationFolder = configurationFolder
        options.maxWorkers = maxWorkers
        options.maxWorkersPerAccount = maxWorkersPerAccount
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let service: LauncherService
        do { service = try LauncherService(options: options) } catch { throw fail("\(error)", 1) }
        service.sweepLeftoverWorkers()
        service.start()
        options.log("worker launcher: listening on \(socket) for uid \(peer.uid) (\(GuardianPaths.serviceUser)); at most \(maxWorkersPerAccount) workers per account, \(maxWorkers) in all")
        _ = SystemdNotifier()?.notify("READY=1")
        for await _ in signals { break }
        _ = SystemdNotifier()?.notify("STOPPING=1")
        service.stop()
        service.killAll()
        service.waitForWorkers(timeout: .seconds(2))
        options.log("worker launcher: stopped")
    }
}
