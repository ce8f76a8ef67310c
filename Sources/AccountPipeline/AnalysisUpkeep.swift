/// What keeps analysis going beside the dispatcher: the analysis started again after it broke
/// (``AccountPipeline/retryAnalyzer()``), held files the vault refused queued again
/// (``AccountPipeline/retryHeldFiles()``), and the download history waited for of items hidden
/// before their browser wrote it (``AccountPipeline/followOrigins()``).
struct AnalysisUpkeep: AgentService {
    let agent: AccountPipeline

    var loops: [@Sendable () async -> Void] {
        [{ [agent] in await agent.retryAnalyzer() }, { [agent] in await agent.retryHeldFiles() }, { [agent] in await agent.followOrigins() }]
    }
}
