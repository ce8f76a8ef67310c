import FolderWatch
import Locking
import QuarantineStore

/// Watch to backlog: the folder watcher's events become candidates
/// (``AccountPipeline/intake(_:)``), written to the backlog in batches (``AccountPipeline/flusher()``).
///
/// Owns its state: the candidates gathered and not yet written, those to hold at once, the
/// failed writes in a row, and the requests for a write.
struct FolderIntake: AgentService {
    let agent: AccountPipeline
    let watcher: FolderWatcher

    /// What the intake keeps between writes; made with the agent, before its group runs.
    final class State: Sendable {
        struct Batches {
            /// Noticed, not yet written to the backlog.
            var pending: [BacklogEntry] = []
            /// Queued, to be held at once by the flusher (``AccountPipeline/holdAtOnce(_:settings:)``), off Swift's threads.
            var toHoldAtOnce: [BacklogEntry] = []
            /// Writes of the backlog that failed in a row (a full disk, a database kept busy).
            var failures = 0
            /// The database works again: the flusher writes the files it kept at once.
            var retryNow = false
        }

        let batches = Locked(Batches())
        /// Requests for ``AccountPipeline/flusher()``.
        let requests: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation

        init() {
            (requests, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent, watcher] in await agent.intake(watcher) }, { [agent] in await agent.flusher() }]
    }
}
