import Foundation
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport
import Locking

/// One running analysis worker process, seen from the service: it spawns it, hands it files,
/// gathers what it answers, and notices when it dies or hangs.
final class WorkerConnection: Sendable {
    /// Why a worker is gone.
    struct Death: Sendable, CustomStringConvertible {
        var description: String
        /// Killed because a file took longer than the deadline.
        var hung: Bool
    }

    /// How one file ended.
    enum Outcome: Sendable {
        case report(FileReport)
        case died(Death)
        case cancelled
    }

    struct Pending {
        var continuation: CheckedContinuation<Outcome, Never>
        var progress: @Sendable (VideoProgress) -> Void
        var frame: [UInt8] = []
        var lastActivity: ContinuousClock.Instant
    }

    struct State {
        var pending: [UInt64: Pending] = [:]
        var nextId: UInt64 = 1
        var death: Death?
        /// Set when this connection killed the worker for a file over its deadline.
        var killedForHanging = false
    }

    let pid: pid_t
    let socket: LocalSocket
    let state = Locked(State())
    let deadline: Duration

    private init(pid: pid_t, socket: LocalSocket, deadline: Duration) {
        self.pid = pid
        self.socket = socket
        self.deadline = deadline
    }

    // MARK: - Starting

    /// Starts a worker and waits for its hello. Throws when it cannot start, or says it cannot
    /// analyse (the models are missing, say): the worker's own words.
    static func spawn(executable: String, arguments: [String], environment: [String: String], deadline: Duration,
                      helloTimeout: Duration = .seconds(120)) throws(SandboxedAnalysis.Problem) -> WorkerConnection {
        let mine: LocalSocket, theirs: LocalSocket
        do { (mine, theirs) = try LocalSocket.pair() } catch { throw .init("cannot make the worker's socket pair: \(error)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, theirs.descriptor, AnalysisWorkerProcess.socketDescriptor)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default signal handling and an empty mask (the service traps SIGTERM, SIGHUP and
        // SIGINT), and a process group of its own: a Ctrl-C in the agent's terminal is the
        // agent's to handle; the worker dies with its parent (PR_SET_PDEATHSIG).
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        let name = executable == SandboxedAnalysis.Options.ownExecutable ? SandboxedAnalysis.Options.ownPath : executable
        let argv = ([name] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        theirs.close()
        guard status == 0 else { throw .init("cannot start the analysis worker \(executable): \(String(cString: strerror(status)))") }

        // The hello: the models loaded, or why not.
        var poller = pollfd(fd: mine.descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(helloTimeout.components.seconds * 1000)
        while true {
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else {
                kill(pid, SIGKILL)
                _ = reap(pid)
                throw .init("the analysis worker did not start within \(helloTimeout.components.seconds) s")
            }
            break
        }
        guard let message = try? mine.receive(), let hello = WorkerMessage.decode(WorkerMessage.Hello.self, message.bytes),
              message.bytes.first == WorkerMessage.Kind.hello.rawValue else {
            let death = reap(pid)
            throw .init("the analysis worker ended before it was ready (\(death))")
        }
        if let error = hello.error {
            kill(pid, SIGKILL)
            _ = reap(pid)
            throw .init(error)
        }
        let connection = WorkerConnection(pid: pid, socket: mine, deadline: deadline)
        let reader = Thread { connection.readUntilGone() }
        reader.name = "worker-\(pid)"
        reader.start()
        return connection
    }

    /// Waits for `pid` and says how it ended.
    static func reap(_ pid: pid_t) -> String {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return "not a child any more" }
        }
        let signal = status & 0x7f
        if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
        return "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
    }

    // MARK: - Judging

    var isAlive: Bool { state.withLock { $0.death == nil } }
    var inFlight: Int { state.withLock { $0.pending.count } }

    /// Hands `descriptor` (open on the file at `path`) to the worker and waits for its verdict.
    func judge(path: String, descriptor: Int32, policy: SensitivityPolicy, video: VideoOptions, previewOnly: Bool = false,
               progress: @escaping @Sendable (VideoProgress) -> Void) async -> Outcome {
        let id = state.withLock { s -> UInt64 in defer { s.nextId += 1 }; return s.nextId }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let death = state.withLock { s -> Death? in
                    if let death = s.death { return death }
                    s.pending[id] = Pending(continuation: continuation, progress: progress, lastActivity: .now)
                    return nil
                }
                if let death { continuation.resume(returning: .died(death)); return }
                let request = WorkerMessage.Request(id: id, path: path, policy: policy, video: video, previewOnly: previewOnly ? true : nil)
                do { try socket.send(WorkerMessage.encode(.request, request), descriptors: [descriptor]) } catch {
                    // The worker is gone: the reader resumes every pending file with its death.
                    _ = shutdown(socket.descriptor, Int32(SHUT_RDWR))
                }
            }
        } onCancel: {
            let pending = state.withLock { $0.pending.removeValue(forKey: id) }
            guard let pending else { return }
            try? socket.send(WorkerMessage.encode(.cancel, WorkerMessage.Cancel(id: id)))
            pending.continuation.resume(returning: .cancelled)
        }
    }

    /// The reader: answers to their waiting files, until the worker is gone.
    private func readUntilGone() {
        while let message = try? socket.receive() {
            message.descriptors.forEach { close($0) }
            switch message.bytes.first.flatMap(WorkerMessage.Kind.init(rawValue:)) {
            case .progress:
                guard let update = WorkerMessage.decode(WorkerMessage.Progress.self, message.bytes) else { continue }
                let handler = state.withLock { s -> (@Sendable (VideoProgress) -> Void)? in
                    s.pending[update.id]?.lastActivity = .now
                    return s.pending[update.id]?.progress
                }
                handler?(update.video ?? VideoProgress(fraction: update.fraction))
            case .frame:
                guard let part = WorkerMessage.frameParts(message.bytes) else { continue }
                state.withLock { s in
                    guard var pending = s.pending[part.id], part.offset == pending.frame.count else { return }
                    pending.frame += part.bytes
                    pending.lastActivity = .now
                    s.pending[part.id] = pending
                }
            case .report:
                guard let report = WorkerMessage.decode(WorkerMessage.Report.self, message.bytes) else { continue }
                let pending = state.withLock { $0.pending.removeValue(forKey: report.id) }
                pending?.continuation.resume(returning: .report(report.fileReport(frame: pending?.frame)))
            default:
                continue
            }
        }
        let how = Self.reap(pid)
        let (pending, death) = state.withLock { s -> ([Pending], Death) in
            let hung = s.killedForHanging
            let death = Death(description: hung ? "it took longer than \(deadline.components.seconds) s, so it was stopped" : "the analysis worker \(how)", hung: hung)
            s.death = death
            defer { s.pending = [:] }
            return (Array(s.pending.values), death)
        }
        for file in pending { file.continuation.resume(returning: .died(death)) }
    }

    /// Kills the worker when a file has been silent (no verdict, no progress) longer than the
    /// deadline. Returns whether it did.
    @discardableResult
    func enforceDeadline(now: ContinuousClock.Instant = .now) -> Bool {
        let overdue = state.withLock { s -> Bool in
            guard s.death == nil, !s.killedForHanging, s.pending.values.contains(where: { now - $0.lastActivity > deadline }) else { return false }
            s.killedForHanging = true
            return true
        }
        if overdue { kill(pid, SIGKILL) }
        return overdue
    }

    /// Hangs up: the worker cancels what it has and exits; it is killed if it has not after
    /// `grace`.
    func stop(grace: Duration = .seconds(2)) {
        _ = shutdown(socket.descriptor, Int32(SHUT_RDWR))
        let pid = self.pid
        Thread.detachNewThread { [self] in
            let end = ContinuousClock.now + grace
            while isAlive && ContinuousClock.now < end { usleep(20_000) }
            if isAlive { kill(pid, SIGKILL) }
        }
    }
}
