/// Watches the audit database (``QuarantineAgent/watchDatabase()``): a file replaced under the
/// agent is opened anew; while a fault keeps the gate closed, it is probed until it works again.
struct DatabaseWatch: AgentService {
    let agent: QuarantineAgent

    var loops: [@Sendable () async -> Void] { [{ [agent] in await agent.watchDatabase() }] }
}
