/// What keeps analysis going beside the dispatcher: the analysis started again after it broke
/// (``QuarantineAgent/retryAnalyzer()``), held files the vault refused queued again
/// (``QuarantineAgent/retryHeldFiles()``), and the download history waited for of items hidden
/// before their browser wrote it (``QuarantineAgent/followOrigins()``).
struct AnalysisUpkeep: AgentService {
    let agent: QuarantineAgent

    var loops: [@Sendable () async -> Void] {
        [{ [agent] in await agent.retryAnalyzer() }, { [agent] in await agent.retryHeldFiles() }, { [agent] in await agent.followOrigins() }]
    }
}
