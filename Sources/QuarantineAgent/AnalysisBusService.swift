import QuarantineBase
import AccountPipeline
import Foundation
import Logging
import QuarantineCore
import ServiceLifecycle
import ServiceSupport

/// Offers analysis to the applications of this account on the session bus (``AnalysisBus``), as
/// a service of the agent's group beside the pipeline's own parts: it joins the bus when the group
/// starts, follows each reload's settings, and leaves the bus (its jobs cancelled, its streams
/// ended) at the group's graceful shutdown.
///
/// Only where there is a session bus (`DBUS_SESSION_BUS_ADDRESS`): a guardian service, which has
/// no session, never runs one. Failing to join (another agent owns the name, no bus) is logged;
/// the agent works on without it.
struct AnalysisBusService: Service {
    let pipeline: AccountPipeline

    func run() async {
        guard let bus = await start() else { return }
        pipeline.observeSettings { bus.update($0) }
        // Until the group shuts down gracefully (or is cancelled): either way the bus is left.
        try? await gracefulShutdown()
        _ = try? await onOwnThread("analysis-bus-stop") { bus.stop() }
    }

    /// Joins the session bus with the settings in force; nil without a bus, or on failure.
    func start() async -> AnalysisBus? {
        let options = pipeline.options
        guard options.actor == "agent", let raw = options.environment["DBUS_SESSION_BUS_ADDRESS"], !raw.isEmpty else { return nil }
        // autolaunch: would start dbus-launch (and wait for X11): never from an agent.
        let address = raw.split(separator: ";").filter { !$0.hasPrefix("autolaunch:") }.joined(separator: ";")
        guard !address.isEmpty else { return nil }
        let (logger, settings) = (pipeline.logger, pipeline.settingsInForce)
        do {
            let pipeline = self.pipeline
            let bus = try await onOwnThread("analysis-bus-start") { [weak pipeline] in
                try AnalysisBus.start(address: address, settings: settings,
                                      engine: { [weak pipeline] in pipeline?.engineInForce },
                                      problem: { [weak pipeline] in pipeline?.analysisProblem }, logger: logger)
            }
            logger.notice("applications can ask for analysis on the session bus: \(AnalysisBus.busName) (policy \(bus.policy.rawValue))")
            return bus
        } catch {
            logger.warning("no analysis for applications on the session bus: \(error)")
            return nil
        }
    }
}
