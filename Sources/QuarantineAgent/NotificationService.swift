/// The desktop notifications' side that runs by itself: what the person chose in one
/// (``QuarantineAgent/notificationActions()``), notifications taken down when their item left the
/// vault some other way (``QuarantineAgent/withdrawStaleNotifications()``), and a guardian's
/// own agent telling the protected accounts' release requests
/// (``QuarantineAgent/releaseRequestsOfProtectedAccounts()``).
struct NotificationService: AgentService {
    let agent: QuarantineAgent

    var loops: [@Sendable () async -> Void] {
        [{ [agent] in await agent.notificationActions() }, { [agent] in await agent.withdrawStaleNotifications() },
         { [agent] in await agent.releaseRequestsOfProtectedAccounts() }]
    }
}
