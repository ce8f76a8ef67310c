import ArgumentParser
import Foundation
import Locking
import Logging
import QuarantineAgent
import SensitivityAnalysis
import ServiceSupport
import UnixSignals

/// `quarantine session-forwarder`: the analysis service on the session bus of an account a
/// guardian service protects (``GuardedAnalysisBus``). `quarantine agent` runs it on such an
/// account, so the bus's on-demand start and the user unit need nothing else.
struct SessionForwarderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session-forwarder",
        abstract: "Answer applications on the session bus of an account a guardian service protects.",
        discussion: """
        Owns io.github.quarantine.Analysis1 on the session bus (DBUS_SESSION_BUS_ADDRESS) of an account a \
        guardian service protects, so that the account's applications get its policy: AnalysisPolicy is \
        'descriptive' (or 'simple' if a guardian set the account to adult mode), never 'disabled'; the \
        account's own configuration is not read. AnalyzeImage and AnalyzeVideo are forwarded to the guardian \
        service with the caller's descriptor, which judges the bytes with the account's own confined worker under \
        its policy (the replies are the agent's). BeginStream opens a stream judged by the guardian service the \
        same way, frame by frame, under the policy it decides (at most 2 streams for the account; frames judged \
        one at a time, at most 8 a second, the newest first: the rest are dropped and counted). \
        'quarantine agent' runs this on a protected account. Runs until SIGTERM or Ctrl-C, or until the \
        session bus goes away.

        Examples:
          quarantine session-forwarder
          quarantine session-forwarder --log-level debug

        Exit status: 0 stopped, 1 no session bus or another program owns the name, 2 the account is not \
        protected (run 'quarantine agent').
        """)

    @Option(name: .long, help: ArgumentHelp("Least important log level shown: debug, info, notice, warning, error.", valueName: "level"))
    var logLevel: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        LoggingSetup.bootstrap(.service, requested: logLevel, environment: environment)
        guard let user = ProtectedAccount.current() else {
            printError("quarantine session-forwarder: no guardian service protects this account: 'quarantine agent' serves its applications")
            throw ExitCode(2)
        }
        try await Self.serve(user: user, environment: environment, logger: Logger(label: "quarantine"))
    }

    /// Serves `user`'s session bus until SIGTERM, SIGINT or the bus goes away.
    static func serve(user: String, environment: [String: String], logger: Logger) async throws {
        // autolaunch: would start dbus-launch (and wait for X11): never from a service.
        let address = (environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").split(separator: ";").filter { !$0.hasPrefix("autolaunch:") }.joined(separator: ";")
        guard !address.isEmpty else {
            logger.critical("no session bus (DBUS_SESSION_BUS_ADDRESS): nothing to serve; the guardian service protects \(user)'s files")
            throw ExitCode(1)
        }
        // SIGHUP (the unit's ExecReload, as for the agent): ask the guardian service again.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
        let bus: GuardedAnalysisBus
        do {
            bus = try await Task.detached { try GuardedAnalysisBus.start(address: address, user: user, logger: logger) }.value
        } catch {
            logger.critical("cannot serve applications on the session bus: \(error)")
            throw ExitCode(1)
        }
        logger.notice("\(user) is protected by a guardian service: applications can ask for \(AnalysisBus.busName) on the session bus (policy \(bus.policy.rawValue); pictures and videos are judged by the guardian service)")
        // The user unit (Type=notify, WatchdogSec=) runs 'quarantine agent', which is this here.
        let systemd = SystemdNotifier(environment: environment)
        _ = systemd?.notify("READY=1\nSTATUS=Answering \(user)'s applications for the guardian service")
        var lastPing = ContinuousClock.now
        // Ends at a signal, or when the bus is gone (checked each second).
        let signalled = Locked(false)
        let listener = Task {
            for await signal in signals {
                if signal == .sighup {
                    logger.info("SIGHUP: asking the guardian service for the mode again")
                    bus.refreshNow()
                    continue
                }
                signalled.withLock { $0 = true }
                return
            }
        }
        while bus.isServing && !signalled.withLock({ $0 }) {
            try? await Task.sleep(for: .milliseconds(250))
            if let systemd, let interval = systemd.watchdogPingInterval, ContinuousClock.now - lastPing >= interval {
                _ = systemd.notify("WATCHDOG=1")
                lastPing = .now
            }
        }
        _ = systemd?.notify("STOPPING=1")
        listener.cancel()
        await Task.detached { bus.stop() }.value
        logger.notice("stopped serving applications on the session bus")
    }
}
