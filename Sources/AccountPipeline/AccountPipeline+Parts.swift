import FolderWatch
import ServiceLifecycle
import UnixSignals

extension AccountPipeline {
    /// The agent's parts, in the order its group starts them (and shuts them down, last first).
    /// The ``Dispatcher`` comes last, so it is the first asked to stop and the others run until it
    /// has ended; should it end by itself, the group shuts down. The others may end early (no
    /// notification server, no systemd watchdog) without ending the agent.
    static func parts(of agent: AccountPipeline, watcher: FolderWatcher, hangups: UnixSignalsSequence) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        let parts: [any Service] = [
            FolderIntake(agent: agent, watcher: watcher),
            Reloader(agent: agent, hangups: hangups),
            StatusPublisher(agent: agent),
            DatabaseWatch(agent: agent),
            NotificationService(agent: agent),
            AnalysisUpkeep(agent: agent),
        ] + agent.options.companions.map { $0(agent) }
        return parts.map { .init(service: $0, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore) }
            + [.init(service: Dispatcher(agent: agent), successTerminationBehavior: .gracefullyShutdownGroup,
                     failureTerminationBehavior: .gracefullyShutdownGroup)]
    }
}
