import Locking
import QuarantineStore
import ServiceLifecycle

/// The agent's dispatcher as a service: starts what fits in the analysis lanes whenever
/// something changes (``AccountPipeline/dispatch()``). A graceful shutdown does not cancel it: it
/// ends by itself once the agent is stopping and nothing is in flight, and its end shuts the rest
/// of the agent's group down.
///
/// Owns its state: the files in flight (the status shows them, the intake and the held files'
/// retry leave them to their lane), and the counters of what was done.
struct Dispatcher: Service {
    let agent: AccountPipeline

    /// The dispatcher's state; made with the agent, before its group runs.
    final class State: Sendable {
        struct Work {
            /// The files being judged, by path.
            var inFlight: [String: AgentStatus.Work] = [:]
            /// How many of them are videos (their own lane).
            var videosInFlight = 0
            /// What was done, by counter (`status`).
            var counters: [String: Int] = [:]
        }

        let work = Locked(Work())
    }

    func run() async { await agent.dispatch() }
}
