import Locking
import QuarantineStore

/// Watches the audit database (``AccountPipeline/watchDatabase()``): a file replaced under the
/// agent is opened anew; while a fault keeps the gate closed, it is probed until it works again.
///
/// Owns its state: the gate (closed by any part whose write ran into a fault, opened here when
/// the database works again; the dispatcher starts nothing while it is closed) and what is wrong.
struct DatabaseWatch: AgentService {
    let agent: AccountPipeline

    /// The gate; made with the agent, before its group runs.
    final class State: Sendable {
        struct Gate {
            /// While a fault of the audit database lasts, no new analysis starts
            /// (``AccountPipeline/noteDatabaseFaults()``, ``AccountPipeline/watchDatabase()``).
            var fault: DatabaseFault?
            /// What is wrong with the audit database, while it lasts (shown by `status`).
            var problem: String?
        }

        let gate = Locked(Gate())
        /// The fault that keeps the gate closed; nil while it is open.
        var fault: DatabaseFault? { gate.withLock { $0.fault } }
    }

    var loops: [@Sendable () async -> Void] { [{ [agent] in await agent.watchDatabase() }] }
}
