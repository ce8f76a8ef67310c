import ServiceLifecycle

/// One part of the agent run as a service of the agent's own ``ServiceGroup`` (``AccountPipeline/run()``):
/// its loops run beside each other until the group shuts it down gracefully, which cancels them.
///
/// The agent's group is nested in the one that runs the agent, and follows its graceful shutdown
/// (SIGTERM): it shuts its parts down one at a time, last first. The ``Dispatcher``, last, goes
/// first and takes its time (it ends once nothing is in flight); the parts that keep it going
/// (intake, status, database watch) run until it has ended.
protocol AgentService: Service {
    /// The part's loops, each a child task.
    var loops: [@Sendable () async -> Void] { get }
}

extension AgentService {
    func run() async {
        let loops = self.loops
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for loop in loops { group.addTask { await loop() } }
            }
        }
    }
}
