/// Watches the audit database (``AccountPipeline/watchDatabase()``): a file replaced under the
/// agent is opened anew; while a fault keeps the gate closed, it is probed until it works again.
struct DatabaseWatch: AgentService {
    let agent: AccountPipeline

    var loops: [@Sendable () async -> Void] { [{ [agent] in await agent.watchDatabase() }] }
}
