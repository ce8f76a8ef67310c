import UnixSignals

/// Reads the configuration again on SIGHUP and when its file is edited, one request at a time
/// (``AccountPipeline/handleHangups(_:)``, ``AccountPipeline/handleReloads()``).
///
/// Owns its state: the queue of reload requests, finished when the agent begins stopping.
struct Reloader: AgentService {
    let agent: AccountPipeline
    let hangups: UnixSignalsSequence

    /// The queue of reload requests; made with the agent, before its group runs.
    final class State: Sendable {
        let requests: AsyncStream<AccountPipeline.ReloadTrigger>
        let continuation: AsyncStream<AccountPipeline.ReloadTrigger>.Continuation

        init() {
            (requests, continuation) = AsyncStream<AccountPipeline.ReloadTrigger>.makeStream(bufferingPolicy: .unbounded)
        }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent, hangups] in await agent.handleHangups(hangups) }, { [agent] in await agent.handleReloads() }]
    }
}
