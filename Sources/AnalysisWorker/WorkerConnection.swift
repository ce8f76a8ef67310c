import CSystemShims
import DownloadOrigins
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
        /// The path the service named (a report's own path is never believed).
        var path: String
        var frame: [UInt8] = []
        var lastActivity: ContinuousClock.Instant
        /// When the file was handed over: progress never extends past ``WorkerConnection/absoluteDeadline``.
        var started: ContinuousClock.Instant
    }

    struct State {
        var pending: [UInt64: Pending] = [:]
        var nextId: UInt64 = 1
        var death: Death?
        /// Set when this connection killed the worker for a file over its deadline.
        var killedForHanging = false
        /// Why this connection killed the worker, when it did (a deadline, a message it broke).
        var killReason: String?
        /// This connection sent the worker SIGKILL (for a reason above, or at a stop it outlived).
        var sentKill = false
        /// History lookups waiting for their answer (``lookUpHistory(_:files:timeout:)``).
        var histories: [UInt64: HistoryWait] = [:]
    }

    /// A history lookup waiting on a thread of the caller's for its answer.
    final class HistoryWait: Sendable {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<HistoryMatch?, SandboxedAnalysis.Problem>?>(nil)
        func finish(_ result: Result<HistoryMatch?, SandboxedAnalysis.Problem>) {
            let first = outcome.withLock { value -> Bool in
                guard value == nil else { return false }
                value = result
                return true
            }
            if first { done.signal() }
        }
    }

    /// The limits the service holds a worker to.
    struct Limits: Sendable {
        /// A file with neither a verdict nor progress for this long has hung its worker.
        var deadline: Duration
        /// No file may take longer than this, however much progress it reports.
        var absoluteDeadline: Duration
        /// The longest message the service reads (a frame packet, a report).
        var maxMessageBytes = 64 << 10
        /// The most pixel bytes of one file's flagged frame.
        var maxFrameBytes = WorkerMessage.maxFrameBytes
    }

    /// How the service reaches the worker's process.
    enum Process: Sendable {
        /// Its own child: it signals and reaps it itself.
        case child(pid_t)
        /// Started by the worker launcher as a user the service cannot signal: the launcher
        /// kills it when asked, and says how it ended.
        case launched(LaunchedWorker)
    }

    let process: Process
    let socket: LocalSocket
    let state = Locked(State())
    let limits: Limits
    /// How the worker says it is confined (its hello).
    let confinement: String?
    /// Its standard error, relayed into the service's log (nil for an adopted stand-in).
    let errors: WorkerErrorRelay?
    var deadline: Duration { limits.deadline }
    var pid: pid_t {
        switch process {
        case .child(let pid): return pid
        case .launched(let worker): return worker.pid
        }
    }
    /// Whether the worker launcher started it.
    var isLaunched: Bool { if case .launched = process { return true } else { return false } }

    private init(process: Process, socket: LocalSocket, limits: Limits, confinement: String?, errors: WorkerErrorRelay? = nil) {
        self.errors = errors
        self.process = process
        self.socket = socket
        self.limits = limits
        self.confinement = confinement
    }

    /// SIGKILLs the worker: itself, or through the launcher.
    func killWorker() {
        state.withLock { $0.sentKill = true }
        switch process {
        case .child(let pid): _ = kill(pid, SIGKILL)
        case .launched(let worker): worker.kill()
        }
    }

    /// Waits for the worker's end (reaps its child, or hears it from the launcher); how it ended.
    func waitForWorkerEnd() -> String {
        switch process {
        case .child(let pid): return Self.reap(pid)
        case .launched(let worker): return worker.waitForEnd()
        }
    }

    /// A connection to a worker already running as `pid` on `socket`, its hello received (tests
    /// drive a stand-in worker through this).
    static func adopt(pid: pid_t, socket: LocalSocket, limits: Limits) -> WorkerConnection {
        let connection = WorkerConnection(process: .child(pid), socket: socket, limits: limits, confinement: nil)
        let reader = Thread { connection.readUntilGone() }
        reader.name = "worker-\(pid)"
        reader.start()
        return connection
    }

    // MARK: - Starting

    /// Where a worker started with `runtimeFolder` and `environment` finds its runtime and models.
    static func catalog(runtimeFolder: String?, environment: [String: String]) -> ModelCatalog {
        runtimeFolder.map(ModelCatalog.init(dataFolder:)) ?? ModelCatalog.standard(environment: environment)
    }

    /// Starts a worker and waits for its hello. Throws when it cannot start, or says it cannot
    /// analyse (the models are missing, say): the worker's own words.
    /// With `identity`, the worker takes that user and group before it loads anything, and
    /// `runtimeFolder` (the models and ONNX Runtime, which its own user may not reach by path)
    /// is passed to it as descriptor 4.
    static func spawn(executable: String, arguments: [String], environment: [String: String], limits: Limits,
                      identity: AnalysisSandbox.Identity? = nil, runtimeFolder: String? = nil,
                      helloTimeout: Duration = .seconds(120)) throws(SandboxedAnalysis.Problem) -> WorkerConnection {
        let mine: LocalSocket, theirs: LocalSocket
        do { (mine, theirs) = try LocalSocket.pair() } catch { throw .init("cannot make the worker's socket pair: \(error)") }
        // The models are hashed here, where a record of it can be kept (ModelDigestRecord), not
        // at every start of a sandboxed worker that cannot write one.
        catalog(runtimeFolder: runtimeFolder, environment: environment).recordDigests()
        var environment = environment
        var folder: Int32 = -1
        defer { if folder >= 0 { close(folder) } }
        if let identity {
            environment[AnalysisWorkerProcess.identityVariable] = identity.description
            if let runtimeFolder {
                folder = open(runtimeFolder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                guard folder >= 0 else { throw .init("cannot open the runtime folder \(runtimeFolder) for the worker: \(String(cString: strerror(errno)))") }
                environment["QUARANTINE_DATA_DIR"] = "/proc/self/fd/\(AnalysisWorkerProcess.runtimeDescriptor)"
                environment[AnalysisWorkerProcess.runtimeDescriptorVariable] = "\(AnalysisWorkerProcess.runtimeDescriptor)"
            }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, theirs.descriptor, AnalysisWorkerProcess.socketDescriptor)
        // Its standard output goes nowhere, its errors into a pipe the service reads and logs
        // with the worker's name in front: never the service's own log file or journal stream,
        // which a worker could otherwise write lines into as the service, or truncate.
        var errors: [Int32] = [-1, -1]
        guard qsys_pipe_cloexec(&errors) == 0 else { throw .init("cannot make the worker's error pipe: \(String(cString: strerror(errno)))") }
        defer { close(errors[1]) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        if folder >= 0 { posix_spawn_file_actions_adddup2(&actions, folder, AnalysisWorkerProcess.runtimeDescriptor) }
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
        guard status == 0 else {
            close(errors[0])
            throw .init("cannot start the analysis worker \(executable): \(String(cString: strerror(status)))")
        }
        let (errorEnd, workerPid) = (errors[0], pid)
        let relay = WorkerErrorRelay.start(from: errorEnd, pid: workerPid)
        return try greet(.child(pid), socket: mine, limits: limits, helloTimeout: helloTimeout, errors: relay)
    }

    /// Asks the worker launcher at `launcher` for a worker judging the files of the protected
    /// account `account` (it runs as that account's worker user, which this service cannot
    /// become), and waits for its hello. `environment` is cut to what the launcher passes on.
    static func launch(launcher: String, account: UInt32, environment: [String: String], limits: Limits,
                       helloTimeout: Duration = .seconds(120)) throws(SandboxedAnalysis.Problem) -> WorkerConnection {
        let (worker, socket, errors) = try LaunchedWorker.start(socketPath: launcher, account: account, environment: environment)
        let workerPid = worker.pid
        let relay = WorkerErrorRelay.start(from: errors, pid: workerPid)
        return try greet(.launched(worker), socket: socket, limits: limits, helloTimeout: helloTimeout, errors: relay)
    }

    /// Waits for a started worker's hello and returns its connection; throws (the worker
    /// killed) when there is none in time, or it says it cannot analyse.
    static func greet(_ process: Process, socket mine: LocalSocket, limits: Limits, helloTimeout: Duration,
                      errors: WorkerErrorRelay? = nil) throws(SandboxedAnalysis.Problem) -> WorkerConnection {
        let pending = WorkerConnection(process: process, socket: mine, limits: limits, confinement: nil, errors: errors)
        // The hello: the models loaded, or why not.
        var poller = pollfd(fd: mine.descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(helloTimeout.components.seconds * 1000)
        while true {
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else {
                pending.killWorker()
                _ = pending.waitForWorkerEnd()
                throw .init("the analysis worker did not start within \(helloTimeout.components.seconds) s")
            }
            break
        }
        guard let message = try? mine.receive(), let hello = WorkerMessage.decode(WorkerMessage.Hello.self, message.bytes),
              message.bytes.first == WorkerMessage.Kind.hello.rawValue, message.descriptors.isEmpty else {
            pending.killWorker()
            let death = pending.waitForWorkerEnd()
            throw .init("the analysis worker ended before it was ready (\(death))", endedBeforeHello: true)
        }
        if let error = hello.error {
            pending.killWorker()
            _ = pending.waitForWorkerEnd()
            throw .init(WorkerMessage.Report.tame(.init(code: "hello", message: error)).message)
        }
        let connection = WorkerConnection(process: process, socket: mine, limits: limits, confinement: hello.confinement, errors: errors)
        let pid = connection.pid
        let reader = Thread { connection.readUntilGone() }
        reader.name = "worker-\(pid)"
        reader.start()
        return connection
    }

    /// The most a worker may write to the service's log: what it writes beyond is dropped.
    static let maxErrorBytes = 64 << 10

    /// Lines the libraries write at every worker start under the unit's sandbox, saying nothing
    /// the person can act on: ONNX Runtime's cpuinfo without /proc/cpuinfo (`ProcSubset=pid`; the
    /// instruction set comes from CPUID, measured no slower), and fontconfig with no writable
    /// cache (the worker may write nowhere: it reads the system's caches).
    static let expectedNoise = ["Error in cpuinfo: failed to parse processor information from /proc/cpuinfo", "Fontconfig error: No writable cache directories"]

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
    var inFlight: Int { state.withLock { $0.pending.count + $0.histories.count } }

    /// Hands the copied bytes of a browser's history (`files`) to the worker, which parses them,
    /// and waits on this thread (never Swift's cooperative pool: the reader thread answers) for
    /// what it says, up to `timeout`.
    func lookUpHistory(_ query: HistoryQuery, files: HistoryFiles, timeout: Duration) -> Result<HistoryMatch?, SandboxedAnalysis.Problem> {
        let wait = HistoryWait()
        let id = state.withLock { s -> UInt64? in
            guard s.death == nil else { return nil }
            defer { s.nextId += 1 }
            s.histories[s.nextId] = wait
            return s.nextId
        }
        guard let id else { return .failure(.init("the analysis worker is gone")) }
        let request = WorkerMessage.HistoryRequest(id: id, query: query, hasWAL: files.wal != nil, hasJournal: files.journal != nil)
        do {
            try socket.send(WorkerMessage.encode(.history, request), descriptors: [files.main] + [files.wal, files.journal].compactMap { $0 })
        } catch {
            _ = state.withLock { $0.histories.removeValue(forKey: id) }
            return .failure(.init("cannot hand the history to the analysis worker: \(error)"))
        }
        let seconds = timeout.components.seconds, nanoseconds = timeout.components.attoseconds / 1_000_000_000
        if wait.done.wait(timeout: .now() + .seconds(Int(seconds)) + .nanoseconds(Int(nanoseconds))) == .timedOut {
            _ = state.withLock { $0.histories.removeValue(forKey: id) }
            wait.finish(.failure(.init("the analysis worker did not answer about the history within \(seconds) s")))
        }
        return wait.outcome.withLock { $0 } ?? .failure(.init("no answer"))
    }

    /// Hands `descriptor` (open on the file at `path`) to the worker and waits for its verdict.
    func judge(path: String, descriptor: Int32, policy: SensitivityPolicy, video: VideoOptions, previewOnly: Bool = false,
               progress: @escaping @Sendable (VideoProgress) -> Void) async -> Outcome {
        let id = state.withLock { s -> UInt64 in defer { s.nextId += 1 }; return s.nextId }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let death = state.withLock { s -> Death? in
                    if let death = s.death { return death }
                    let now = ContinuousClock.now
                    s.pending[id] = Pending(continuation: continuation, progress: progress, path: path, lastActivity: now, started: now)
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

    /// The reader: answers to their waiting files, until the worker is gone. A message the
    /// worker has no business sending (too long, unreadable, a frame out of order or over its
    /// cap, a report whose frame does not add up) is a worker gone wrong, a decoder exploit
    /// perhaps: it is killed at once, and its files fail with what it did.
    private func readUntilGone() {
        while true {
            let message: LocalSocket.Message
            do {
                guard let received = try socket.receive(maxLength: limits.maxMessageBytes) else { break }
                message = received
            } catch {
                // A refused message is the worker's doing. Any other failure (ECONNRESET: the
                // worker ended with messages of the service's unread, a crash say) is its end,
                // told below by how it ended (was: reported as a message over the cap).
                if LocalSocket.isRefusal(error), isAlive && !state.withLock({ $0.killReason != nil }) {
                    killForViolation("it sent a message over \(limits.maxMessageBytes) bytes or with descriptors")
                }
                break
            }
            if !message.descriptors.isEmpty {
                message.descriptors.forEach { close($0) }
                killForViolation("it sent descriptors, which a worker never does")
                break
            }
            if let violation = handle(message.bytes) {
                killForViolation(violation)
                break
            }
        }
        let how = waitForWorkerEnd()
        // Died of a signal this service did not send (a trap, an abort; not a SIGKILL, which
        // leaves no last words): what it wrote last into the log.
        if how.hasPrefix("killed by signal"), !how.hasPrefix("killed by signal \(SIGKILL) "), !state.withLock({ $0.sentKill }), let errors {
            errors.reportDeath("died, \(how)")
        }
        let (pending, histories, death) = state.withLock { s -> ([Pending], [HistoryWait], Death) in
            let hung = s.killedForHanging
            let death = Death(description: s.killReason ?? "the analysis worker \(how)", hung: hung)
            s.death = death
            defer { s.pending = [:]; s.histories = [:] }
            return (Array(s.pending.values), Array(s.histories.values), death)
        }
        for file in pending { file.continuation.resume(returning: .died(death)) }
        for wait in histories { wait.finish(.failure(.init("\(death)"))) }
    }

    /// Handles one message; returns what is wrong with it, if anything.
    func handle(_ bytes: [UInt8]) -> String? {
        guard let first = bytes.first, let kind = WorkerMessage.Kind(rawValue: first) else {
            return "it sent a message of no known kind"
        }
        switch kind {
        case .progress:
            guard let update = WorkerMessage.decode(WorkerMessage.Progress.self, bytes) else { return "it sent an unreadable progress message" }
            let handler = state.withLock { s -> (@Sendable (VideoProgress) -> Void)? in
                s.pending[update.id]?.lastActivity = .now
                return s.pending[update.id]?.progress
            }
            handler?(update.video ?? VideoProgress(fraction: update.fraction))
            return nil
        case .frame:
            guard let part = WorkerMessage.frameParts(bytes) else { return "it sent a malformed frame packet" }
            return state.withLock { s -> String? in
                guard var pending = s.pending[part.id] else { return nil }
                guard part.offset == pending.frame.count else {
                    return "it sent frame bytes at offset \(part.offset) where \(pending.frame.count) was next"
                }
                let (total, overflow) = pending.frame.count.addingReportingOverflow(part.bytes.count)
                guard !overflow, total <= limits.maxFrameBytes else { return "it sent a frame over \(limits.maxFrameBytes) bytes" }
                s.pending[part.id] = nil
                pending.frame += part.bytes
                pending.lastActivity = .now
                s.pending[part.id] = pending
                return nil
            }
        case .report:
            guard let report = WorkerMessage.decode(WorkerMessage.Report.self, bytes) else { return "it sent an unreadable report" }
            let pending = state.withLock { $0.pending.removeValue(forKey: report.id) }
            guard let pending else { return nil }
            switch report.fileReport(frame: pending.frame, path: pending.path, maxFrameBytes: limits.maxFrameBytes) {
            case .success(let fileReport):
                pending.continuation.resume(returning: .report(fileReport))
                return nil
            case .failure(let problem):
                // Back in the table, so that its death reaches this file too.
                state.withLock { $0.pending[report.id] = pending }
                return problem.description
            }
        case .origin:
            guard let answer = WorkerMessage.decode(WorkerMessage.HistoryAnswer.self, bytes) else { return "it sent an unreadable history answer" }
            guard let wait = state.withLock({ $0.histories.removeValue(forKey: answer.id) }) else { return nil }
            if let match = answer.match, !match.isPlausible { return "it sent a history answer that is no URL, or over \(HistoryMatch.maximumURLBytes) bytes" }
            if let problem = answer.problem { wait.finish(.failure(.init(WorkerMessage.Report.tame(.init(code: "history", message: problem)).message))) }
            else { wait.finish(.success(answer.match)) }
            return nil
        case .hello, .request, .cancel, .history:
            return "it sent a message only the service sends, or a second hello"
        }
    }

    /// Kills the worker for a message it should not have sent.
    func killForViolation(_ what: String) {
        let first = state.withLock { s -> Bool in
            guard s.killReason == nil else { return false }
            s.killReason = "the analysis worker was stopped: \(what)"
            return true
        }
        if first { killWorker() }
    }

    /// Kills the worker when a file has been silent (no verdict, no progress) longer than the
    /// deadline, or has taken longer than the absolute deadline whatever progress it reported.
    /// Returns whether it did.
    @discardableResult
    func enforceDeadline(now: ContinuousClock.Instant = .now) -> Bool {
        let overdue = state.withLock { s -> Bool in
            guard s.death == nil, !s.killedForHanging, s.killReason == nil else { return false }
            if s.pending.values.contains(where: { now - $0.lastActivity > limits.deadline }) {
                s.killReason = "it took longer than \(limits.deadline.components.seconds) s without a sign of progress, so it was stopped"
            } else if s.pending.values.contains(where: { now - $0.started > limits.absoluteDeadline }) {
                s.killReason = "it took longer than the absolute limit of \(limits.absoluteDeadline.components.seconds) s for one file (progress does not extend it further), so it was stopped"
            } else {
                return false
            }
            s.killedForHanging = true
            return true
        }
        if overdue {
            killWorker()
            // Its socket too: a process it cloned could still hold the other end, and the
            // reader must see the end now, not when the last holder goes.
            _ = shutdown(socket.descriptor, Int32(SHUT_RDWR))
        }
        return overdue
    }

    /// Hangs up: the worker cancels what it has and exits; it is killed if it has not after
    /// `grace`.
    func stop(grace: Duration = .seconds(2)) {
        _ = shutdown(socket.descriptor, Int32(SHUT_RDWR))
        Thread.detachNewThread { [self] in
            let end = ContinuousClock.now + grace
            while isAlive && ContinuousClock.now < end { usleep(20_000) }
            if isAlive { killWorker() }
        }
    }
}
