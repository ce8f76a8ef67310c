import Locking

/// The agent's status for `quarantine status`, published after changes at most every
/// ``AccountPipeline/statusInterval`` (``AccountPipeline/publisher()``), and systemd's watchdog
/// ping (``AccountPipeline/watchdog()``).
///
/// Owns its state: the requests for an update, and whether the last publication failed (so that
/// a failure is told once, and its end once).
struct StatusPublisher: AgentService {
    let agent: AccountPipeline

    /// What the publisher keeps between updates; made with the agent, before its group runs.
    final class State: Sendable {
        let requests: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        /// The last publication failed.
        let failing = Locked(false)
        /// The backlog's depth as last read (for a status written without reading the database).
        let lastDepth = Locked(-1)

        init() {
            (requests, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent] in await agent.publisher() }, { [agent] in await agent.watchdog() }]
    }
}
