import Foundation
import Locking
import ServiceSupport

/// An analysis worker the worker launcher started for this service, seen from the service: the
/// launcher's connection, which keeps the worker alive, and its pid. The service cannot signal
/// the worker (another user): ``kill()`` asks the launcher, and the launcher kills it as well when
/// this connection closes (the service stopped or died).
final class LaunchedWorker: Sendable {
    let connection: LocalSocket
    let pid: pid_t
    /// How it ended, once the launcher said so.
    private let ending = Locked<String?>(nil)

    private init(connection: LocalSocket, pid: pid_t) {
        self.connection = connection
        self.pid = pid
    }

    /// Asks the launcher at `socketPath` for a worker judging files of the protected account
    /// `account`; the worker, the service's end of its socket and the read end of its standard
    /// error. Throws what went wrong, or why the launcher refused.
    static func start(socketPath: String, account: UInt32, environment: [String: String],
                      timeout: Duration = .seconds(10)) throws(SandboxedAnalysis.Problem) -> (LaunchedWorker, LocalSocket, Int32) {
        let connection: LocalSocket
        do { connection = try LocalSocket.connect(to: socketPath) } catch {
            // No socket there, or nobody listening on it (a launcher that died leaves its socket
            // file behind): the launcher is not running.
            if [ECONNREFUSED, ENOENT].map({ String(cString: strerror($0)) }).contains(error.cause ?? "") {
                throw .init(SandboxedAnalysis.launcherMissing(socketPath))
            }
            throw .init("cannot reach the worker launcher at \(socketPath): \(error)")
        }
        // The launcher runs as this service's own user (or root, in tests): nobody else's socket
        // is believed, even in /run/quarantine.
        guard let peer = try? connection.peer(), peer.uid == getuid() || peer.uid == 0 else {
            throw .init("the worker launcher's socket \(socketPath) belongs to another user; not used")
        }
        LauncherService.setTimeouts(connection.descriptor, receive: timeout, send: timeout)
        let asked = environment.filter { LauncherMessage.passedVariables.contains($0.key) }
        do { try connection.send(LauncherMessage.encode(.want, LauncherMessage.Want(account: account, environment: asked))) } catch {
            throw .init("cannot ask the worker launcher for a worker: \(error)")
        }
        let answer: LocalSocket.Message?
        do { answer = try connection.receive(maxLength: 4096) } catch {
            throw .init("the worker launcher did not answer: \(error)")
        }
        guard let answer else { throw .init("the worker launcher closed the connection without an answer") }
        if let started = LauncherMessage.decode(.started, LauncherMessage.Started.self, answer.bytes), answer.descriptors.count == 2, started.pid > 0 {
            return (LaunchedWorker(connection: connection, pid: started.pid), LocalSocket(adopting: answer.descriptors[0]), answer.descriptors[1])
        }
        answer.descriptors.forEach { close($0) }
        if let refused = LauncherMessage.decode(.refused, LauncherMessage.Refused.self, answer.bytes) {
            throw .init("the worker launcher refused: \(WorkerMessage.Report.tame(.init(code: "refused", message: refused.reason)).message)")
        }
        throw .init("the worker launcher answered with a message of no known kind")
    }

    /// Has the launcher SIGKILL the worker (a "kill"; when that cannot be sent, the hang-up does it).
    func kill() {
        do { try connection.send([LauncherMessage.Kind.kill.rawValue]) } catch {
            _ = shutdown(connection.descriptor, Int32(SHUT_RDWR))
        }
    }

    /// Waits up to `timeout` for the launcher to say how the worker ended (it says so as the
    /// worker ends, and the service calls this once the worker's socket closed); kills it when
    /// it has not ended by then. Says how it ended.
    func waitForEnd(timeout: Duration = .seconds(10)) -> String {
        if let how = ending.withLock({ $0 }) { return how }
        var how = awaitEnded(timeout)
        if how == nil {
            kill()
            how = awaitEnded(.seconds(5))
        }
        let said = how ?? "did not end within \(timeout) of its socket closing, and the launcher did not say it was killed"
        ending.withLock { $0 = said }
        return said
    }

    private func awaitEnded(_ timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let received: LocalSocket.Message?
            do { received = try connection.receive(maxLength: 4096) } catch { received = nil }
            guard let message = received else { return "ended (the launcher closed its connection)" }
            message.descriptors.forEach { close($0) }
            if let ended = LauncherMessage.decode(.ended, LauncherMessage.Ended.self, message.bytes) {
                return WorkerMessage.Report.tame(.init(code: "ended", message: ended.how)).message
            }
        }
    }
}
