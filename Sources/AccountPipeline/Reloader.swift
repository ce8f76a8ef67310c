import UnixSignals

/// Reads the configuration again on SIGHUP and when its file is edited, one request at a time
/// (``QuarantineAgent/handleHangups(_:)``, ``QuarantineAgent/handleReloads()``).
///
/// Owns its state: the queue of reload requests, finished when the agent begins stopping.
struct Reloader: AgentService {
    let agent: QuarantineAgent
    let hangups: UnixSignalsSequence

    /// The queue of reload requests; made with the agent, before its group runs.
    final class State: Sendable {
        let requests: AsyncStream<QuarantineAgent.ReloadTrigger>
        let continuation: AsyncStream<QuarantineAgent.ReloadTrigger>.Continuation

        init() {
            (requests, continuation) = AsyncStream<QuarantineAgent.ReloadTrigger>.makeStream(bufferingPolicy: .unbounded)
        }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent, hangups] in await agent.handleHangups(hangups) }, { [agent] in await agent.handleReloads() }]
    }
}
