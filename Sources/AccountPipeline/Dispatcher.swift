import ServiceLifecycle

/// The agent's dispatcher as a service: starts what fits in the analysis lanes whenever
/// something changes (``AccountPipeline/dispatch()``). A graceful shutdown does not cancel it: it
/// ends by itself once the agent is stopping and nothing is in flight, and its end shuts the rest
/// of the agent's group down.
struct Dispatcher: Service {
    let agent: AccountPipeline

    func run() async { await agent.dispatch() }
}
