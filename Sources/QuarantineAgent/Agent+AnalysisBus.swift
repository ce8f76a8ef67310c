import Foundation
import QuarantineCore
import ServiceSupport

extension QuarantineAgent {
    /// Offers analysis to the applications of this account on the session bus
    /// (``AnalysisBus``), when there is one (`DBUS_SESSION_BUS_ADDRESS`): a guardian service,
    /// which has no session, does not. Failing to (another agent owns the name, no bus) is
    /// logged; the agent works on without it.
    func startAnalysisBus(_ settings: Settings) async {
        guard options.actor == "agent", let raw = options.environment["DBUS_SESSION_BUS_ADDRESS"], !raw.isEmpty else { return }
        // autolaunch: would start dbus-launch (and wait for X11): never from an agent.
        let address = raw.split(separator: ";").filter { !$0.hasPrefix("autolaunch:") }.joined(separator: ";")
        guard !address.isEmpty else { return }
        let logger = self.logger
        do {
            let bus = try await onOwnThread("analysis-bus-start") { [weak self] in
                try AnalysisBus.start(address: address, settings: settings,
                                      engine: { [weak self] in self?.state.withLock { $0.engine } },
                                      problem: { [weak self] in self?.state.withLock { $0.problem } }, logger: logger)
            }
            state.withLock { $0.analysisBus = bus }
            logger.notice("applications can ask for analysis on the session bus: \(AnalysisBus.busName) (policy \(bus.policy.rawValue))")
        } catch {
            logger.warning("no analysis for applications on the session bus: \(error)")
        }
    }

    /// Leaves the bus: its jobs are cancelled, its streams ended.
    func stopAnalysisBus() async {
        guard let bus = state.withLock({ s -> AnalysisBus? in defer { s.analysisBus = nil }; return s.analysisBus }) else { return }
        _ = try? await onOwnThread("analysis-bus-stop") { bus.stop() }
    }
}
