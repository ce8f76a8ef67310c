import ServiceLifecycle

/// The agent's dispatcher as a service: starts what fits in the analysis lanes whenever
/// something changes (``QuarantineAgent/dispatch()``). A graceful shutdown does not cancel it: it
/// ends by itself once the agent is stopping and nothing is in flight, and its end shuts the rest
/// of the agent's group down.
struct Dispatcher: Service {
    let agent: QuarantineAgent

    func run() async { await agent.dispatch() }
}
