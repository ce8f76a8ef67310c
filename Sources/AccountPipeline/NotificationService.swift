import Locking
import ServiceSupport

/// The desktop notifications' side that runs by itself: what the person chose in one
/// (``AccountPipeline/notificationActions()``), notifications taken down when their item left the
/// vault some other way (``AccountPipeline/withdrawStaleNotifications()``), and a guardian's
/// own agent telling the protected accounts' release requests
/// (``AccountPipeline/releaseRequestsOfProtectedAccounts()``).
///
/// Owns its state: the notifier (nil without a desktop session), the notifications still offering
/// buttons, and what `status` says about notifications.
struct NotificationService: AgentService {
    let agent: AccountPipeline

    /// The desktop notifications' state; made with the agent, set up at its start.
    final class State: Sendable {
        struct Desk {
            var notifier: DesktopNotifier?
            /// Notifications still offering buttons, by id: the item each is about.
            var notifiedItems: [UInt32: Int64] = [:]
            /// What `status` says about notifications.
            var description = "log only: notifications are off"
        }

        let desk = Locked(Desk())
        /// The notifier, when there is a desktop session.
        var notifier: DesktopNotifier? { desk.withLock { $0.notifier } }
    }

    var loops: [@Sendable () async -> Void] {
        [{ [agent] in await agent.notificationActions() }, { [agent] in await agent.withdrawStaleNotifications() },
         { [agent] in await agent.releaseRequestsOfProtectedAccounts() }]
    }
}
