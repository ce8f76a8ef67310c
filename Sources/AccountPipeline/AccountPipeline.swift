import QuarantineBase
import AnalysisWorker
import FolderWatch
import GuardianAPI
import Foundation
import Logging
import MediaDecoding
import PathBytes
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceLifecycle
import ServiceSupport
import UnixSignals
import Locking

/// One account's pipeline: watches the folders where media arrives, and deals with each new file
/// before the person opens it. A person's agent (QuarantineAgent, with the analysis bus beside it)
/// and the guardian service (one per protected account, with its socket beside it) each run one.
///
/// inotify (one thread) -> settled candidates -> the backlog in the audit database (so a crash or a
/// stop loses nothing) -> a window of it in memory -> analysis (pictures and videos in separate
/// lanes, low priority) -> the vault, the audit log and a notification.
public final class AccountPipeline: Service, Sendable {
    public struct Options: Sendable {
        public var environment: [String: String]
        /// The configuration file (re-read on SIGHUP).
        public var configPath: String
        /// Overrides the configuration's `analysis.workers`.
        public var workers: Int?
        /// The binary whose `analysis-worker` command judges files (default: this one).
        public var workerExecutable: String?
        /// Who the audit log names as acting: "agent", or "guardian service".
        public var actor = "agent"
        /// The configuration folder the browsers use, for their download history (default:
        /// `XDG_CONFIG_HOME` of `environment`; the guardian service sets the account's own).
        public var browserConfigHome: String?
        /// Where held files are held: a folder on the same mount as the watched folders (the
        /// guardian service: the account's home), and whose folders they go back into (the
        /// account). Default: the data folder, and this process's own user.
        public var holdingParent: String?
        public var protectedAccount: uid_t?
        /// The protected account's home (the guardian service): in child mode it is watched whole,
        /// recursively, whatever the configuration lists, so that no folder the account makes,
        /// renames or points its browser at is left out (issue 26). Nil for a person's own agent.
        public var protectedHome: String?
        /// Folders every account writes in, watched in child mode for the protected account's own
        /// files, as this process reaches them (the guardian service:
        /// ``SharedFolder/standard(mounts:)``). Nil: `/tmp`, `/var/tmp` and `/dev/shm` themselves.
        public var sharedFolders: [SharedFolder]?
        /// Folders where removable media are mounted for the protected account (`/media/<account>`,
        /// `/run/media/<account>`): in child mode every medium mounted below them, before the start
        /// or while it runs, is watched for the account's own files. Empty: none.
        public var removableMediaFolders: [String] = []
        /// Set (the guardian service): the configuration fails closed. A file that cannot be read
        /// or is wrong never stops the agent: the last good copy, kept here at each good read, stays
        /// in force (or, without one, the built-in defaults in child mode), and `status` says so.
        /// Nil (a person's agent): a wrong file at start is an error (exit 78).
        public var lastGoodConfigurationPath: String?
        /// The protected account's runtime folder (`/run/user/<uid>`, its `XDG_RUNTIME_DIR`), as
        /// this process reaches it (the guardian service: ``SharedFolder/runtimeFolder(uid:mounts:)``):
        /// its own and writable, a tmpfs logind mounts at its first login and unmounts after its
        /// last session. In child mode it is watched for the account's own files while it is
        /// mounted, like a removable medium. Nil: not watched.
        public var runtimeFolder: SharedFolder?
        /// The blurred previews this service hands out (the guardian service's socket): a file
        /// with exactly those bytes (the copy `quarantine show` makes) is not held nor judged.
        /// Nil: none.
        public var servedPreviews: ServedPreviews?
        /// Who judges files, when given (a test's stand-in engine): made for the settings in
        /// force instead of the worker process or the models that `agent.sandbox` chooses.
        public var engine: (@Sendable (Settings) throws -> any AnalysisEngine)?
        /// Called with each list of watch roots between computing it and giving it to the watcher
        /// (start, reload, a mount change), in the roots' turn (``AccountPipeline/rootsTurn``): a
        /// test widens that window with it to show the turn keeps the lists in order. Nil: nothing.
        public var rootsComputed: (@Sendable ([WatchRoot]) -> Void)?
        /// Services run beside the pipeline's own parts, in its group, each made for the pipeline
        /// once it has started (a person's agent: the analysis bus for applications). They are
        /// started after the pipeline's parts and shut down before them, after the dispatcher.
        public var companions: [@Sendable (AccountPipeline) -> any Service] = []
        /// Whether a stop was asked (`quarantine agent` reads SIGTERM from its first instant):
        /// a start that waits (for a database another process keeps busy) ends with
        /// ``StoppedWhileStarting`` instead of waiting on. Nil: never (the wait goes on).
        public var stopRequested: (@Sendable () -> Bool)?
        public init(environment: [String: String] = ProcessInfo.processInfo.environment, configPath: String? = nil, workers: Int? = nil) {
            self.environment = environment
            self.configPath = configPath ?? Settings.userConfigurationPath(environment: environment)
            self.workers = workers
        }
    }

    /// Computes the watch roots for `settings` and gives them to the status and `watcher`; only
    /// in the roots' turn (``rootsTurn``), so that no older list is applied after a newer one.
    /// A root kept keeps its status (with the direction it has now).
    func applyRoots(_ settings: Settings, to watcher: FolderWatcher?) -> [WatchRoot] {
        let roots = currentRoots(settings)
        options.rootsComputed?(roots)
        state.withLock { s in
            let keep = s.roots
            s.roots = [:]
            for root in roots {
                s.roots[root.path] = keep[root.path].map { var r = $0; r.direction = FolderDirection(root.direction); return r }
                    ?? AgentStatus.Root(path: root.path, direction: FolderDirection(root.direction), state: "starting")
            }
        }
        watcher?.setRoots(roots)
        return roots
    }

    /// Candidates are written to the database in batches gathered over this long.
    static let intakeBatchDelay = Duration.milliseconds(15)
    /// The status in the database is rewritten at most this often while something changes.
    static let statusInterval = Duration.milliseconds(250)
    /// How long the guardian service lets a file keep changing before it is checked as it is.
    static let strictSettleBound = Duration.seconds(10)
    /// A file that crashed the agent this many times is given up (recorded, then `on_error`).
    static let maxAttempts = 2

    package let options: Options
    package let logger: Logger
    let vault: Vault
    /// Files held out of reach while they are checked (child mode, or `hold_while_checking`).
    let holding: Holding
    /// Which files were in flight if this process dies of a fatal signal (nil: it could not be opened).
    let crashJournal: CrashJournal?
    let lock: AgentLock
    let state: Locked<State>
    /// Taken while the watch roots are computed and given to the watcher (start, reload, a mount
    /// change): each list is applied whole and in the order computed, so a mount or a reload
    /// landing meanwhile is never overwritten by an older list, nor lost before the watcher exists.
    let rootsTurn = Locked(())
    let wakeStream: AsyncStream<Void>
    let wakeContinuation: AsyncStream<Void>.Continuation
    /// The dispatcher's own state (``Dispatcher``): what is in flight, and the counters.
    let dispatch = Dispatcher.State()
    /// The database watch's own state (``DatabaseWatch``): the gate and what is wrong.
    let databaseGate = DatabaseWatch.State()
    /// The status publisher's own state (``StatusPublisher``).
    let publication = StatusPublisher.State()
    /// The intake's own state (``FolderIntake``): the batches for the backlog, the flusher's requests.
    let intakeState = FolderIntake.State()
    /// SIGHUP and edits of the configuration file, handled one at a time by ``handleReloads()``
    /// (the ``Reloader``'s own state).
    let reloads = Reloader.State()
    /// The desktop notifications (the ``NotificationService``'s own state).
    let notifications = NotificationService.State()
    /// Items hidden before their browser wrote its download history, waited for by
    /// ``followOrigins()`` beside the analysis lanes (never holding a lane's place).
    let originFollowUps: AsyncStream<OriginFollowUp>
    let originFollowUpContinuation: AsyncStream<OriginFollowUp>.Continuation
    /// Told when analysis breaks (``analysisBroke(_:)``): wakes ``retryAnalyzer()``.
    let brokenSignals: AsyncStream<Void>
    let brokenContinuation: AsyncStream<Void>.Continuation
    let systemd: SystemdNotifier?
    let startedAt = Date()
    /// SIGHUP, trapped before the lock says the agent runs (see ``init(options:logger:hangups:)``).
    let hangups: UnixSignalsSequence?
    /// Told the settings after each reload that changed them (``observeSettings(_:)``).
    let settingsObservers = Locked<[@Sendable (Settings) -> Void]>([])

    /// What the parts really share (each part keeps its own state beside it: ``FolderIntake/State``,
    /// ``Reloader/State``, ``StatusPublisher/State``, ``DatabaseWatch/State``,
    /// ``NotificationService/State``, ``Dispatcher/State``):
    /// - the settings in force: every part acts on them, the reloader replaces them;
    /// - the engine and why analysis cannot go on, changed together (a loaded engine clears the
    ///   problem): the dispatcher judges with it, the upkeep restarts it, the status and the
    ///   analysis bus read both;
    /// - the watcher and the roots: the intake reads the watcher's events and marks the roots,
    ///   the reloader and the mount changes give it new roots, the status shows them;
    /// - the removable media mounted now and the mount watcher: inputs of the roots, from a
    ///   watcher thread that is not a part of the group;
    /// - the lifecycle (stopping, and the state `status` shows), which every part looks at.
    struct State {
        var settings: Settings
        /// Who judges files: a confined worker process (``SandboxedAnalysis``), or the models in
        /// this process when `agent.sandbox = false`.
        var engine: (any AnalysisEngine)?
        var problem: String?
        var watcher: FolderWatcher?
        var stopping = false
        var roots: [String: AgentStatus.Root] = [:]
        /// Removable media mounted below ``Options/removableMediaFolders`` now (their mount points),
        /// and the account's runtime folder while it is mounted (``Options/runtimeFolder``).
        var mediaRoots: [String] = []
        var mountWatcher: MountWatcher?
        var state = "starting"
    }

    /// Takes the per-user lock and opens the vault; nothing is watched until ``run()``.
    ///
    /// `hangups` should be made before this (as `quarantine agent` does): once the lock is taken,
    /// `quarantine watch` and `mode` send SIGHUP, whose default action would end the process.
    /// Without it, ``run()`` traps SIGHUP as its first step.
    public init(options: Options, logger: Logger, hangups: UnixSignalsSequence? = nil) throws {
        self.options = options
        self.logger = logger
        self.hangups = hangups
        lock = try AgentLock(environment: options.environment)
        vault = try Self.openVault(environment: options.environment, logger: logger, stopRequested: options.stopRequested ?? { false })
        holding = Holding(store: vault.store, parent: options.holdingParent, account: options.protectedAccount ?? geteuid())
        crashJournal = try? CrashJournal(databasePath: vault.store.path)
        let (settings, configurationProblem) = try Self.initialSettings(options, store: vault.store, logger: logger)
        state = Locked(State(settings: settings))
        (wakeStream, wakeContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (originFollowUps, originFollowUpContinuation) = AsyncStream<OriginFollowUp>.makeStream(bufferingPolicy: .bufferingNewest(256))
        (brokenSignals, brokenContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        systemd = SystemdNotifier(environment: options.environment)
        reloads.file.withLock { $0.problem = configurationProblem }
    }

    /// The configuration in force: the file through the core's one loader, with the mode never
    /// below what a guardian set with `quarantine mode` (``ModeInForce``).
    static func loadSettings(_ options: Options, store: AuditStore) throws -> Settings {
        // Failing closed, a file that went away is an error too: its defaults are adult mode.
        let file = try options.lastGoodConfigurationPath == nil ? ConfigurationFile.load(options.configPath, environment: options.environment)
            : ConfigurationFile.loadExisting(options.configPath)
        if let keep = options.lastGoodConfigurationPath { keepLastGood(file.text, at: keep) }
        return inForce(file.settings, options, store: store)
    }

    /// The settings at start. Failing closed (``Options/lastGoodConfigurationPath``), a wrong
    /// file gives the last good copy's settings, or the defaults in child mode, and the problem.
    static func initialSettings(_ options: Options, store: AuditStore, logger: Logger) throws -> (Settings, String?) {
        do { return (try loadSettings(options, store: store), nil) } catch let error as Settings.ConfigurationError {
            guard let lastGood = options.lastGoodConfigurationPath else { throw error }
            let settings: Settings
            let problem: String
            if let copy = try? ConfigurationFile.load(lastGood, environment: options.environment), copy.exists {
                settings = copy.settings
                problem = "configuration error: \(error); protecting with the last good settings (\(lastGood))"
            } else {
                settings = Settings(mode: .child)
                problem = "configuration error: \(error); protecting with the built-in defaults in child mode"
            }
            logger.critical("\(problem)")
            return (inForce(settings, options, store: store), problem)
        }
    }

    /// A copy of a configuration text that was read without error, written atomically, private.
    static func keepLastGood(_ text: String, at path: String) {
        if let kept = FileManager.default.contents(atPath: path), kept == Data(text.utf8) { return }
        let temporary = path + ".new"
        _ = unlink(temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, path) != 0 { _ = unlink(temporary) }
    }

    /// The file's settings as they are applied: the mode never lowered, the command line's workers.
    static func inForce(_ file: Settings, _ options: Options, store: AuditStore) -> Settings {
        var settings = file
        let recorded = (try? store.recordedMode())??.mode
        settings.mode = ModeInForce.resolve(configuration: .success(settings.mode), recorded: recorded, runningAgent: nil).mode
        if let workers = options.workers { settings.analyzer.workers = max(1, workers) }
        settings.analyzer.lowPriority = true
        return settings
    }

    // MARK: - Running

    /// The files the last run was judging when it died of a fatal signal each count one crash
    /// (a file that crashed it ``maxAttempts`` times is given up); then the journal is armed for
    /// this run. A SIGKILL or a power cut left nothing in it, so nothing is counted for those.
    func countCrashes() {
        guard let journal = crashJournal else {
            logger.warning("no crash journal beside the database: a crash in this process is not pinned on the file it was judging")
            return
        }
        for path in journal.takeCrashes() {
            let queued = (try? vault.store.recordCrash(path: path)) ?? false
            logger.error("the last run died of a fatal signal while judging this file\(queued ? ": one crash counted against it" : "")", metadata: ["path": "\(path)"])
        }
        if !journal.install() { logger.warning("cannot install the crash journal's signal handlers: \(String(cString: strerror(errno)))") }
    }

    public func run() async throws {
        let hangups: UnixSignalsSequence
        if let given = self.hangups { hangups = given } else { hangups = await UnixSignalsSequence(trapping: .sighup) }
        let settings = state.withLock { $0.settings }
        // The vault is ours from here on: interrupted moves are recovered now, and no other
        // process recovers under us while we run.
        let vault = self.vault
        let claim = try await onOwnThread("vault-claim") { try vault.claim() }
        defer { withExtendedLifetime(claim) {} }
        for line in claim.recovered { logger.notice("recovered an interrupted move: \(line)") }
        if claim.softenedPreviews > 0 { logger.notice("made \(claim.softenedPreviews) blurred preview(s) of an older version (24 px) again at 6 px") }
        for line in vault.tightened { logger.notice("made private (others could read it): \(line)") }
        // Files held when the last run ended go back (and are checked again as new arrivals).
        // (In child mode they stay held and are judged again where they are: see Agent+Work.)
        try await recoverHeldFiles(settings)
        countCrashes()
        // A damaged file is found before anything is analysed into it. Startup: a database that
        // cannot be opened at all made init throw (exit 1: systemd restarts the agent every 5 s,
        // and each start looks through the folders again, so nothing waits unseen), except one
        // kept busy by another process, which init waits for (``openVault(environment:logger:busyTimeout:)``); one that
        // opens but cannot be written or is damaged runs degraded, watching and queueing with
        // the gate closed, and recovers by itself when the database does, without a restart storm.
        let store = vault.store
        if let damage = try? await onOwnThread("database-check", { () -> DatabaseFaultError? in
            do { try store.probe(checkIntegrity: true); return nil } catch let error as DatabaseFaultError { return error }
        }) {
            closeDatabaseGate(damage.fault, detail: damage.underlying)
        }
        await loadAnalyzer(settings)
        setUpNotifications(settings)

        startWatchingMounts()
        // The roots are computed and the watcher stored in one turn: a mount noticed meanwhile
        // (the mount watcher runs from now on) either is in these roots or finds the watcher.
        let (roots, watcher) = rootsTurn.withLock { _ in
            let roots = currentRoots(settings)
            options.rootsComputed?(roots)
            let watcher = FolderWatcher(roots: roots, options: watchOptions(settings))
            state.withLock { s in
                s.watcher = watcher
                for root in roots { s.roots[root.path] = AgentStatus.Root(path: root.path, direction: FolderDirection(root.direction), state: "starting") }
            }
            return (roots, watcher)
        }
        try await onOwnThread("watch-start") { try watcher.start() }
        await watchConfigurationFile()
        let backlog = (try? vault.store.backlogCount()) ?? 0
        logger.notice("watching \(roots.map { "\(shown($0.path)) (\($0.direction.rawValue))" }.joined(separator: ", ")) in \(settings.mode.rawValue) mode; \(backlog) file(s) waiting from before")
        state.withLock { $0.state = "running" }
        publishNow()
        _ = systemd?.notify("READY=1\nSTATUS=Watching \(roots.count) folder(s) in \(settings.mode.rawValue) mode")

        // The agent's parts, each a service of one group (``parts(of:watcher:hangups:)``). A graceful
        // shutdown reaches it from the enclosing group: the dispatcher ends when stopping and
        // nothing is in flight, then the rest, each in turn.
        let parts = ServiceGroup(configuration: .init(services: Self.parts(of: self, watcher: watcher, hangups: hangups),
                                                      logger: Logger(label: "quarantine.agent.parts", factory: { _ in SwiftLogNoOpLogHandler() })))
        await withGracefulShutdownHandler {
            try? await parts.run()
        } onGracefulShutdown: {
            self.beginStopping()
        }
        // The watchers stop here, off the cooperative threads (their stop waits for their thread).
        let (folderWatcher, mountWatcher) = state.withLock { ($0.watcher, $0.mountWatcher) }
        let configWatcher = reloads.file.withLock { $0.watcher }
        _ = try? await onOwnThread("watch-stop") { mountWatcher?.stop(); configWatcher?.stop(); folderWatcher?.stop() }
        flushCandidates()
        state.withLock { $0.state = "stopped" }
        dispatch.work.withLock { $0.inFlight = [:] }
        publishNow()
        notifications.notifier?.close()
        logger.notice("stopped; \((try? vault.store.backlogCount()) ?? 0) file(s) wait for the next start")
    }

    /// SIGTERM/SIGINT: take no more work, cancel videos (they stay in the backlog), let pictures
    /// in flight finish (well under a second each), then exit.
    func beginStopping() {
        state.withLock { s in
            s.stopping = true
            s.state = "stopping"
        }
        let videos = dispatch.work.withLock { $0.videosInFlight }
        _ = systemd?.notify("STOPPING=1\nSTATUS=Stopping")
        logger.notice("stopping: no new work; \(videos) video(s) in flight go back to the queue and are checked at the next start")
        reloads.continuation.finish()
        // The dispatcher cancels the videos and waits for the pictures in flight.
        wakeContinuation.yield()
        publishSoon()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    // MARK: - For the services beside it

    /// Who judges files now (nil while analysis cannot start).
    public var engineInForce: (any AnalysisEngine)? { state.withLock { $0.engine } }

    /// Why analysis cannot go on, while it cannot.
    public var analysisProblem: String? { state.withLock { $0.problem } }

    /// The settings in force.
    public var settingsInForce: Settings { state.withLock { $0.settings } }

    /// Tells `observer` the settings after each reload that changed them.
    public func observeSettings(_ observer: @escaping @Sendable (Settings) -> Void) {
        settingsObservers.withLock { $0.append(observer) }
    }

    // MARK: - Configuration

    /// The folders to watch: the configured ones; in child mode for a protected account (the
    /// guardian service) its whole home first, then the folders every account writes in
    /// (`shared`, as this process reaches them) and the removable media mounted for it (`media`).
    static func watchRoots(_ settings: Settings, environment: [String: String], protectedHome: String? = nil,
                           shared: [SharedFolder]? = nil, media: [String] = []) -> [WatchRoot] {
        var roots = settings.watch.roots(mode: settings.mode, environment: environment).map {
            WatchRoot(path: $0.path, direction: $0.direction == .outgoing ? .outgoing : .incoming)
        }
        // The protected account's whole home comes first; the configured folders inside it stay
        // roots of their own (the deepest root names a file's direction).
        if let protectedHome, settings.mode == .child, !roots.contains(where: { $0.path == protectedHome }) {
            roots.insert(WatchRoot(path: protectedHome, direction: .incoming), at: 0)
        }
        // Folders every account can write in: watched for the protected account's own files.
        if protectedHome != nil, settings.mode == .child {
            let folders = (shared ?? SharedFolder.standard(mounts: nil)).filter { $0.unreachable == nil }.map(\.reachedAt) + media
            for folder in folders where !roots.contains(where: { $0.path == folder }) { roots.append(WatchRoot(path: folder, direction: .incoming)) }
        }
        return roots
    }

    /// The folders to watch now, under `settings`, with the removable media mounted now.
    func currentRoots(_ settings: Settings) -> [WatchRoot] {
        Self.watchRoots(settings, environment: options.environment, protectedHome: options.protectedHome,
                        shared: sharedFolders, media: state.withLock { $0.mediaRoots })
    }

    /// The folders every account writes in, as this process reaches them.
    var sharedFolders: [SharedFolder] { options.sharedFolders ?? SharedFolder.standard(mounts: nil) }

    /// The watched folders where only the protected account's own files are checked and held:
    /// the shared folders and the removable media mounted now. None for a person's own agent.
    func accountOnlyRoots() -> Set<String> {
        guard options.protectedHome != nil else { return [] }
        return Set(sharedFolders.filter { $0.unreachable == nil }.map(\.reachedAt)).union(state.withLock { $0.mediaRoots })
    }

    /// Whether a file noticed under `root` is one to check: under a shared folder or on a
    /// removable medium, only the protected account's own files (others belong to other accounts
    /// and services, and are never touched).
    func isAccountsFile(_ path: String, under root: String) -> Bool {
        guard let account = options.protectedAccount else { return true }
        return Self.isAccountsFile(path, under: root, account: account, accountOnly: accountOnlyRoots())
    }

    /// Whether a file noticed under `root` is `account`'s to check: any file where `root` is
    /// not one of `accountOnly`, else only a file that belongs to `account` (by lstat).
    static func isAccountsFile(_ path: String, under root: String, account: uid_t, accountOnly: Set<String>) -> Bool {
        guard accountOnly.contains(root) else { return true }
        var info = stat()
        return LongPaths.lstat(path, &info) == 0 && info.st_uid == account
    }

    /// A path as people know it (a file found through the unit's side path of `/tmp` is named `/tmp/...`).
    func shown(_ path: String) -> String { SharedFolder.shown(path, in: sharedFolders + (options.runtimeFolder.map { [$0] } ?? [])) }

    /// What a protected account can write that is not watched, in words for `guardian status`.
    /// `media`: the folders removable media are watched below.
    /// `runtime`: the account's runtime folder is watched while mounted (``Options/runtimeFolder``).
    static func unwatched(home: String, mode: AnalysisMode, media: [String] = [], shared: [SharedFolder] = [], runtime: SharedFolder? = nil) -> [String] {
        guard mode == .child else { return ["everything but the folders listed (adult mode)"] }
        var lines = protectedHomeExclusions.map { "\(home)/\($0.path) (\($0.reason))" }
        lines += shared.compactMap { folder in folder.unreachable.map { "\(folder.path) (\($0))" } }
        let watchedMedia = media.isEmpty ? "" : " (media mounted below \(media.joined(separator: " and ")) are watched)"
        lines.append("removable media an administrator mounts elsewhere, e.g. in /mnt\(watchedMedia), and other folders every account may write in"
            + " besides /tmp, /var/tmp and /dev/shm ('find / -xdev -type d -perm -0002' lists them)")
        // The account's runtime folder (XDG_RUNTIME_DIR, a tmpfs logind mounts at its login) is
        // its own and writable: watched while mounted where the service is told where it is.
        if runtime == nil { lines.append("the account's runtime folder /run/user/UID (XDG_RUNTIME_DIR; not watched yet)") }
        return lines
    }

    /// What is not watched in a protected home, each with its reason: the browsers' own caches
    /// (every picture a page shows lands there, already seen in the browser; analysing each one
    /// would cost the account's CPU for nothing it can open as a file of its own). Named by path
    /// under the home, never by a name the account could give a folder anywhere.
    public static let protectedHomeExclusions: [(path: String, reason: String)] = [
        (".cache/chromium", "Chromium's cache"), (".cache/google-chrome", "Chrome's cache"),
        (".cache/BraveSoftware", "Brave's cache"), (".cache/mozilla", "Firefox's cache"),
    ]

    func watchOptions(_ settings: Settings) -> FolderWatchOptions {
        var watch = FolderWatchOptions()
        watch.settleDelay = .milliseconds(settings.agent.settleMilliseconds)
        // The holding folders (see Holding) are never watched: by identity, not by a name the
        // watched account could give any folder.
        watch.excludedNames = settings.watch.exclude
        watch.excludedFolders = holding.holdingFolderIdentities()
        watch.excludedPaths = [Vault.baseDirectory(environment: options.environment)]
            + (settings.mode == .child ? options.protectedHome.map { home in Self.protectedHomeExclusions.map { home + "/" + $0.path } } ?? [] : [])
        watch.fallbackRescanInterval = .seconds(settings.agent.rescanSeconds)
        // A protected account could replace a root by a link to anywhere: never followed.
        watch.followRootLinks = options.protectedHome == nil
        if let account = options.protectedAccount, options.protectedHome != nil, settings.mode == .child {
            // In the shared folders (/tmp, /var/tmp, /dev/shm) only folders the account can write
            // in can receive a file of its own: the rest (other accounts' and services' trees, a
            // build's 100,000 files in /tmp) is neither walked nor watched.
            // The runtime folder too: the account's own, but other programs may make folders in it.
            let shared = sharedFolders.filter { $0.unreachable == nil }.map(\.reachedAt) + (options.runtimeFolder.map { [$0.reachedAt] } ?? [])
            let groups: [UInt32] = (AccountLookup.account(uid: account).map { AccountLookup.groups(of: $0) } ?? []).map { UInt32($0) }
            watch.skipFolder = { path, owner, group, mode in
                Self.isClosedToAccount(path: path, owner: owner, group: group, mode: mode, account: UInt32(account), groups: Set(groups), shared: shared)
            }
        }
        if options.protectedHome != nil && settings.mode == .child {
            // Nothing the account does keeps a file from being checked for long: writes through
            // a descriptor kept open are followed, and a file that never settles (a name or mtime
            // that keeps changing, a file that keeps growing) is reported as it is after 10 s.
            watch.strictSettling = true
            watch.settleGiveUp = Self.strictSettleBound
            watch.temporaryQuietPeriod = Self.strictSettleBound
        }
        return watch
    }

    /// Whether a folder below a shared folder is one the account cannot write in (neither its
    /// own, nor writable by all, nor by a group of its): no file of its own can appear there, so
    /// it is neither walked nor watched. Folders elsewhere (the home, media) are never skipped.
    static func isClosedToAccount(path: String, owner: UInt32, group: UInt32, mode: UInt32, account: UInt32, groups: Set<UInt32>,
                                  shared: [String]) -> Bool {
        guard shared.contains(where: { path.hasPrefix($0 + "/") }) else { return false }
        if owner == account || mode & 0o002 != 0 { return false }
        return !(mode & 0o020 != 0 && groups.contains(group))
    }

    /// Starts the analysis for `settings`: a confined worker process that loads the models
    /// (or, with `agent.sandbox = false`, the models in this process). On failure the agent
    /// keeps watching and queueing, says why in its status and log, and tries again later.
    func loadAnalyzer(_ settings: Settings) async {
        let options = self.options
        do {
            let engine: any AnalysisEngine = try await onOwnThread("analysis-start") { () throws -> any AnalysisEngine in
                if let make = options.engine { return try make(settings) }
                guard settings.agent.sandbox else {
                    return try SensitivityAnalyzer(policy: settings.policy, configuration: settings.analyzer, videoOptions: settings.video)
                }
                var worker = SandboxedAnalysis.Options(environment: options.environment, configuration: settings.analyzer,
                                                       deadline: .seconds(settings.agent.fileDeadlineSeconds),
                                                       idleExit: settings.agent.workerIdleSeconds > 0 ? .seconds(settings.agent.workerIdleSeconds) : nil)
                if let executable = options.workerExecutable { worker.executable = executable }
                // A person's agent starts its worker with the first file: one that sees none
                // never pays the models' load (about 0.3 s of CPU and 100 MB). A guardian service
                // starts it at once: the launcher's answer and the worker's confinement are known
                // before the child's first file.
                worker.startAtOnce = options.protectedAccount != nil
                worker.onStartedAgain = { [weak self] why in
                    self?.logger.warning("\(why); the analysis worker was started again at once")
                }
                return try SandboxedAnalysis(options: worker)
            }
            if let sandboxed = engine as? SandboxedAnalysis {
                // Said once per analysis, when its first worker runs (at once, or with the first file).
                let confinementSaid = Locked(false)
                if case .running = sandboxed.activity {
                    confinementSaid.withLock { $0 = true }
                    logger.notice("analysis worker confined: \(sandboxed.confinement)")
                }
                let idle = settings.agent.workerIdleSeconds
                sandboxed.onActivityChange { [weak self, weak sandboxed] in
                    guard let self, let sandboxed else { return }
                    switch sandboxed.activity {
                    case .idle:
                        self.logger.info("analysis worker ended after \(idle) s without a file (agent.worker_idle_seconds); the next file starts it again")
                    case .running(let pids):
                        let took = sandboxed.lastStartDuration.map { " in \(Self.milliseconds($0)) ms" } ?? ""
                        let first = confinementSaid.withLock { said in defer { said = true }; return !said }
                        if first {
                            self.logger.notice("analysis worker started\(took) for the first file (pid \(pids.map(String.init).joined(separator: ", ")))")
                            self.logger.notice("analysis worker confined: \(sandboxed.confinement)")
                        } else {
                            self.logger.info("analysis worker started again\(took) for a new file (pid \(pids.map(String.init).joined(separator: ", ")))")
                        }
                    case .starting, .notStarted, .none:
                        break
                    }
                    self.publishSoon()
                }
            }
            // In force only now, its watcher told: no file reaches it before its first start can be said.
            let (hadProblem, old) = state.withLock { s -> (Bool, (any AnalysisEngine)?) in
                defer { s.engine = engine; s.problem = nil }
                return (s.problem != nil, s.engine)
            }
            (old as? SandboxedAnalysis)?.stop()
            let place = (engine as? SandboxedAnalysis).map { sandboxed -> String in
                guard case .running(let pids) = sandboxed.activity else { return "in a confined worker process started with the first file (runtime and models checked)" }
                return "in the confined worker process \(pids.map(String.init).joined(separator: ", "))"
            } ?? "in this process (agent.sandbox = false)"
            if hadProblem { logger.notice("analysis ready: analysing again, \(place)") }
            else { logger.debug("analysis ready: \(settings.analyzer.workers) analysis thread(s), \(place)") }
        } catch {
            analysisBroke("\(error)")
        }
        wakeContinuation.yield()
        publishSoon()
    }

    /// `duration` in whole milliseconds.
    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// `date` as local time of day, HH:mm:ss.
    static func clockTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }

    /// What analyses files now, for the status: the worker running, idle on purpose (ended after
    /// `agent.worker_idle_seconds` without a file: not a problem), or the models in this process.
    static func analysisDescription(_ engine: (any AnalysisEngine)?, settings: Settings) -> String? {
        guard let engine else { return nil }
        guard let sandboxed = engine as? SandboxedAnalysis else { return "in the agent's own process (agent.sandbox = false)" }
        let idle = settings.agent.workerIdleSeconds
        let ends = idle > 0 ? "; it ends after \(idle) s without a file" : ""
        let start = sandboxed.lastStartDuration.map { ", about \(Self.milliseconds($0)) ms" } ?? ""
        switch sandboxed.activity {
        case .running(let pids):
            return "worker running (pid \(pids.map(String.init).joined(separator: ", ")))\(ends)"
        case .starting:
            return "worker starting for a new file"
        case .idle(let since):
            return "worker idle since \(Self.clockTime(since)) (ended after \(idle) s without a file; the next file starts it again\(start))"
        case .notStarted:
            return "worker not started yet (the first file starts it\(ends))"
        case .none:
            return "no worker running (the next file starts one)"
        }
    }

    /// Analysis cannot go on (models missing, no worker starts): files stay queued; says why
    /// once, and ``retryAnalyzer()`` tries again.
    func analysisBroke(_ reason: String) {
        let holds = state.withLock { $0.settings.mode == .child }
        let message = "cannot analyse: \(reason); files are queued\(holds ? " and new files are held out of reach" : "") until this is fixed (run 'make setup' or 'quarantine doctor')"
        let (first, old) = state.withLock { s -> (Bool, (any AnalysisEngine)?) in
            defer { s.engine = nil; s.problem = message }
            return (s.problem != message, s.engine)
        }
        (old as? SandboxedAnalysis)?.stop()
        if first {
            logger.error("\(message)")
            // The guardian sees it in the history, not only in the status.
            if holds { try? vault.store.record(.error, mode: .child, actor: options.actor, detail: message) }
        }
        publishSoon()
        brokenContinuation.yield()
        // Files waiting are held now, not when a worker is back.
        wakeContinuation.yield()
    }

    /// While analysis cannot start, tries again every 30 s, and at once when a guardian
    /// service's worker launcher is back: its socket appeared, or was made anew (looked at each
    /// second). No timer while analysis works: ``analysisBroke(_:)`` wakes it, however late it breaks.
    func retryAnalyzer() async {
        var signals = brokenSignals.makeAsyncIterator()
        var lastTry = ContinuousClock.now
        let launcher = { [options] (settings: Settings) -> [UInt64]? in
            settings.agent.sandbox ? SandboxedAnalysis.launcherSocket(SandboxedAnalysis.Options(environment: options.environment, configuration: settings.analyzer)) : nil
        }
        var launcherSeen = launcher(state.withLock { $0.settings })
        // Only a guardian service has a launcher to look for; a person's agent waits the 30 s.
        let step: Duration = options.protectedAccount == nil ? .seconds(30) : .seconds(1)
        while !Task.isCancelled {
            let broken = state.withLock { $0.problem != nil }
            guard broken else {
                if await signals.next() == nil { return }
                lastTry = .now
                launcherSeen = launcher(state.withLock { $0.settings })
                continue
            }
            try? await Task.sleep(for: step)
            if Task.isCancelled { return }
            let settings = state.withLock { $0.settings }
            let socket = launcher(settings)
            let launcherBack = socket != nil && socket != launcherSeen
            launcherSeen = socket
            guard launcherBack || ContinuousClock.now - lastTry >= .seconds(30) else { continue }
            if launcherBack { logger.notice("the worker launcher is back: starting the analysis worker") }
            lastTry = .now
            if state.withLock({ $0.problem != nil }) { await loadAnalyzer(settings) }
        }
    }

    func setUpNotifications(_ settings: Settings) {
        guard settings.agent.notifications else {
            notifications.desk.withLock { $0.description = "log only: notifications are off (agent.notifications)" }
            return
        }
        if let notifier = DesktopNotifier.connect(environment: options.environment) {
            notifications.desk.withLock { $0.notifier = notifier; $0.description = "desktop notifications (\(notifier.serverName))" }
            logger.info("desktop notifications through \(notifier.serverName)")
        } else {
            notifications.desk.withLock { $0.description = "log only: no desktop session (no D-Bus session bus or notification server)" }
            logger.info("no desktop notification server: quarantined items are only logged")
        }
    }

    /// What the person chose in a notification. A child task of ``run()``.
    func notificationActions() async {
        guard let notifier = notifications.notifier else { return }
        for await invoked in notifier.actionInvoked {
            guard let action = Notice.Action(key: invoked.key) else {
                logger.info("notification \(invoked.id): '\(invoked.key)' is not an action of this program; ignored")
                continue
            }
            logger.info("notification \(invoked.id): \(action.label) chosen")
            let settings = state.withLock { $0.settings }
            let (vault, options, logger) = (self.vault, self.options, self.logger)
            try? await onOwnThread("notification-action") {
                let review = Review(vault: vault, mode: ModeInForce.current(configurationPath: options.configPath, store: vault.store, environment: options.environment),
                                    actor: "notification")
                do {
                    switch try review.perform(action, viewingFolder: Review.viewingFolder(vault: vault, environment: options.environment),
                                              helpPage: settings.agent.helpPage) {
                    case .open(let copy):
                        var target: String? = copy
                        // Show preview: the person's review page at the item (the running one, or
                        // one started for it); the blurred copy only when no page can start. A
                        // person's own agent only: the guardian service (root) serves a protected
                        // account and never starts a page with its own rights.
                        if case .showPreview(let id) = action, options.protectedAccount == nil {
                            switch ReviewPageLauncher(environment: options.environment).open(item: id) {
                            case .running(let launcher):
                                target = launcher
                            case .started(let pid):
                                logger.info("Show preview: started the review page at item \(id) (pid \(pid))")
                                target = nil
                            case .failed(let why):
                                logger.warning("Show preview: the review page could not be started (\(why)); opening the blurred preview copy instead")
                            }
                        }
                        if let target, let problem = DetachedProgram.openOnDesktop(target, environment: options.environment) {
                            logger.warning("cannot open \(target): \(problem)")
                        }
                    case .putBack(let release):
                        logger.notice("put back from the notification: \(PathBytes.display(release.path))")
                    case .deleted:
                        logger.notice("deleted from the notification, its bytes blocked")
                    }
                } catch {
                    logger.warning("\(action.label): \(error)")
                }
            }
            // The decision is made: the notification has done its job.
            try? notifier.withdraw(invoked.id)
            _ = notifications.desk.withLock { $0.notifiedItems.removeValue(forKey: invoked.id) }
        }
    }

    /// Takes down the notifications of items that left the vault some other way (`release`,
    /// `block` or `purge` in a terminal): their buttons would be about a file that is gone.
    /// Looks every 5 s while any is shown. A child task of ``run()``.
    func withdrawStaleNotifications() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(5))
            let (notifier, shown) = notifications.desk.withLock { ($0.notifier, $0.notifiedItems) }
            guard let notifier, !shown.isEmpty else { continue }
            for (notification, itemId) in shown {
                guard let item = try? vault.store.item(itemId), item.status != .quarantined else { continue }
                try? notifier.withdraw(notification)
                _ = notifications.desk.withLock { $0.notifiedItems.removeValue(forKey: notification) }
                logger.debug("notification \(notification) withdrawn: item \(itemId) is \(item.status.rawValue)")
            }
        }
    }

    /// A guardian's own agent (root, or a member of `quarantine-guardians`, with a desktop
    /// session): asks the guardian services of the protected accounts every 10 s for release
    /// requests and tells each new one in a notification. A child task of ``run()``.
    func releaseRequestsOfProtectedAccounts() async {
        guard options.actor == "agent", notifications.notifier != nil, GuardianPaths.isGuardian(uid: getuid()) else { return }
        var told = Set<String>()
        while !Task.isCancelled {
            let found = (try? await onOwnThread("guardian-requests") { () -> [(String, Int64, String)] in
                var found: [(String, Int64, String)] = []
                for user in GuardianPaths.servedAccounts() {
                    guard let client = try? GuardianClient(user: user), let (reply, _) = try? client.send(GuardianWire.List()), let answer = reply.answer else { continue }
                    for (id, _) in answer.requests {
                        let name = answer.items.first { $0.id == id }.map { URL(fileURLWithPath: $0.originalPath).lastPathComponent } ?? "a picture"
                        found.append((user, id, name))
                    }
                }
                return found
            }) ?? []
            for (user, id, name) in found where told.insert("\(user)#\(id)").inserted {
                tell(.releaseRequested(user: user, id: id, name: name), image: nil, itemId: nil)
            }
            try? await Task.sleep(for: .seconds(10))
        }
    }

    /// Why the configuration is read again.
    enum ReloadTrigger: Sendable {
        /// SIGHUP: `systemctl --user reload quarantine`, or the CLI after it edited the file.
        case hangup
        /// The file was written, replaced or removed (by hand, in an editor).
        case fileEdited
    }

    /// Watches the configuration file, so that a hand edit takes effect without a signal. Its
    /// folder is created if missing (an empty folder in ~/.config); when it cannot be watched,
    /// SIGHUP still works and the log says so.
    func watchConfigurationFile() async {
        let path = options.configPath
        let watcher = FileChangeWatcher(path: path) { [reloads] in reloads.continuation.yield(.fileEdited) }
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try await onOwnThread("config-watch-start") { try watcher.start() }
            reloads.file.withLock { $0.watcher = watcher }
        } catch {
            logger.warning("edits of \(path) are not noticed by themselves (\(error)); after an edit run 'systemctl --user reload quarantine' or send the agent SIGHUP")
        }
    }

    /// SIGHUP (systemctl reload, or the CLI after it edits the configuration): re-read it.
    func handleHangups(_ signals: UnixSignalsSequence) async {
        for await _ in signals {
            if Task.isCancelled { return }
            reloads.continuation.yield(.hangup)
        }
    }

    /// Reloads one request at a time, whatever asked for it.
    func handleReloads() async {
        for await trigger in reloads.requests {
            if Task.isCancelled || isStopping { return }
            await reload(trigger)
        }
    }

    func reload(_ trigger: ReloadTrigger) async {
        let settings: Settings
        do { settings = try Self.loadSettings(options, store: vault.store) } catch {
            logger.error("configuration not reloaded, the previous one stays in force: \(error)")
            reloads.file.withLock { $0.problem = "configuration error: \(error); the previous settings stay in force" }
            publishNow()
            return
        }
        let hadProblem = reloads.file.withLock { file in
            defer { file.problem = nil }
            return file.problem != nil
        }
        if hadProblem { publishNow() }
        let (old, watcher) = state.withLock { ($0.settings, $0.watcher) }
        // The CLI writes the file and sends SIGHUP: the edit then finds nothing new.
        if trigger == .fileEdited && settings == old {
            logger.debug("\(options.configPath) was written; nothing in force changed")
            return
        }
        _ = systemd?.notify("RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())")
        defer { _ = systemd?.notify("READY=1") }
        state.withLock { $0.settings = settings }
        for observer in settingsObservers.withLock({ $0 }) { observer(settings) }
        // The policy and video options go with each file: only the analyzer's own tuning (workers,
        // threads, limits) needs the models loaded again.
        if settings.analyzer != old.analyzer || settings.agent.sandbox != old.agent.sandbox || settings.agent.fileDeadlineSeconds != old.agent.fileDeadlineSeconds
            || settings.agent.workerIdleSeconds != old.agent.workerIdleSeconds {
            await loadAnalyzer(settings)
        }
        let roots = rootsTurn.withLock { _ in applyRoots(settings, to: watcher) }
        if settings.mode != old.mode {
            // What adult mode let through is judged again under the child policy (seen records
            // of adult mode do not count in child mode): every folder is looked through again.
            if settings.mode == .child { watcher?.rescan() }
            try? vault.store.record(.modeChanged, mode: settings.mode, actor: options.actor, detail: "configuration reloaded: \(old.mode.rawValue) -> \(settings.mode.rawValue)")
        }
        logger.notice("configuration reloaded: \(settings.mode.rawValue) mode, watching \(roots.map(\.path).joined(separator: ", "))")
        publishSoon()
    }

    func watchdog() async {
        guard let systemd, let interval = systemd.watchdogPingInterval else { return }
        while !Task.isCancelled {
            _ = systemd.notify("WATCHDOG=1")
            try? await Task.sleep(for: interval)
        }
    }
}

extension FolderDirection {
    /// The watcher's direction as the store records it.
    init(_ direction: WatchDirection) { self = direction == .outgoing ? .outgoing : .incoming }
}
