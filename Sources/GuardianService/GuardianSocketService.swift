import QuarantineBase
import AccountPipeline
import ServiceLifecycle

/// The guardian service's socket (``GuardianServer``) as a service of the guardian service's
/// group: it accepts and serves from the group's start until its graceful shutdown (or
/// cancellation), then stops accepting, lets each handler finish the request it is serving,
/// closes every connection, removes the socket, and returns once every thread of the server
/// has ended.
struct GuardianSocketService: Service {
    let server: GuardianServer

    func run() async {
        server.start()
        // Until the group shuts down gracefully, or is cancelled: either way the server stops.
        try? await gracefulShutdown()
        server.stop()
        let server = self.server
        let ended = (try? await onOwnThread("guardian-socket-stop") { server.waitUntilStopped(timeout: .seconds(30)) }) ?? false
        if !ended { server.logger.warning("the guardian socket's threads did not all end within 30 s of the stop") }
    }
}
