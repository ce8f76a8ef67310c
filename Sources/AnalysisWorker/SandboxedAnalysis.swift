import DownloadOrigins
import Foundation
import MediaDecoding
import SensitivityAnalysis
import Locking
import ServiceSupport

/// Analysis in a separate, confined process: the service (or agent) that may move files never
/// parses them. Each file is opened here and handed to the worker as a descriptor; the worker
/// answers with the verdict. A worker that crashes, or is silent about a file for longer than
/// the deadline (killed), costs that worker and its files in flight: a new one is started, and
/// each of those files is tried once more alone, in a worker of its own, so the file that
/// really kills it is known. A file that kills that one too comes back as a failure
/// (`analysis_crashed`, `analysis_timed_out`) for `on_error` to decide: a poison file never
/// brings the service down, nor into a crash loop.
public final class SandboxedAnalysis: Sendable {
    /// Why the worker cannot analyse, in its words (models missing, sandbox refused).
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The worker ended before its hello without saying why: a crash or a kill from outside,
        /// not a worker that said it cannot analyse (``spawn()`` starts it again once at once).
        var endedBeforeHello = false
        init(_ description: String, endedBeforeHello: Bool = false) {
            self.description = description
            self.endedBeforeHello = endedBeforeHello
        }
    }

    public struct Options: Sendable {
        /// The `quarantine` binary (its `analysis-worker` command is the worker).
        public var executable: String
        public var arguments: [String]
        /// The worker's whole environment (keep it small: the model folder, the log level).
        public var environment: [String: String]
        public var configuration: SensitivityAnalyzer.Configuration
        /// A file with neither a verdict nor progress for this long has hung its worker.
        public var deadline: Duration
        /// No file may take longer than this, whatever progress its worker reports (a worker
        /// that reports progress forever is stopped here): ``absoluteDeadlineFactor`` times
        /// `deadline` unless set.
        public var absoluteDeadline: Duration
        /// The user the workers run as (the guardian service's `quarantine-worker`), from
        /// ``workerUserVariable``; nil: the caller's own user (the per-user agent).
        public var workerUser: String?
        /// The primary worker ends after this long with no file to judge (it holds the models,
        /// about 145 MB); the next file starts one again. nil: it runs as long as the analysis.
        public var idleExit: Duration?
        /// Whether the first worker starts with the analysis (true) or with the first file
        /// (false: an agent that sees no file never loads the models; only what is needed to
        /// start one, the runtime and both models, is checked at once, so a missing one is said
        /// at start all the same).
        public var startAtOnce = true
        /// Told, with why, when a worker that ended before its hello without saying why was
        /// started again at once (``spawn()``): the service logs it.
        public var onStartedAgain: (@Sendable (_ why: String) -> Void)?

        /// The worker launcher's socket (a guardian service's), from ``launcherVariable``: with
        /// ``account`` set, workers are asked of the launcher, which starts them as the account's
        /// own worker user; without a socket there none starts (never one here, as this process's
        /// user). Without ``account`` (a person's own agent) they are started here.
        public var launcher: String?
        /// The protected account whose files the workers judge (its uid), from ``accountVariable``.
        public var account: UInt32?

        /// Names the workers' own user (read by the service, not passed to the worker).
        public static let workerUserVariable = "QUARANTINE_WORKER_USER"
        /// Names the worker launcher's socket (read by the service, not passed to the worker).
        public static let launcherVariable = "QUARANTINE_WORKER_LAUNCHER"
        /// The protected account's uid, for the launcher (read by the service, not passed to the worker).
        public static let accountVariable = "QUARANTINE_WORKER_ACCOUNT"
        /// The guardian service's workers' shared user (packaging/sysusers.d/quarantine.conf),
        /// used where the account has no worker user of its own.
        public static let guardianWorkerUser = "quarantine-worker"

        /// The user of the workers of the guardian service protecting the account `uid`
        /// (`quarantine-w1001`), made by `guardian enable`: workers of different accounts are
        /// then different users, which the kernel keeps apart (signals, ptrace, /proc, limits,
        /// priorities) whatever seccomp and Landlock let through.
        public static func guardianWorkerUser(forAccount uid: UInt32) -> String { "quarantine-w\(uid)" }

        /// The account's own worker user when it exists, else the shared one.
        public static func guardianWorkerUserInForce(forAccount uid: UInt32) -> String {
            let own = guardianWorkerUser(forAccount: uid)
            var entry = passwd(), result: UnsafeMutablePointer<passwd>?
            var buffer = [CChar](repeating: 0, count: 4096)
            return getpwnam_r(own, &entry, &buffer, buffer.count, &result) == 0 && result != nil ? own : guardianWorkerUser
        }
        /// The absolute per-file deadline, in silent deadlines: 15, so 30 minutes at the default 120 s.
        public static let absoluteDeadlineFactor = 15

        public init(executable: String = Options.ownExecutable, arguments: [String] = ["analysis-worker"], environment: [String: String],
                    configuration: SensitivityAnalyzer.Configuration, deadline: Duration = .seconds(120), absoluteDeadline: Duration? = nil,
                    idleExit: Duration? = nil) {
            self.executable = executable
            self.idleExit = idleExit
            self.arguments = arguments
            self.configuration = configuration
            self.deadline = deadline
            self.absoluteDeadline = absoluteDeadline ?? deadline * Self.absoluteDeadlineFactor
            workerUser = environment[Self.workerUserVariable].flatMap { $0.isEmpty ? nil : $0 }
            launcher = environment[Self.launcherVariable].flatMap { $0.hasPrefix("/") ? $0 : nil }
            account = environment[Self.accountVariable].flatMap { UInt32($0) }
            var kept = environment.filter { Self.passedVariables.contains($0.key) }
            // The Swift runtime's crash backtracer starts a program: the sandbox refuses it.
            kept["SWIFT_BACKTRACE"] = "enable=no"
            if let json = try? JSONEncoder().encode(configuration) {
                kept[AnalysisWorkerProcess.configurationVariable] = String(decoding: json, as: UTF8.self)
            }
            self.environment = kept
        }

        /// What the worker needs of the caller's environment: where the models are, how much
        /// to log, and the test-only crash switch.
        static let passedVariables: Set<String> = ["HOME", "XDG_DATA_HOME", "QUARANTINE_DATA_DIR", "QUARANTINE_LOG_LEVEL", "LANG", "LC_ALL", "PATH",
                                                   AnalysisWorkerProcess.testOnlyCrashMarkerVariable]

        /// This process's own binary, as the kernel holds it: started through `/proc/self/exe`,
        /// it runs even where its path is not reachable by this user (a binary in a 0700 folder
        /// started for another account by a wrapper).
        public static let ownExecutable = "/proc/self/exe"

        /// The path of this process's binary (for messages and `ps`).
        public static var ownPath: String { ModelCatalog.executablePath() ?? CommandLine.arguments[0] }
    }

    struct State {
        var primary: WorkerConnection?
        var spawning: Task<WorkerConnection, any Error>?
        /// Every live worker, for the deadline watch.
        var connections: [WorkerConnection] = []
        var problem: String?
        var stopped = false
        /// Files being judged (or waiting for the primary to start): no idle exit meanwhile.
        var busy = 0
        /// When the last file was finished, or the primary started: the idle time counts from here.
        var lastActive = ContinuousClock.now
        /// When the primary ended for lack of work (``Options/idleExit``), until one starts again.
        var idleSince: Date?
        /// How long the last primary took to start (process, models, warm-up, seal).
        var lastStart: Duration?
        /// How the last primary said it is confined.
        var confinement: String?
        /// No worker started yet: the first file starts it (``Options/startAtOnce`` false).
        var notStarted = false
        /// Told when the primary ends idle or starts again (the agent publishes its status).
        var onChange: (@Sendable () -> Void)?
        /// Workers started so far (primaries and solo retries).
        var starts = 0
        /// Workers started again at once because the one before ended before its hello.
        var startsAgainAfterEnd = 0
    }

    /// What the primary worker is doing, for status.
    public enum Activity: Sendable, Equatable {
        /// Running, with these process ids (the primary, and any solo worker retrying a file).
        case running([pid_t])
        /// Being started for a file.
        case starting
        /// Ended on purpose after ``Options/idleExit`` without a file; the next file starts one.
        case idle(since: Date)
        /// None started yet (``Options/startAtOnce`` false): the first file starts one.
        case notStarted
        /// None runs: the last start failed (see ``problem``).
        case none
    }

    public let options: Options
    /// The workers' own user and group, when the service can switch to them.
    let identity: AnalysisSandbox.Identity?
    /// Why the workers run as the caller's user although ``Options/workerUser`` names another.
    public let identityProblem: String?
    let state = Locked(State())
    /// Opening files runs here (never on Swift's cooperative threads).
    let pool: WorkerPool
    let videoPool: WorkerPool
    /// Wakes the deadline watch (a file on its way, a stop).
    let wake = DispatchSemaphore(value: 0)
    /// Every worker is started from its thread (see ``WorkerLauncher``).
    let launcher = WorkerLauncher(name: "worker-launcher")

    /// Files judged at once.
    public var workers: Int { options.configuration.workers }

    /// Starts the first worker (or, with ``Options/startAtOnce`` false, checks what it needs and
    /// leaves it to the first file); throws what keeps it from analysing.
    public init(options: Options) throws(Problem) {
        self.options = options
        (identity, identityProblem) = try Self.identity(for: options.workerUser)
        pool = WorkerPool(threads: max(1, options.configuration.workers), name: "open", lowPriority: options.configuration.lowPriority)
        videoPool = WorkerPool(threads: max(1, options.configuration.workers / 2), name: "open-video", lowPriority: options.configuration.lowPriority)
        if options.startAtOnce {
            let clock = ContinuousClock.now
            let first = try launcher.runWaiting { () throws(Problem) in try self.spawn() }
            let took = ContinuousClock.now - clock
            state.withLock { s in
                s.primary = first
                s.confinement = first.confinement
                s.lastStart = took
                s.lastActive = .now
            }
        } else {
            try checkBeforeWorker()
            state.withLock { $0.notStarted = true }
        }
        // The watch looks every 200 ms while files are being judged; otherwise it sleeps until the
        // idle exit is due, or until a file comes (no wake-ups at all while nothing happens).
        let wake = self.wake
        let watch = Thread { [weak self] in
            while true {
                let pause: Duration?
                do {
                    guard let self, !self.state.withLock({ $0.stopped }) else { return }
                    for connection in self.state.withLock({ s in s.connections.removeAll { !$0.isAlive }; return s.connections }) {
                        connection.enforceDeadline()
                    }
                    self.endIdlePrimary()
                    pause = self.nextWatch()
                }
                if let pause {
                    let nanoseconds = pause.components.seconds * 1_000_000_000 + pause.components.attoseconds / 1_000_000_000
                    _ = wake.wait(timeout: .now() + .nanoseconds(Int(max(1_000_000, nanoseconds))))
                } else {
                    wake.wait()
                }
            }
        }
        watch.name = "worker-deadline"
        watch.start()
    }

    deinit { stop() }

    /// Why analysis is not possible at the moment (a new worker could not start), if so.
    public var problem: String? { state.withLock { $0.problem } }

    /// The process ids of the live workers (for status and tests).
    public var workerProcesses: [pid_t] { state.withLock { $0.connections.filter(\.isAlive).map(\.pid) } }

    /// What the workers are doing: running, starting, idle on purpose, or none (a problem).
    public var activity: Activity {
        state.withLock { s in
            let live = s.connections.filter(\.isAlive).map(\.pid)
            if s.spawning != nil { return .starting }
            if let primary = s.primary, primary.isAlive { return .running(live) }
            if let since = s.idleSince { return .idle(since: since) }
            if s.notStarted && live.isEmpty { return .notStarted }
            return live.isEmpty ? .none : .running(live)
        }
    }

    /// How long the last primary worker took to start, from its spawn to its hello (the models
    /// loaded, every decoder warmed up, the file system sealed).
    public var lastStartDuration: Duration? { state.withLock { $0.lastStart } }

    /// Workers started so far, primaries and solo retries (for tests).
    var starts: Int { state.withLock { $0.starts } }

    /// Workers started again at once because the one before ended before its hello (``spawn()``; for tests).
    var startsAgainAfterEnd: Int { state.withLock { $0.startsAgainAfterEnd } }

    /// Calls `handler` (on a thread of its own choosing, never under a lock) whenever the primary
    /// worker ends idle or starts again.
    public func onActivityChange(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onChange = handler }
    }

    // MARK: - Idle exit

    /// Ends the primary worker when it has had nothing to judge for ``Options/idleExit``: it
    /// holds the models (most of the memory analysis costs), and the next file starts one
    /// again. Decided under the lock that ``primary()`` takes, with the count of files that
    /// are on their way to it, so a file never gets a worker that is being ended.
    func endIdlePrimary(now: ContinuousClock.Instant = .now) {
        guard let idle = options.idleExit else { return }
        let ended = state.withLock { s -> (WorkerConnection, (@Sendable () -> Void)?)? in
            guard !s.stopped, s.busy == 0, s.spawning == nil, let primary = s.primary, primary.isAlive, primary.inFlight == 0,
                  now - s.lastActive >= idle else { return nil }
            s.primary = nil
            s.idleSince = Date()
            return (primary, s.onChange)
        }
        guard let (worker, changed) = ended else { return }
        worker.stop()
        // Told once the process is gone (or after the stop's grace, when it is killed).
        Thread.detachNewThread {
            let end = ContinuousClock.now + .seconds(3)
            while worker.isAlive && ContinuousClock.now < end { usleep(10_000) }
            changed?()
        }
    }

    /// How long the deadline watch may sleep: 200 ms while a file is judged or on its way (its
    /// deadline is watched), until the idle exit is due while the primary waits for work, and
    /// indefinitely (nil) otherwise, until ``wake`` is signalled.
    func nextWatch(now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { s in
            if s.busy > 0 || s.spawning != nil || s.connections.contains(where: { $0.isAlive && $0.inFlight > 0 }) { return .milliseconds(200) }
            guard let idle = options.idleExit, let primary = s.primary, primary.isAlive else { return nil }
            return max(.milliseconds(10), s.lastActive + idle - now)
        }
    }

    /// Counts a file on its way to the primary worker (no idle exit until it is done) and wakes
    /// the deadline watch.
    func beginUse() {
        state.withLock { $0.busy += 1 }
        wake.signal()
    }

    /// A file is done with the primary worker: the idle time counts from now.
    func endUse() {
        state.withLock { s in
            s.busy -= 1
            s.lastActive = .now
        }
    }

    /// Stops every worker.
    public func stop() {
        let connections = state.withLock { s -> [WorkerConnection] in
            s.stopped = true
            s.spawning?.cancel()
            return s.connections
        }
        wake.signal()
        for connection in connections { connection.stop() }
    }

    /// How the first worker said it is confined (its user, seccomp, Landlock), and what keeps
    /// it from its own user, if anything: for the service's start line.
    public var confinement: String {
        let (worker, launched) = state.withLock { ($0.primary?.confinement ?? $0.confinement ?? "not reported", $0.primary?.isLaunched ?? false) }
        if launched { return worker + "; started by the worker launcher" }
        return identityProblem.map { "\(worker); \($0)" } ?? worker
    }

    /// The user and group named `user`, and whether this process may switch a worker to them
    /// (CAP_SETUID and CAP_SETGID in its effective set). Throws when the user does not exist.
    static func identity(for user: String?) throws(Problem) -> (AnalysisSandbox.Identity?, String?) {
        guard let user else { return (nil, nil) }
        var entry = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil else {
            throw Problem("there is no user \(user) for the analysis workers (systemd-sysusers makes it from /usr/lib/sysusers.d/quarantine.conf; 'quarantine guardian enable' too)")
        }
        let identity = AnalysisSandbox.Identity(uid: entry.pw_uid, gid: entry.pw_gid)
        if identity.uid == getuid() { return (identity, nil) }
        guard Self.holdsSetIdentityCapabilities() else {
            return (nil, "the analysis workers run as this service's own user, not \(user): the worker launcher's socket is missing (is quarantine-worker-launcher.service running?) and this service cannot change users itself (no CAP_SETUID and CAP_SETGID)")
        }
        return (identity, nil)
    }

    /// CAP_SETGID (6) and CAP_SETUID (7) in this process's effective set.
    public static func holdsSetIdentityCapabilities() -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let bits = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return bits & (1 << 6) != 0 && bits & (1 << 7) != 0
    }

    /// Starts a worker (``spawnOnce()``); one that ends before its hello without saying why is
    /// started again once, at once. Found so: a worker killed by libdispatch's thread-pool
    /// monitor (SIGILL) during its start, on a machine whose two cores were saturated and the
    /// agent held to a quarter of one, left a person's agent without analysis (a card not
    /// hidden) until the next try 30 s later. A worker that says it cannot analyse (a model
    /// missing, the sandbox refused) is not started again here: that would fail the same way.
    func spawn() throws(Problem) -> WorkerConnection {
        do {
            return try spawnOnce()
        } catch let problem where problem.endedBeforeHello {
            // Not while stopping: the worker may have ended because the service is going.
            let stopped = state.withLock { s -> Bool in
                if !s.stopped { s.startsAgainAfterEnd += 1 }
                return s.stopped
            }
            if stopped { throw problem }
            do {
                let connection = try spawnOnce()
                options.onStartedAgain?(problem.description)
                return connection
            } catch let again where again.endedBeforeHello {
                throw Problem("\(again.description), twice in a row (the first: \(problem.description))")
            }
        }
    }

    func spawnOnce() throws(Problem) -> WorkerConnection {
        let limits = WorkerConnection.Limits(deadline: options.deadline, absoluteDeadline: options.absoluteDeadline)
        // A guardian service (a protected account): the launcher starts the worker as the
        // account's worker user (this service cannot change its user). Missing, refused or
        // unreachable, there is no worker now (the files stay held), never one started here
        // instead: this service's own user owns every account's database, PIN hash and vault.
        if let account = options.account {
            let launcher = try launcherInPlace()
            let connection: WorkerConnection
            do { connection = try WorkerConnection.launch(launcher: launcher, account: account, environment: options.environment, limits: limits) } catch {
                // A start that failed because the launcher went away meanwhile (a worker it killed
                // as it stopped, a socket it left behind) is said as such: the status names what
                // to fix, not the worker's end it caused.
                if !Self.launcherListens(launcher) { throw Problem(Self.launcherMissing(launcher)) }
                throw error
            }
            state.withLock { s in
                s.connections.append(connection)
                s.starts += 1
            }
            return connection
        }
        let connection = try WorkerConnection.spawn(executable: options.executable, arguments: options.arguments,
                                                    environment: options.environment, limits: limits,
                                                    identity: identity?.uid == getuid() ? nil : identity, runtimeFolder: runtimeFolder)
        state.withLock { s in
            s.connections.append(connection)
            s.starts += 1
        }
        return connection
    }

    /// The data folder passed to a worker that takes another user (it may not reach the models
    /// and the runtime by path); nil when it runs as this process's user.
    var runtimeFolder: String? {
        identity == nil || identity?.uid == getuid() ? nil : options.environment["QUARANTINE_DATA_DIR"]
    }

    /// The worker launcher's socket, for a guardian service's worker; throws when none is there.
    func launcherInPlace() throws(Problem) -> String {
        guard let launcher = options.launcher, Self.isSocket(launcher) else { throw Problem(Self.launcherMissing(options.launcher)) }
        return launcher
    }

    /// What the first worker needs, checked without starting one (``Options/startAtOnce`` false):
    /// the launcher's socket for a guardian service's worker; for one started here, the runtime
    /// and both models (``ModelCatalog/checkBeforeWorker()``, on the catalog ``spawn()`` records for).
    func checkBeforeWorker() throws(Problem) {
        if options.account != nil {
            _ = try launcherInPlace()
            return
        }
        let catalog = WorkerConnection.catalog(runtimeFolder: runtimeFolder, environment: options.environment)
        do { try catalog.checkBeforeWorker() } catch { throw Problem("\(error)") }
    }

    /// Why a guardian service's analysis has no worker while its launcher's socket is missing.
    static func launcherMissing(_ launcher: String?) -> String {
        "the worker launcher is not running (nothing listens on \(launcher ?? "its socket: none is configured")); no analysis worker starts "
            + "as this service's own user, which owns every account's state: start quarantine-worker-launcher.service"
    }

    /// Whether the worker launcher's socket of a guardian service's analysis is missing now
    /// (false for an agent's own analysis, which needs no launcher).
    public static func launcherIsMissing(_ options: Options) -> Bool {
        options.account != nil && launcherSocket(options) == nil
    }

    /// The identity (device, inode, change time) of a guardian service's worker launcher socket, nil when
    /// there is none (or no launcher is needed): a launcher that starts makes a new socket, so a
    /// change says it is back, even where the one that died left its socket file behind.
    public static func launcherSocket(_ options: Options) -> [UInt64]? {
        guard options.account != nil, let path = options.launcher else { return nil }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
        // The change time too: an inode number is soon used again on a tmpfs such as /run.
        return [UInt64(info.st_dev), UInt64(info.st_ino), UInt64(info.st_ctim.tv_sec), UInt64(info.st_ctim.tv_nsec)]
    }

    /// Whether a process listens on the socket at `path`: false when there is no socket there (or
    /// a link), or nobody accepts on it (a launcher that died or is stopping leaves its socket
    /// file behind: ECONNREFUSED). A connection made to find out is closed at once (the launcher
    /// refuses it as one that closed before a request). Any other failure (EACCES, EAGAIN when its
    /// backlog is full) counts as listening: something is there.
    static func launcherListens(_ path: String) -> Bool {
        guard isSocket(path) else { return false }
        do {
            let probe = try LocalSocket.connect(to: path)
            probe.close()
            return true
        } catch {
            return ![ECONNREFUSED, ENOENT, ENOTSOCK].map({ String(cString: strerror($0)) }).contains(error.cause ?? "")
        }
    }

    /// Whether a socket is at `path` (lstat: a link there is not one).
    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }

    /// Runs blocking work for a file (hashing) off Swift's cooperative threads.
    public func runBlocking<T: Sendable>(video: Bool = false, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await (video ? videoPool : pool).run(work)
    }

    /// The live primary worker, started anew when the last one died.
    func primary() async throws -> WorkerConnection {
        let task = state.withLock { s -> Task<WorkerConnection, any Error>? in
            if let primary = s.primary, primary.isAlive { return nil }
            if let spawning = s.spawning { return spawning }
            let task = Task { [launcher] in
                let clock = ContinuousClock.now
                let connection = try await launcher.run { () throws(Problem) in try self.spawn() }
                let took = ContinuousClock.now - clock
                self.state.withLock { $0.lastStart = took }
                return connection
            }
            s.spawning = task
            return task
        }
        guard let task else { return state.withLock { $0.primary! } }
        do {
            let connection = try await task.value
            let changed = state.withLock { s -> (@Sendable () -> Void)? in
                s.primary = connection
                s.problem = nil
                s.confinement = connection.confinement
                s.lastActive = .now
                if s.spawning == task { s.spawning = nil }
                defer { s.idleSince = nil; s.notStarted = false }
                return s.idleSince == nil && !s.notStarted ? nil : s.onChange
            }
            changed?()
            return connection
        } catch {
            state.withLock { s in
                s.problem = "\(error)"
                // Not idle any more: broken (``activity`` says none, ``problem`` why).
                s.idleSince = nil
                s.notStarted = false
                if s.spawning == task { s.spawning = nil }
            }
            throw error
        }
    }

    /// The report on the file at `path`, judged by a worker.
    public func report(forFileAt path: String, policy: SensitivityPolicy, video: VideoOptions, isVideo: Bool = false,
                       progress: @escaping @Sendable (VideoProgress) -> Void = { _ in }) async -> FileReport {
        let descriptor: Int32
        do {
            descriptor = try await (isVideo ? videoPool : pool).run {
                let file = try MediaFile(path: path)
                return try withExtendedLifetime(file) { try Self.duplicate(file.descriptor) }
            }
        } catch {
            return FileReport(path: path, kind: .other, type: .other, analysis: nil, failure: .init(error, path: path), elapsedMilliseconds: 0)
        }
        defer { close(descriptor) }
        beginUse()
        defer { endUse() }
        let worker: WorkerConnection
        do { worker = try await primary() } catch {
            return Self.notNow(path, "no analysis worker: \(error)")
        }
        let first = await worker.judge(path: path, descriptor: descriptor, policy: policy, video: video, progress: progress)
        let death: WorkerConnection.Death
        switch first {
        case .report(let report): return report
        case .cancelled: return Self.notNow(path, "analysis was cancelled")
        case .died(let how): death = how
        }
        // Once more, alone: if it was another file that killed the worker, this one passes now.
        let solo: WorkerConnection
        do { solo = try await launcher.run { () throws(Problem) in try self.spawn() } } catch {
            return Self.notNow(path, "no analysis worker: \(error)")
        }
        defer { solo.stop() }
        switch await solo.judge(path: path, descriptor: descriptor, policy: policy, video: video, progress: progress) {
        case .report(let report):
            return report
        case .cancelled:
            return Self.notNow(path, "analysis was cancelled")
        case .died(let again):
            let code = again.hung ? "analysis_timed_out" : "analysis_crashed"
            let failure = FileReport.Failure(code: code, message: "\(path): the analysis was given up: \(again) (the first time: \(death))")
            return FileReport(path: path, kind: isVideo ? .video : .image, type: .other, analysis: nil, failure: failure, elapsedMilliseconds: 0)
        }
    }

    /// A picture of the file at `path` for its blurred preview, decoded by a worker (no model
    /// runs); nil when none could be decoded or no worker runs. Never retried: a file that
    /// kills a worker here simply has no preview.
    public func previewFrame(forFileAt path: String) async -> RGBImage? {
        let opened = try? await pool.run { () throws -> Int32 in
            let file = try MediaFile(path: path)
            return try withExtendedLifetime(file) { try Self.duplicate(file.descriptor) }
        }
        guard let descriptor = opened else { return nil }
        defer { close(descriptor) }
        beginUse()
        defer { endUse() }
        guard let worker = try? await primary() else { return nil }
        let outcome = await worker.judge(path: path, descriptor: descriptor, policy: .defaults(for: .adult), video: VideoOptions(), previewOnly: true) { _ in }
        if case .report(let report) = outcome { return report.flaggedFrame }
        return nil
    }

    // MARK: - Browser history

    /// A ``HistoryParser`` that has a worker of this analysis parse the copied bytes of a
    /// browser's history (its user's, possibly crafted), never this process.
    public var historyParser: HistoryParser {
        { [weak self] query, files in
            guard let self else { throw Problem("the analysis has stopped") }
            return try self.lookUpHistory(query, files: files)
        }
    }

    /// What the history in `files` says of `query`, from the primary worker (kept from its idle
    /// exit meanwhile), or from a worker started for this alone when none runs. Blocks the
    /// calling thread (the lookup is synchronous, as the copy before it).
    func lookUpHistory(_ query: HistoryQuery, files: HistoryFiles) throws(Problem) -> HistoryMatch? {
        let timeout = query.timeLimit + .seconds(5)
        beginUse()
        defer { endUse() }
        if let live = state.withLock({ s -> WorkerConnection? in s.primary.flatMap { $0.isAlive ? $0 : nil } }) {
            return try live.lookUpHistory(query, files: files, timeout: timeout).get()
        }
        let solo = try launcher.runWaiting { () throws(Problem) in try self.spawn() }
        defer { solo.stop() }
        return try solo.lookUpHistory(query, files: files, timeout: timeout).get()
    }

    /// A report that keeps the file queued (no verdict, no `on_error`): cancelled.
    static func notNow(_ path: String, _ why: String) -> FileReport {
        FileReport(path: path, kind: .other, type: .other, analysis: nil,
                   failure: .init(code: MediaError.Code.cancelled.rawValue, message: "\(path): \(why)"), elapsedMilliseconds: 0)
    }

    static func duplicate(_ fd: Int32) throws -> Int32 {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw Problem("cannot duplicate a descriptor: \(String(cString: strerror(errno)))") }
        return copy
    }
}
