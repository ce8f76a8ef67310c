import AccountPipeline
import Foundation
import GuardianAPI
import Locking
import Logging
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// The guardian service's socket: every request is believed only for the user the kernel says
/// sent it (SO_PEERCRED). The protected account sees its own items (previews only, never the
/// original) and needs the guardian PIN, checked by the core with its waits; root and members of
/// `quarantine-guardians` act as guardian without it. Decisions are the core's (``Review``);
/// which verb each caller may use is declared by the route table (``routes``) and checked by
/// the core's ``GuardianRules``.
///
/// It is an attack surface for every local account, so what a connection can cost is bounded:
/// - anyone else is refused as soon as the connection is accepted, before a byte (or a
///   descriptor) of theirs is read: a short refusal, then the connection is closed, and what
///   they queued (descriptors included) is freed by the kernel, not held by the service;
/// - each account holds at most ``Limits/perAccount`` connections (root ``Limits/root``), and all
///   accounts but the protected one together at most ``Limits/shared``: the protected account's
///   own connections never wait for anyone else's;
/// - one thread (``pollLoop()``) accepts and watches idle connections; a fixed pool of
///   ``Limits/handlers`` threads serves one request at a time each: an idle or slow client holds
///   no thread; a connection idle for ``Limits/idle`` is closed; a client that does not read its
///   answer is cut off after ``Limits/sendTimeout``;
/// - accept failures (EMFILE, ENFILE, ENOMEM, ECONNABORTED, ...) back off and go on: only
///   ``stop()`` ends the loop;
/// - every answer fits one message of ``GuardianProtocol/maxMessage`` (long lists in pages), and
///   descriptors arriving with a request are closed at once, but the one an `analyze` request of
///   the protected account carries (``takeAnalysis(_:_:)``), judged away from these threads;
///   a `stream` of the protected account takes its connection the same way (``takeStream(_:_:)``).
final class GuardianServer: @unchecked Sendable {
    /// What a connection may cost.
    struct Limits: Sendable {
        /// Connections one account (not root) may hold at once.
        var perAccount = 8
        /// Connections root may hold at once.
        var root = 16
        /// Connections every account but the protected one may hold together.
        var shared = 48
        /// Threads serving requests.
        var handlers = 4
        /// A connection with no request for this long is closed.
        var idle: Duration = .seconds(30)
        /// How long reading a request that poll said is there may wait.
        var receiveTimeout: Duration = .seconds(2)
        /// How long an answer may wait for the client to make room for it.
        var sendTimeout: Duration = .seconds(5)
        /// How long the accept loop pauses after a failed accept (EMFILE and the like).
        var acceptBackoff: Duration = .milliseconds(100)

        /// The most connections that can be open at once (the unit's LimitNOFILE counts on it).
        var maxConnections: Int { perAccount + shared }
    }

    let paths: GuardianPaths
    let childUID: uid_t
    /// The protected account's home (its folders are there).
    let home: String
    let vault: Vault
    let configurationPath: String
    let logger: Logger
    let limits: Limits
    let socketPath: String
    let listener: LocalSocket
    /// Whether a uid may act as guardian (an account lookup; tests give their own).
    let guardianCheck: @Sendable (uid_t) -> Bool
    /// `accept4` on the listener (a seam: tests make it fail as a full descriptor table does).
    let accepting: @Sendable (LocalSocket) -> Result<LocalSocket, LocalSocket.AcceptFailure>
    /// Called after the configuration changed (the mode): the agent reloads it.
    let reload: @Sendable () -> Void
    /// The shared folders as the agent reaches them (the unit's side path of `/tmp`): paths in
    /// answers are named as people know them (``SharedFolder/shown(_:in:)``).
    let sharedFolders: [SharedFolder]
    /// The previews handed out, told to the agent (their copies are not held as new pictures).
    let servedPreviews: ServedPreviews?
    /// Judges what the protected account's session forwarder passes (`analyze`); nil: not offered.
    let analysis: GuardianAnalysis?
    /// Judges the protected account's applications' live streams (`stream`); nil: not offered.
    let streams: GuardianStreams?

    /// A connection the service holds: who is at the other end and what they are to it.
    final class Connection: @unchecked Sendable {
        let socket: LocalSocket
        let peer: LocalSocket.Peer
        let role: GuardianRole
        /// When it last had a request (or was accepted): the idle timeout counts from here.
        var lastActive: ContinuousClock.Instant

        init(socket: LocalSocket, peer: LocalSocket.Peer, role: GuardianRole) {
            self.socket = socket
            self.peer = peer
            self.role = role
            lastActive = .now
        }
    }

    /// What the threads share.
    struct State {
        /// Set (with the listener shut down, in one turn) by ``stop()``: from then on no
        /// connection is added to ``ready`` or ``returned``; whoever would add one closes it.
        var stopped = false
        /// ``start()`` ran: the poll loop closes what is left at the stop (else ``stop()`` does).
        var started = false
        /// Open connections per uid, and those of every uid but the child's.
        var perUID: [uid_t: Int] = [:]
        var shared = 0
        /// Connections with a request waiting, for the handlers (each at most once: a connection
        /// is not watched while it waits here or is being served).
        var ready: [Connection] = []
        /// Served connections going back to the poll loop.
        var returned: [Connection] = []
        /// Threads still running (stop waits for them in tests).
        var running = 0
        /// uid -> (is a guardian, looked up at): account lookups cached briefly.
        var guardians: [uid_t: (Bool, ContinuousClock.Instant)] = [:]
        /// Refusals not yet logged, per uid (a flood is logged once a few seconds).
        var refusedSinceLog: [uid_t: Int] = [:]
        var lastRefusalLog: ContinuousClock.Instant?
        /// Failed accepts not yet logged.
        var acceptFailuresSinceLog = 0
        var lastAcceptFailureLog: ContinuousClock.Instant?
    }

    let state = Locked(State())
    /// Wakes the handlers when ``State/ready`` grows or the server stops.
    let work = NSCondition()
    /// Wakes the poll loop (a byte in the pipe) when a connection comes back or the server stops.
    let wake: (read: Int32, write: Int32)

    init(paths: GuardianPaths, childUID: uid_t, home: String, vault: Vault, configurationPath: String, logger: Logger,
         socketPath: String? = nil, limits: Limits = Limits(), guardianCheck: @escaping @Sendable (uid_t) -> Bool = GuardianPaths.isGuardian,
         accepting: @escaping @Sendable (LocalSocket) -> Result<LocalSocket, LocalSocket.AcceptFailure> = { $0.acceptOrErrno() },
         sharedFolders: [SharedFolder] = [], servedPreviews: ServedPreviews? = nil, analysis: GuardianAnalysis? = nil,
         streams: GuardianStreams? = nil, reload: @escaping @Sendable () -> Void) throws(ServiceError) {
        self.accepting = accepting
        self.analysis = analysis
        self.streams = streams
        self.servedPreviews = servedPreviews
        self.paths = paths
        self.childUID = childUID
        self.home = home
        self.vault = vault
        self.configurationPath = configurationPath
        self.logger = logger
        self.limits = limits
        self.guardianCheck = guardianCheck
        self.reload = reload
        self.sharedFolders = sharedFolders
        self.socketPath = socketPath ?? paths.socket
        // Anyone may connect (0666); who may do what is decided per connection by the peer's user.
        listener = try LocalSocket.listen(at: self.socketPath, mode: 0o666, backlog: 64)
        try listener.setNonBlocking()
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0, fds.allSatisfy({ fcntl($0, F_SETFD, FD_CLOEXEC) == 0 && fcntl($0, F_SETFL, O_NONBLOCK) == 0 }) else {
            throw ServiceError(code: .fileSystem, operation: "pipe", message: "cannot make the socket loop's wake-up pipe", cause: String(cString: strerror(errno)))
        }
        wake = (fds[0], fds[1])
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    // MARK: - Threads

    /// Starts the poll loop and the handler pool; they run until ``stop()``.
    func start() {
        let go = state.withLock { state -> Bool in
            guard !state.stopped, !state.started else { return false }
            state.started = true
            state.running = 1 + limits.handlers
            return true
        }
        guard go else { return }
        let loop = Thread { [self] in pollLoop(); finished() }
        loop.name = "guardian-socket"
        loop.start()
        for index in 0..<limits.handlers {
            let handler = Thread { [self] in handlerLoop(); finished() }
            handler.name = "guardian-handler-\(index)"
            handler.start()
        }
    }

    /// Stops accepting, closes every connection (a request being served is finished first) and
    /// removes the socket.
    ///
    /// No connection outlives the stop, wherever it is: the listener is shut down in the same
    /// turn as ``State/stopped`` is set, so nobody can connect after it (ECONNREFUSED), and every
    /// connection made before is closed: those in the listen backlog are accepted and turned
    /// away with a refusal saying the service is stopping (then the listener is closed, which
    /// resets any the kernel still holds); those accepted and not yet watched, idle, or waiting
    /// for a handler are closed unserved; one being served is closed once its answer is sent. A
    /// client that connected and never speaks costs the stop nothing.
    func stop() {
        let (already, started) = state.withLock { state in
            defer { state.stopped = true }
            // In the same turn: once a thread sees `stopped`, nobody can connect any more.
            if !state.stopped { listener.shutdownBoth() }
            return (state.stopped, state.started)
        }
        guard !already else { return }
        unlink(socketPath)
        // Never started: no poll loop closes the backlog, so this does.
        if !started { closeAtStop(idle: []) }
        analysis?.stop()
        streams?.stop()
        signalPollLoop()
        work.lock()
        work.broadcast()
        work.unlock()
    }

    /// Waits (up to `timeout`) until every thread of the server has ended; true when they have.
    func waitUntilStopped(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.running }) == 0 { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    func finished() { state.withLock { $0.running -= 1 } }

    func signalPollLoop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// Accepts connections and watches the idle ones; hands each connection with a request to
    /// the handlers. The only thread that accepts, and the only one that touches `idle`.
    func pollLoop() {
        var idle: [Connection] = []
        var acceptPausedUntil: ContinuousClock.Instant?
        defer { closeAtStop(idle: idle) }
        while !state.withLock({ $0.stopped }) {
            idle += state.withLock { state in
                defer { state.returned.removeAll() }
                return state.returned
            }
            let now = ContinuousClock.now
            // Idle for too long: closed.
            idle.removeAll { connection in
                guard now - connection.lastActive > limits.idle else { return false }
                release(connection)
                return true
            }
            if let until = acceptPausedUntil, until <= now { acceptPausedUntil = nil }
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            if acceptPausedUntil == nil { fds.append(pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)) }
            let first = fds.count
            fds += idle.map { pollfd(fd: $0.socket.descriptor, events: Int16(POLLIN), revents: 0) }
            // Wake for the next idle deadline, the end of an accept pause, or at least each second.
            var wait: Duration = .seconds(1)
            if let oldest = idle.map(\.lastActive).min() { wait = min(wait, max(.zero, oldest + limits.idle - now)) }
            if let until = acceptPausedUntil { wait = min(wait, max(.zero, until - now)) }
            let milliseconds = Int32(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000) + 1
            let count = poll(&fds, nfds_t(fds.count), milliseconds)
            if count < 0 { if errno != EINTR { Thread.sleep(forTimeInterval: 0.01) }; continue }
            if fds[0].revents != 0 { drainWakePipe() }
            if state.withLock({ $0.stopped }) { break }
            // Requests (or hang-ups) on idle connections go to the handlers.
            var readyNow: [Connection] = []
            for index in stride(from: fds.count - 1, through: first, by: -1) where fds[index].revents != 0 {
                readyNow.append(idle.remove(at: index - first))
            }
            if !readyNow.isEmpty { hand(readyNow) }
            if first == 2, fds[1].revents != 0 {
                if let pause = acceptWaiting() { acceptPausedUntil = .now + pause }
            }
        }
    }

    /// Accepts every connection waiting (up to 64 a round); a pause to keep when accept failed.
    func acceptWaiting() -> Duration? {
        for _ in 0..<64 {
            switch accepting(listener) {
            case .success(let socket):
                admitAccepted(socket)
            case .failure(let failure):
                if failure.errno == EAGAIN || failure.errno == EWOULDBLOCK || failure.errno == EINTR { return nil }
                // EMFILE, ENFILE, ENOMEM, ENOBUFS, ECONNABORTED, EPROTO, ...: never the end of the
                // loop. The connection stays queued in the kernel and is taken after the pause.
                // Logged once every few seconds, with how many failed since.
                let failed = state.withLock { state -> Int? in
                    state.acceptFailuresSinceLog += 1
                    if let last = state.lastAcceptFailureLog, ContinuousClock.now - last < .seconds(5) { return nil }
                    state.lastAcceptFailureLog = .now
                    defer { state.acceptFailuresSinceLog = 0 }
                    return state.acceptFailuresSinceLog
                }
                if let failed {
                    logger.warning("cannot accept a connection on \(socketPath) (\(failure); \(failed) failure(s) since the last report); pausing \(limits.acceptBackoff) each time and going on")
                }
                return limits.acceptBackoff
            }
        }
        return nil
    }

    /// A connection just accepted: its peer's credentials, then ``admit(_:peer:)``.
    func admitAccepted(_ socket: LocalSocket) {
        guard let peer = try? socket.peer() else { socket.close(); return }
        admit(socket, peer: peer)
    }

    /// Takes `socket` from `peer` into the service, or refuses it before reading anything from
    /// it: someone who is neither the protected account, root nor a guardian, or an account
    /// over its number of connections, gets a one-line refusal and the connection is closed.
    func admit(_ socket: LocalSocket, peer: LocalSocket.Peer) {
        guard let role = role(of: peer) else {
            refuse(socket, peer: peer, "this service protects \(paths.user); only \(paths.user), root and members of \(GuardianPaths.guardiansGroup) may use it")
            return
        }
        let cap = peer.uid == 0 ? limits.root : limits.perAccount
        let admitted = state.withLock { state -> Bool in
            let held = state.perUID[peer.uid] ?? 0
            let shares = peer.uid != childUID
            guard held < cap, !shares || state.shared < limits.shared else { return false }
            state.perUID[peer.uid] = held + 1
            if shares { state.shared += 1 }
            return true
        }
        guard admitted else {
            refuse(socket, peer: peer, "too many connections to the guardian service for \(paths.user) from this account (at most \(cap) at once); close some and try again")
            return
        }
        try? socket.setTimeouts(receive: limits.receiveTimeout, send: limits.sendTimeout)
        watch(Connection(socket: socket, peer: peer, role: role))
    }

    /// Gives `connection` to the poll loop to watch for its next request; closed instead once
    /// the server stopped (the poll loop may have ended: nobody would ever close it).
    func watch(_ connection: Connection) {
        let taken = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.returned.append(connection)
            return true
        }
        guard taken else { release(connection); return }
        signalPollLoop()
    }

    /// The poll loop's end (or a stop before any start): closes the connections it watched,
    /// those handed back to it and not yet watched, those waiting for a handler, and turns away
    /// those still in the listen backlog; then closes the listener. Runs once ``State/stopped``
    /// is set, so nothing is added to ``State/returned`` or ``State/ready`` after this.
    func closeAtStop(idle: [Connection]) {
        let (returned, ready) = state.withLock { state in
            defer { state.returned.removeAll(); state.ready.removeAll() }
            return (state.returned, state.ready)
        }
        (idle + returned + ready).forEach(release)
        // The backlog: accepted straight from the listener (not through ``accepting``, a seam
        // that may fail on purpose), each told why and closed. Nothing joins it after the
        // listener's shutdown.
        var turnedAway = 0
        while case .success(let socket) = listener.acceptOrErrno() {
            try? socket.setTimeouts(receive: .milliseconds(1), send: .milliseconds(20))
            try? socket.send(GuardianProtocol.refusal(.refused("the guardian service for \(paths.user) is stopping; try again once it runs")))
            socket.shutdownBoth()
            socket.close()
            turnedAway += 1
        }
        // Whatever accept could not take (EMFILE, say) is reset by the kernel with the listener.
        listener.close()
        if idle.count + returned.count + ready.count + turnedAway > 0 {
            logger.info("stopped: closed \(idle.count + returned.count + ready.count) connection(s) and turned away \(turnedAway) waiting to be accepted")
        }
    }

    /// Sends `words` as a refusal without waiting, and closes the connection unread: what the
    /// peer queued (descriptors too) is dropped by the kernel with the connection.
    func refuse(_ socket: LocalSocket, peer: LocalSocket.Peer, _ words: String) {
        try? socket.setTimeouts(receive: .milliseconds(1), send: .milliseconds(20))
        try? socket.send(GuardianProtocol.refusal(.refused(words)))
        socket.shutdownBoth()
        socket.close()
        let log = state.withLock { state -> [uid_t: Int]? in
            state.refusedSinceLog[peer.uid, default: 0] += 1
            if let last = state.lastRefusalLog, ContinuousClock.now - last < .seconds(5) { return nil }
            state.lastRefusalLog = .now
            defer { state.refusedSinceLog.removeAll() }
            return state.refusedSinceLog
        }
        for (uid, count) in log?.sorted(by: { $0.key < $1.key }) ?? [] {
            logger.warning("refused \(count) connection(s) from uid \(uid) (last: pid \(peer.pid)): \(words)")
        }
    }

    /// Closes a connection the service held and gives its place back.
    func release(_ connection: Connection) {
        connection.socket.close()
        state.withLock { state in
            let uid = connection.peer.uid
            let held = (state.perUID[uid] ?? 1) - 1
            state.perUID[uid] = held > 0 ? held : nil
            if uid != childUID { state.shared -= 1 }
        }
    }

    /// Gives connections with a request to the handlers; closed instead once the server
    /// stopped (the handlers may have ended).
    func hand(_ connections: [Connection]) {
        work.lock()
        let taken = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.ready += connections
            return true
        }
        work.broadcast()
        work.unlock()
        if !taken { connections.forEach(release) }
    }

    func drainWakePipe() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(wake.read, &buffer, buffer.count) > 0 {}
    }

    /// A handler thread: serves one request of one ready connection at a time.
    func handlerLoop() {
        while true {
            work.lock()
            var next: Connection?
            while true {
                // Once stopped, a connection still waiting is not served: the poll loop's end
                // (``closeAtStop(idle:)``) closes it.
                let (stopped, taken) = state.withLock { state -> (Bool, Connection?) in
                    state.stopped || state.ready.isEmpty ? (state.stopped, nil) : (false, state.ready.removeFirst())
                }
                if let taken { next = taken; break }
                if stopped { break }
                work.wait()
            }
            work.unlock()
            guard let connection = next else { return }
            let outcome = serveOne(connection)
            // An analysis took the connection: it closes it when done.
            if outcome == .detached { continue }
            if outcome == .keep {
                connection.lastActive = .now
                watch(connection)
            } else {
                release(connection)
            }
        }
    }

    /// What became of a connection after one request.
    enum Outcome {
        /// Watched for its next request.
        case keep
        /// Done (closed by the peer, a request too long or with descriptors, an answer it did not take).
        case close
        /// An analysis (``GuardianAnalysis``) answers it and closes it.
        case detached
    }

    /// Reads one request from `connection` and answers it (or hands it to an analysis).
    func serveOne(_ connection: Connection) -> Outcome {
        let message: LocalSocket.Message?
        do { message = try connection.socket.receive(maxLength: GuardianProtocol.maxRequest) } catch {
            // Too long or too many descriptors (already closed by receive), or a timeout.
            try? connection.socket.send(GuardianProtocol.refusal(.invalid(.tooLong(limit: GuardianProtocol.maxRequest))))
            return .close
        }
        guard let message else { return .close }
        // The one request that keeps its descriptor: analyze, from the protected account, with exactly one.
        if takeAnalysis(connection, message) { return .detached }
        // A stream's beginning, from the protected account: the connection is the stream's.
        if takeStream(connection, message) { return .detached }
        message.descriptors.forEach { close($0) }
        // An analyze or stream request not taken (another caller's, or not exactly one
        // descriptor): its descriptors are closed, and its route answers why.
        let verb = try? GuardianProtocol.verb(of: message.bytes)
        guard message.descriptors.isEmpty || verb == .analyze || verb == .stream else {
            try? connection.socket.send(GuardianProtocol.refusal(.invalid(.carriesDescriptors)))
            return .close
        }
        let served = respond(to: message.bytes, role: connection.role, peer: connection.peer)
        let preview = served.preview
        var bytes = served.bytes
        defer { if let preview { close(preview) } }
        var descriptors = preview.map { [$0] } ?? []
        if let preview, connection.role == .child { servedPreviews?.remember(preview) }
        if bytes.count > GuardianProtocol.maxMessage {
            logger.error("an answer of \(bytes.count) bytes was not sent (over \(GuardianProtocol.maxMessage))")
            bytes = GuardianProtocol.refusal(.refused("the answer is too long to send (\(bytes.count) bytes)"))
            descriptors = []
        }
        do { try connection.socket.send(bytes, descriptors: descriptors) } catch { return .close }
        return .keep
    }

    // MARK: - Roles

    /// Who `peer` is to this service; nil for anyone else.
    func role(of peer: LocalSocket.Peer) -> GuardianRole? {
        if peer.uid == 0 { return .guardian }
        if peer.uid == childUID { return .child }
        return isGuardian(peer.uid) ? .guardian : nil
    }

    /// ``guardianCheck``, remembered for a few seconds (a flood of connections from one account
    /// costs one lookup, not one per connection).
    func isGuardian(_ uid: uid_t) -> Bool {
        let now = ContinuousClock.now
        if let (known, at) = state.withLock({ $0.guardians[uid] }), now - at < .seconds(5) { return known }
        let known = guardianCheck(uid)
        state.withLock { state in
            if state.guardians.count > 1024 { state.guardians.removeAll() }
            state.guardians[uid] = (known, now)
        }
        return known
    }
}
