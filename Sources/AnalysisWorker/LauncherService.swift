import CSystemShims
import Foundation
import Locking
import ServiceSupport
import QuarantineBase
import SensitivityAnalysis

/// The worker launcher (`quarantine worker-launcher`, system unit quarantine-worker-launcher.service):
/// the one process that may change its user, so that no guardian service needs to. It runs as the
/// guardian services' user `quarantine` with CAP_SETUID and CAP_SETGID alone, and starts, for a
/// guardian service that asks, an analysis worker as the protected account's own worker user
/// (`quarantine-w<uid>`, all three user ids), with no capability left.
///
/// Its socket (``Options/socketPath``, 0600, the launcher's user's) is reachable by that user
/// alone, and a peer of any other user (SO_PEERCRED) is refused before anything is read. One
/// request per connection: a worker for the protected account with uid N, where N must have a
/// configuration (`/etc/quarantine/<name>.toml`) and a worker user. The launcher makes the
/// socket pair, starts `/proc/self/exe analysis-worker` as that user (its end as descriptor 3,
/// the runtime folder as 4), and passes the other end and the worker's standard error to the
/// guardian with the worker's pid. It keeps the connection for the worker's life: the guardian's
/// "kill", or the connection closing (the guardian stopped or died), SIGKILLs the worker (the
/// guardian itself cannot signal another user); the worker's end closes the connection, after
/// saying how it ended. Workers are capped per account and in total; a request must arrive within
/// ``Options/requestTimeout``; every descriptor received or made is closed on every path.
public final class LauncherService: Sendable {
    /// Where the guardian services find the launcher.
    public static let defaultSocketPath = Paths.socketFolder + "/launcher.sock"

    public struct Options: Sendable {
        public var socketPath = LauncherService.defaultSocketPath
        /// The only user allowed to ask (the guardian services' `quarantine`).
        public var peerUID: uid_t
        /// Where a protected account's configuration (`<name>.toml`) must be.
        public var configurationFolder = Paths.systemConfigurationFolder
        /// The models and ONNX Runtime, handed to each worker as descriptor 4.
        public var runtimeFolder: String
        /// The worker's binary: this one, as the kernel holds it.
        public var executable = SandboxedAnalysis.Options.ownExecutable
        public var arguments = ["analysis-worker"]
        /// Account names that are quarantine's own files, never a protected account.
        public var reservedNames: Set<String> = ["config", "runtime"]
        public var maxWorkersPerAccount = 6
        public var maxWorkers = 24
        /// A connection that has not sent its request by then is closed.
        public var requestTimeout: Duration = .seconds(5)
        /// Sending to a guardian that does not read gives up after this.
        public var sendTimeout: Duration = .seconds(5)
        /// Where each line the launcher has to say goes (refusals, workers started and ended).
        public var log: @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }

        public init(peerUID: uid_t, runtimeFolder: String) {
            self.peerUID = peerUID
            self.runtimeFolder = runtimeFolder
        }
    }

    /// Why a request was refused (sent to the guardian, and logged).
    struct Refusal: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The account a worker is for, and the worker's user.
    struct Account: Sendable, Equatable {
        var uid: uid_t
        var name: String
        var workerUser: String
        var workerUID: uid_t
        var workerGID: gid_t
    }

    struct State {
        /// Connections being served (a request awaited, or a worker running).
        var connections = 0
        var workersPerAccount: [uid_t: Int] = [:]
        /// Each running worker's user and pidfd (closed by its connection's thread, under the lock).
        var workers: [pid_t: (user: uid_t, pidfd: Int32)] = [:]
        var stopped = false
    }

    public let options: Options
    let listener: LocalSocket
    let state = Locked(State())
    private let acceptLoopDone = DispatchSemaphore(value: 0)

    /// Listens at ``Options/socketPath`` (mode 0600). Throws when it cannot.
    public init(options: Options) throws(ServiceError) {
        self.options = options
        listener = try LocalSocket.listen(at: options.socketPath, mode: 0o600, backlog: 32)
    }

    /// The workers running now (pids), for tests and the log.
    public var workers: [pid_t] { state.withLock { Array($0.workers.keys) } }

    /// Serves connections on a thread of its own until ``stop()``.
    public func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "launcher-accept"
        thread.start()
    }

    /// Stops accepting; running workers are killed as their connections close (or the launcher
    /// exits). Waits for the accept loop to end.
    public func stop() {
        let first = state.withLock { s -> Bool in defer { s.stopped = true }; return !s.stopped }
        guard first else { return }
        _ = shutdown(listener.descriptor, Int32(SHUT_RDWR))
        acceptLoopDone.wait()
        listener.close()
    }

    /// SIGKILLs every running worker (the launcher is going); their connections then end.
    public func killAll() {
        state.withLock { s in
            for (_, worker) in s.workers { _ = qsys_kill_as_user(worker.pidfd, worker.user) }
        }
    }

    /// Waits until no worker runs (each reaped by its connection's thread), up to `timeout`;
    /// whether none does.
    @discardableResult
    public func waitForWorkers(timeout: Duration) -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if state.withLock({ $0.workers.isEmpty }) { return true }
            usleep(20_000)
        }
        return state.withLock { $0.workers.isEmpty }
    }

    /// SIGKILLs what workers of the protected accounts' worker users a launcher that ended left
    /// behind (outside systemd, which kills the unit's whole cgroup itself). Call once, before
    /// ``start()``. Returns the users swept.
    @discardableResult
    public func sweepLeftoverWorkers() -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: options.configurationFolder)) ?? [])
            .filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }
        var swept: [String] = []
        for name in names.sorted() {
            guard let uid = Self.user(named: name)?.uid, let account = try? account(uid: uid) else { continue }
            if qsys_kill_all_of_user(account.workerUID) == 0 {
                swept.append(account.workerUser)
                options.log("worker launcher: stopped the workers of \(account.workerUser) a launcher before left running")
            }
        }
        return swept
    }

    // MARK: - Connections

    private func acceptLoop() {
        defer { acceptLoopDone.signal() }
        while !state.withLock({ $0.stopped }) {
            let connection: LocalSocket
            do { connection = try listener.accept() } catch {
                if state.withLock({ $0.stopped }) { break }
                // Out of descriptors or memory: wait and go on; the loop never ends for it.
                options.log("worker launcher: accept failed: \(error)")
                usleep(100_000)
                continue
            }
            // Who is it, before reading anything: only the guardian services' user.
            guard let peer = try? connection.peer(), peer.uid == options.peerUID else {
                let who = (try? connection.peer()).map { "uid \($0.uid), pid \($0.pid)" } ?? "unknown"
                connection.close()
                options.log("worker launcher: refused a connection from \(who): only uid \(options.peerUID) may ask")
                continue
            }
            Self.setTimeouts(connection.descriptor, receive: options.requestTimeout, send: options.sendTimeout)
            let admitted = state.withLock { s -> Bool in
                guard s.connections < options.maxWorkers else { return false }
                s.connections += 1
                return true
            }
            guard admitted else {
                refuse(connection, Refusal("the launcher runs \(options.maxWorkers) workers already"))
                continue
            }
            let thread = Thread { [self] in
                serve(connection)
                state.withLock { $0.connections -= 1 }
            }
            thread.name = "launcher-connection"
            thread.start()
        }
    }

    private func refuse(_ connection: LocalSocket, _ refusal: Refusal) {
        options.log("worker launcher: refused: \(refusal)")
        try? connection.send(LauncherMessage.encode(.refused, LauncherMessage.Refused(reason: refusal.description)))
        connection.close()
    }

    /// One connection, on its own thread, from the request to the worker's end. The worker is
    /// started from this thread and the thread lives as long as it does.
    func serve(_ connection: LocalSocket) {
        let account: Account, environment: [String: String]
        do { (account, environment) = try readRequest(connection) } catch {
            refuse(connection, error)
            return
        }
        let reserved = state.withLock { s -> Bool in
            guard s.workersPerAccount[account.uid, default: 0] < options.maxWorkersPerAccount else { return false }
            s.workersPerAccount[account.uid, default: 0] += 1
            return true
        }
        guard reserved else {
            refuse(connection, Refusal("\(options.maxWorkersPerAccount) workers run for uid \(account.uid) already"))
            return
        }
        defer { state.withLock { s in s.workersPerAccount[account.uid, default: 1] -= 1; if s.workersPerAccount[account.uid] == 0 { s.workersPerAccount[account.uid] = nil } } }

        let worker: (pid: pid_t, pidfd: Int32)
        do { worker = try launch(account, environment: environment, to: connection) } catch {
            refuse(connection, error)
            return
        }
        state.withLock { $0.workers[worker.pid] = (account.workerUID, worker.pidfd) }
        options.log("worker launcher: started worker \(worker.pid) as \(account.workerUser) for \(account.name) (uid \(account.uid))")
        let how = watch(worker, account: account, connection: connection)
        state.withLock { s in
            s.workers[worker.pid] = nil
            close(worker.pidfd)
        }
        options.log("worker launcher: worker \(worker.pid) for \(account.name) \(how)")
        try? connection.send(LauncherMessage.encode(.ended, LauncherMessage.Ended(how: how)))
        connection.close()
    }

    /// Reads and checks the one request; the account it names and the variables asked for.
    func readRequest(_ connection: LocalSocket) throws(Refusal) -> (Account, [String: String]) {
        var poller = pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: options.requestTimeout.components.seconds * 1000 + options.requestTimeout.components.attoseconds / 1_000_000_000_000_000)
        var ready: Int32
        repeat { ready = poll(&poller, 1, milliseconds) } while ready < 0 && errno == EINTR
        guard ready > 0 else { throw Refusal("no request within \(options.requestTimeout)") }
        let message: LocalSocket.Message?
        do { message = try connection.receive(maxLength: LauncherMessage.maxRequestBytes) } catch {
            throw Refusal("the request was over \(LauncherMessage.maxRequestBytes) bytes or \(LocalSocket.maxDescriptors) descriptors, or could not be read")
        }
        guard let message else { throw Refusal("the connection closed before a request") }
        if !message.descriptors.isEmpty {
            message.descriptors.forEach { close($0) }
            throw Refusal("a request carries no descriptors")
        }
        guard let want = LauncherMessage.decode(.want, LauncherMessage.Want.self, message.bytes) else {
            throw Refusal("the request is not one the launcher knows")
        }
        if let problem = LauncherMessage.environmentProblem(want.environment) { throw Refusal(problem) }
        return (try account(uid: want.account), want.environment)
    }

    /// The protected account `uid` and its worker user, or why not.
    func account(uid: uid_t) throws(Refusal) -> Account {
        guard let name = Self.user(uid: uid) else { throw Refusal("there is no account with uid \(uid)") }
        guard !options.reservedNames.contains(name), !name.isEmpty, !name.hasPrefix("."), !name.contains("/") else {
            throw Refusal("uid \(uid) (\(name)) cannot be a protected account")
        }
        var info = stat()
        let configuration = options.configurationFolder + "/" + name + ".toml"
        guard lstat(configuration, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw Refusal("uid \(uid) (\(name)) is not a protected account: there is no \(configuration)")
        }
        let workerUser = SandboxedAnalysis.Options.guardianWorkerUser(forAccount: uid)
        guard let worker = Self.user(named: workerUser) else {
            throw Refusal("there is no worker user \(workerUser) for \(name) ('quarantine guardian enable --user \(name)' makes it)")
        }
        // Never a user or group with any right of its own: not root, not the launcher's or the
        // guardian's, not the protected account itself (which could then trace its worker).
        let forbiddenUsers: Set<uid_t> = [0, getuid(), geteuid(), options.peerUID, uid]
        let forbiddenGroups: Set<gid_t> = [0, getgid(), getegid()]
        guard !forbiddenUsers.contains(worker.uid), !forbiddenGroups.contains(worker.gid) else {
            throw Refusal("the worker user \(workerUser) is uid \(worker.uid) gid \(worker.gid): root's, the launcher's, the guardian's or the account's own, which a worker must never be")
        }
        return Account(uid: uid, name: name, workerUser: workerUser, workerUID: worker.uid, workerGID: worker.gid)
    }

    // MARK: - The worker

    /// What the worker is given of the world: its runtime folder as descriptor 4, what the
    /// guardian asked for of ``LauncherMessage/passedVariables``, and nothing else.
    func workerEnvironment(_ asked: [String: String]) -> [String: String] {
        var environment = asked.filter { LauncherMessage.passedVariables.contains($0.key) }
        environment["PATH"] = "/usr/bin:/bin"
        environment["HOME"] = "/nonexistent"
        environment["QUARANTINE_DATA_DIR"] = "/proc/self/fd/\(AnalysisWorkerProcess.runtimeDescriptor)"
        environment[AnalysisWorkerProcess.runtimeDescriptorVariable] = "\(AnalysisWorkerProcess.runtimeDescriptor)"
        // The Swift runtime's crash backtracer starts a program: the sandbox refuses it.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return environment
    }

    /// Starts the worker and hands the guardian its ends; the worker's pid and pidfd.
    func launch(_ account: Account, environment asked: [String: String], to connection: LocalSocket) throws(Refusal) -> (pid: pid_t, pidfd: Int32) {
        // Root's record beside the models (ModelDigestRecord) spares each worker hashing them.
        ModelCatalog(dataFolder: options.runtimeFolder).recordDigests()
        let runtime = open(options.runtimeFolder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard runtime >= 0 else { throw Refusal("cannot open the runtime folder \(options.runtimeFolder): \(String(cString: strerror(errno)))") }
        defer { close(runtime) }
        let guardianEnd: LocalSocket, workerEnd: LocalSocket
        do { (guardianEnd, workerEnd) = try LocalSocket.pair() } catch { throw Refusal("cannot make the worker's socket pair: \(error)") }
        defer { guardianEnd.close(); workerEnd.close() }
        var errors: [Int32] = [-1, -1]
        guard qsys_pipe_cloexec(&errors) == 0 else { throw Refusal("cannot make the worker's error pipe: \(String(cString: strerror(errno)))") }
        defer { close(errors[0]); close(errors[1]) }

        let name = options.executable == SandboxedAnalysis.Options.ownExecutable ? SandboxedAnalysis.Options.ownPath : options.executable
        let argv = ([name] + options.arguments).map { strdup($0) } + [nil]
        let envp = workerEnvironment(asked).sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: Int32 = 0, pidfd: Int32 = -1
        var reason = [CChar](repeating: 0, count: 256)
        let status = reason.withUnsafeMutableBufferPointer { buffer in
            qsys_launch_as_user(options.executable, argv, envp, account.workerUID, account.workerGID, workerEnd.descriptor, runtime, errors[1],
                                &pid, &pidfd, buffer.baseAddress, buffer.count)
        }
        guard status == 0 else {
            throw Refusal("cannot start the analysis worker: \(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        do {
            try connection.send(LauncherMessage.encode(.started, LauncherMessage.Started(pid: pid)), descriptors: [guardianEnd.descriptor, errors[0]])
        } catch {
            _ = qsys_kill_as_user(pidfd, account.workerUID)
            _ = Self.reap(pid)
            close(pidfd)
            throw Refusal("the guardian did not take the worker: \(error)")
        }
        return (pid, pidfd)
    }

    /// Waits for the worker's end, or the guardian's "kill" or hang-up (then SIGKILLs it);
    /// says how it ended.
    func watch(_ worker: (pid: pid_t, pidfd: Int32), account: Account, connection: LocalSocket) -> String {
        var killed: String?
        while true {
            var pollers = [pollfd(fd: worker.pidfd, events: Int16(POLLIN), revents: 0)]
            if killed == nil { pollers.append(pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&pollers, nfds_t(pollers.count), killed == nil ? -1 : 5000)
            if ready < 0 {
                if errno == EINTR { continue }
                killed = killed ?? "stopped: poll failed"
                _ = qsys_kill_as_user(worker.pidfd, account.workerUID)
                continue
            }
            if pollers[0].revents != 0 { break }
            if ready == 0 {
                // Killed 5 s ago and still there: again.
                _ = qsys_kill_as_user(worker.pidfd, account.workerUID)
                continue
            }
            guard killed == nil, pollers.count > 1, pollers[1].revents != 0 else { continue }
            let message: LocalSocket.Message?
            do { message = try connection.receive(maxLength: 64) } catch { message = nil }
            message?.descriptors.forEach { close($0) }
            switch message {
            case let message? where message.bytes == [LauncherMessage.Kind.kill.rawValue] && message.descriptors.isEmpty:
                killed = "killed at the guardian's request"
            case .some:
                killed = "killed: the guardian sent a message the launcher does not take"
            case nil:
                killed = "killed: the guardian's connection closed"
            }
            if qsys_kill_as_user(worker.pidfd, account.workerUID) != 0 && errno != ESRCH {
                options.log("worker launcher: cannot stop worker \(worker.pid): \(String(cString: strerror(errno)))")
            }
        }
        let how = Self.reap(worker.pid)
        return killed.map { "\($0) (\(how))" } ?? how
    }

    /// Waits for `pid` and says how it ended.
    static func reap(_ pid: pid_t) -> String { WorkerConnection.reap(pid) }

    // MARK: - Support

    static func setTimeouts(_ descriptor: Int32, receive: Duration, send: Duration) {
        for (option, duration) in [(SO_RCVTIMEO, receive), (SO_SNDTIMEO, send)] {
            var value = timeval(tv_sec: Int(duration.components.seconds), tv_usec: Int(duration.components.attoseconds / 1_000_000_000_000))
            _ = setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// The name of the user `uid` (getpwuid_r: MT-safe).
    public static func user(uid: uid_t) -> String? {
        var entry = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return String(cString: entry.pw_name)
    }

    /// The user `name`'s uid and primary group (getpwnam_r: MT-safe).
    public static func user(named name: String) -> (uid: uid_t, gid: gid_t)? {
        var entry = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return (entry.pw_uid, entry.pw_gid)
    }
}
