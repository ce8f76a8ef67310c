import FolderWatch
import Locking
import UnixSignals

/// Reads the configuration again on SIGHUP and when its file is edited, one request at a time
/// (``AccountPipeline/handleHangups(_:)``, ``AccountPipeline/handleReloads()``).
///
/// Owns its state: the queue of reload requests, finished when the agent begins stopping; the
/// configuration file's watcher; and what is wrong with the file, while it lasts.
struct Reloader: AgentService {
    let agent: AccountPipeline
    let hangups: UnixSignalsSequence

    /// The queue of reload requests; made with the agent, before its group runs.
    final class State: Sendable {
        struct File {
            /// Edits of the configuration file (``AccountPipeline/watchConfigurationFile()``).
            var watcher: FileChangeWatcher?
            /// What is wrong with the configuration file, while it lasts (shown by `status`): the
            /// settings in force are the previous ones, the last good copy's or the defaults.
            var problem: String?
        }

        let file = Locked(File())
        let requests: AsyncStream<AccountPipeline.ReloadTrigger>
        let continuation: AsyncStream<AccountPipeline.ReloadTrigger>.Continuation

        init() {
            (requests, continuation) = AsyncStream<AccountPipeline.ReloadTrigger>.makeStream(bufferingPolicy: .unbounded)
        }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent, hangups] in await agent.handleHangups(hangups) }, { [agent] in await agent.handleReloads() }]
    }
}
