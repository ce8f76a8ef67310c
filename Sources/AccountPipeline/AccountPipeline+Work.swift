import QuarantineBase
import AnalysisWorker
import DownloadOrigins
import FolderWatch
import Foundation
import Logging
import MediaDecoding
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport
import PathBytes

extension AccountPipeline {
    // MARK: - Intake: watcher events -> backlog

    func intake(_ watcher: FolderWatcher) async {
        for await event in watcher.events {
            switch event {
            case .candidate(let candidate):
                guard isAccountsFile(candidate.path, under: candidate.root) else { continue }
                // The copy of a blurred preview this service handed the account: nothing new.
                if let previews = options.servedPreviews,
                   previews.isServed(path: candidate.path, device: candidate.device, inode: candidate.inode, size: candidate.size,
                                     modificationNanoseconds: candidate.modificationNanoseconds) {
                    logger.debug("a copy of a preview this service handed out: not held nor checked", metadata: ["path": "\(shown(candidate.path))"])
                    continue
                }
                let direction = state.withLock { $0.roots[candidate.root]?.direction } ?? .incoming
                let identity = FileIdentity(device: candidate.device, inode: candidate.inode, size: candidate.size,
                                            modificationNanoseconds: candidate.modificationNanoseconds, changeNanoseconds: candidate.changeNanoseconds)
                add(BacklogEntry(path: candidate.path, root: candidate.root, direction: direction, identity: identity))
            case .rootWatched(let root, let directories):
                setRoot(root, "watching (\(directories) folder\(directories == 1 ? "" : "s"))")
                logger.info("watching \(shown(root))\(shown(root) == root ? "" : " (through \(root))"): \(directories) folder(s)")
            case .rootMissing(let root, let message):
                setRoot(root, "missing: \(message); watched again when it is back")
                logger.warning("\(shown(root)): \(message); it is watched again as soon as it is back")
            case .rootRestored(let root):
                logger.notice("\(shown(root)) is back: watching it again and checking what is in it")
            case .overflow:
                logger.warning("inotify's event queue overflowed, so some events were lost: rescanning every watched folder")
            case .watchLimit(let root, let message):
                let seconds = state.withLock { $0.settings.agent.rescanSeconds }
                setRoot(root, "rescanned every \(seconds) s (inotify watch limit reached)")
                logger.error("\(message)")
            case .scanFinished(let root, let files, let reason):
                logger.info("scanned \(shown(root)) (\(reason.rawValue)): \(files) file(s)")
            case .problem(let path, let message):
                logger.warning("\(message)", metadata: ["path": "\(path)"])
            }
        }
    }

    func setRoot(_ root: String, _ text: String) {
        state.withLock { $0.roots[root]?.state = text }
        publishSoon()
    }

    /// Gathers candidates for a moment so that a burst is written in a few transactions
    /// (``flusher()`` writes them).
    func add(_ entry: BacklogEntry) {
        intakeState.batches.withLock { $0.pending.append(entry) }
        count(.noticed)
        intakeState.continuation.yield()
    }

    /// Writes gathered candidates to the backlog, a batch every ``intakeBatchDelay``; while the
    /// database cannot be written (a full disk, a database kept busy) it keeps them and tries
    /// again after 1, 2, 4 ... 30 s. A child task of ``run()``.
    func flusher() async {
        for await _ in intakeState.requests {
            try? await Task.sleep(for: Self.intakeBatchDelay)
            var failures = 0
            while !Task.isCancelled && !flushCandidates() {
                failures += 1
                // Cut short when the database is found working again (``databaseRecovered``).
                let deadline = ContinuousClock.now + .seconds(min(30, 1 << min(failures - 1, 5)))
                while !Task.isCancelled, ContinuousClock.now < deadline,
                      !intakeState.batches.withLock({ b in defer { b.retryNow = false }; return b.retryNow }) {
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            if Task.isCancelled { return }
            let batch = intakeState.batches.withLock { b in defer { b.toHoldAtOnce = [] }; return b.toHoldAtOnce }
            let settings = state.withLock { $0.settings }
            if !batch.isEmpty { _ = try? await onOwnThread("hold-at-once") { self.holdAtOnce(batch, settings: settings) } }
        }
    }

    /// Held at once (issue 26): where files are held while checked, each new picture or video
    /// is held as soon as it is queued, not when an analysis lane frees, so a flood of files
    /// before it delays its verdict but not its hold. Not media (by its bytes), a version dealt
    /// with already, one being released there, or one held already: left to the lane, as before.
    func holdAtOnce(_ batch: [BacklogEntry], settings: Settings) {
        guard settings.holdsWhileChecking else { return }
        var held = 0
        for entry in batch where holding.held(originalPath: entry.path) == nil {
            // A lane has it: it holds it itself (or has judged it and is putting it back: held
            // again here, it would stay held with nothing left to judge it).
            if dispatch.work.withLock({ $0.inFlight[entry.path] != nil }) { continue }
            guard let file = try? MediaFile(path: entry.path), file.type.kind != .other else { continue }
            if (try? vault.store.hasSeen(file.identity, at: entry.path, in: settings.mode)) == true { continue }
            // Being released there: seen when the release finishes; its lane waits for that.
            if (try? vault.store.releaseUnderWay(into: entry.path)) == true { continue }
            do {
                _ = try holding.hold(path: entry.path, root: entry.root, expected: file.identity)
                held += 1
            } catch {
                logger.debug("not held at once (its lane tries again): \(error)", metadata: ["path": "\(entry.path)"])
            }
        }
        if held > 0 { logger.debug("\(held) file(s) held at once") }
    }

    /// Writes what was gathered; false when the database refused (the batch is kept).
    @discardableResult
    func flushCandidates() -> Bool {
        let batch = intakeState.batches.withLock { b -> [BacklogEntry] in
            defer { b.pending = [] }
            return b.pending
        }
        guard !batch.isEmpty else { return true }
        do {
            let settings = state.withLock { $0.settings }
            let added = try vault.store.enqueue(batch, mode: settings.mode)
            if added > 0 { logger.debug("\(added) new file(s) queued") }
            if settings.holdsWhileChecking { intakeState.batches.withLock { $0.toHoldAtOnce += batch } }
            let failures = intakeState.batches.withLock { b in defer { b.failures = 0 }; return b.failures }
            if failures > 0 { logger.notice("the backlog is written again (after \(failures) failed attempt(s)): \(batch.count) file(s) queued") }
        } catch {
            noteDatabaseFaults()
            // Said once, not at every attempt.
            let failures = intakeState.batches.withLock { b -> Int in
                b.failures += 1
                b.pending = batch + b.pending
                return b.failures
            }
            if failures == 1 {
                logger.error("cannot record \(batch.count) new file(s) in the backlog; they are kept and tried again (after 1 s, then less often, at least every 30 s) until it works: \(error)")
            } else {
                logger.debug("backlog still not writable (attempt \(failures)): \(error)")
            }
            return false
        }
        wakeContinuation.yield()
        publishSoon()
        return true
    }

    // MARK: - Dispatch: backlog -> workers

    /// One file to analyse, registered as in flight.
    struct Job: Sendable {
        var entry: BacklogEntry
        var type: MediaType
        var engine: any AnalysisEngine
        var settings: Settings
        /// Long work (a video, a container): the long-work lanes.
        var isVideo: Bool { type.kind.isLong }
    }

    /// Starts what fits whenever something changes (new files, a job done, a reload), until
    /// stopping and idle. Pictures and videos have their own lanes (and task groups): a long
    /// video never holds up the pictures behind it, and a stop cancels the videos (they stay in
    /// the backlog) while the pictures in flight finish. Every job is a child task of this one.
    func dispatch() async {
        await withDiscardingTaskGroup { pictures in
            await withDiscardingTaskGroup { videos in
                var wakes = wakeStream.makeAsyncIterator()
                var videosCancelled = false
                while true {
                    if isStopping {
                        if !videosCancelled { videos.cancelAll(); videosCancelled = true }
                    } else {
                        for job in await startWhatFits() {
                            let operation: @Sendable () async -> Void = {
                                await self.process(job.entry, type: job.type, engine: job.engine, settings: job.settings)
                                self.finished(job.entry.path, video: job.isVideo)
                            }
                            if job.isVideo { videos.addTask(operation: operation) } else { pictures.addTask(operation: operation) }
                        }
                    }
                    // Stopping never ends once begun, and only this loop adds work in flight.
                    if isStopping && dispatch.work.withLock({ $0.inFlight.isEmpty }) { return }
                    if await wakes.next() == nil { return }
                }
            }
        }
    }

    /// The backlog entries that fit in the free lanes, registered as in flight.
    func startWhatFits() async -> [Job] {
        let (engine, settings) = state.withLock { ($0.engine, $0.settings) }
        let (busy, videos) = dispatch.work.withLock { (Set($0.inFlight.keys), $0.videosInFlight) }
        noteDatabaseFaults()
        // While the database refuses writes, no verdict could be recorded: nothing starts.
        guard let engine, databaseGate.fault == nil else {
            // Nothing can analyse: in child mode what waits is held out of reach meanwhile.
            // (Off Swift's cooperative threads: a hold from another filesystem is a copy.)
            if settings.mode == .child, databaseGate.fault == nil {
                _ = try? await onOwnThread("hold-waiting") { self.holdWhileNothingAnalyses(excluding: busy) }
            }
            return []
        }
        let workers = engine.workers
        var freeImages = workers - (busy.count - videos)
        var freeVideos = max(1, workers / 2) - videos
        guard freeImages > 0 || freeVideos > 0 else { return [] }
        let entries: [BacklogEntry]
        do { entries = try vault.store.backlog(limit: 64, excluding: busy) } catch {
            logger.error("cannot read the backlog: \(error)")
            return []
        }
        // Entries finished here without a job (gone, not media) free the window: look again.
        var finishedHere = false
        defer { if finishedHere { wakeContinuation.yield() } }
        var jobs: [Job] = []
        for entry in entries where freeImages > 0 || freeVideos > 0 {
            let file: MediaFile
            do { file = try openQueued(entry, settings: settings) } catch where error.code == .permissionDenied {
                // Its type cannot be read either: the core decides (held in child mode, else
                // checked once readable), on a picture's slot.
                guard freeImages > 0 else { continue }
                freeImages -= 1
                dispatch.work.withLock { $0.inFlight[entry.path] = AgentStatus.Work(path: entry.path, kind: "image", startedAt: Date(), progress: nil) }
                jobs.append(Job(entry: entry, type: .other, engine: engine, settings: settings))
                continue
            } catch {
                finishUnopenable(entry, error)
                finishedHere = true
                continue
            }
            if file.type.kind == .other {
                // Not a picture or a video (by its bytes): recorded without reading further.
                try? vault.store.complete(entry, seen: SeenFile(path: entry.path, identity: file.identity, sha256: nil,
                                                                mode: settings.mode, verdict: .other))
                count(.verdict(.other))
                finishedHere = true
                continue
            }
            let isVideo = file.type.kind.isLong
            if isVideo ? freeVideos <= 0 : freeImages <= 0 { continue }
            if isVideo { freeVideos -= 1 } else { freeImages -= 1 }
            let work = AgentStatus.Work(path: entry.path, kind: file.type.kind.rawValue, startedAt: Date(), progress: isVideo ? 0 : nil)
            // Registered before its task exists: `finished` can never run first.
            dispatch.work.withLock { s in
                s.inFlight[entry.path] = work
                if isVideo { s.videosInFlight += 1 }
            }
            jobs.append(Job(entry: entry, type: file.type, engine: engine, settings: settings))
        }
        if !jobs.isEmpty { publishSoon() }
        return jobs
    }

    /// The file of a backlog entry: where it arrived, or where it is held (kept held after a
    /// failure or a stop, or held while nothing could analyse it).
    func openQueued(_ entry: BacklogEntry, settings: Settings) throws(MediaError) -> MediaFile {
        do { return try MediaFile(path: entry.path) } catch where error.code == .notFound && settings.holdsWhileChecking {
            guard let held = holding.held(originalPath: entry.path) else { throw error }
            return try MediaFile(path: holding.path(of: held))
        }
    }

    // MARK: - Held files (fail closed)

    /// How often files kept held (the vault refused them) are tried again.
    static let heldRetryInterval = Duration.seconds(30)

    /// At start: in child mode every file still held stays held and is queued to be judged where
    /// it is (nothing goes back unchecked); otherwise each goes back where it was (checked again
    /// as a new arrival), as before.
    func recoverHeldFiles(_ settings: Settings) async throws {
        let holding = self.holding
        guard settings.mode == .child else {
            for line in try await onOwnThread("hold-recovery", { holding.recover() }) { logger.notice("put back a file held when the agent stopped: \(line)") }
            return
        }
        let kept = try await onOwnThread("hold-recovery", { holding.keepHeld() })
        if !kept.isEmpty { logger.notice("\(kept.count) file(s) held when the service stopped stay held and are checked where they are") }
        queueHeld(kept, settings: settings)
    }

    /// Child mode: every ``heldRetryInterval`` the files kept held and no longer queued (the vault
    /// refused them) are queued again. A child task of ``run()``.
    func retryHeldFiles() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.heldRetryInterval)
            if Task.isCancelled { return }
            let settings = state.withLock { $0.settings }
            guard settings.mode == .child, let held = try? holding.heldFiles(), !held.isEmpty else { continue }
            let busy = dispatch.work.withLock { Set($0.inFlight.keys) }
            let waiting = Set(((try? vault.store.backlog(limit: 100_000)) ?? []).map(\.path))
            queueHeld(held.filter { !busy.contains($0.originalPath) && !waiting.contains($0.originalPath) }, settings: settings)
        }
    }

    /// Queues held files to be judged where they are held, under the path they arrived at.
    func queueHeld(_ held: [HeldFile], settings: Settings) {
        let roots = state.withLock { $0.roots }
        let entries = held.compactMap { record -> BacklogEntry? in
            guard let identity = FileIdentity(statAt: holding.path(of: record)) else { return nil }
            let root = roots.values.filter { record.originalPath.hasPrefix($0.path + "/") }.max { $0.path.count < $1.path.count }
            let direction: FolderDirection = root?.direction == .outgoing ? .outgoing : .incoming
            return BacklogEntry(path: record.originalPath, root: root?.path ?? (record.originalPath as NSString).deletingLastPathComponent,
                                direction: direction, identity: identity)
        }
        guard !entries.isEmpty else { return }
        do { try vault.store.enqueue(entries, mode: settings.mode) } catch {
            logger.error("cannot queue \(entries.count) held file(s) to be checked again: \(error); they stay held")
            return
        }
        wakeContinuation.yield()
    }

    /// Child mode while nothing can analyse (no worker, models missing): the files waiting are
    /// held out of reach now, and judged once analysis works again.
    func holdWhileNothingAnalyses(excluding busy: Set<String>) {
        guard let entries = try? vault.store.backlog(limit: 256, excluding: busy) else { return }
        for entry in entries where holding.held(originalPath: entry.path) == nil {
            var info = stat()
            guard lstat(PathBytes.cString(entry.path), &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { continue }
            do {
                _ = try holding.hold(path: entry.path, root: entry.root)
                count(.heldWaiting)
                logger.notice("held out of reach until it can be checked (nothing can analyse it now)", metadata: ["path": "\(entry.path)"])
            } catch {
                logger.warning("cannot hold it while nothing can analyse it: \(error)", metadata: ["path": "\(entry.path)"])
            }
        }
    }

    func finished(_ path: String, video: Bool) {
        // A write of this file's record that failed closes the gate before the next one starts.
        noteDatabaseFaults()
        dispatch.work.withLock { s in
            s.inFlight[path] = nil
            if video { s.videosInFlight -= 1 }
        }
        wakeContinuation.yield()
        publishSoon()
    }

    /// A queued file that cannot even be opened: gone, replaced by a link, not a regular file.
    func finishUnopenable(_ entry: BacklogEntry, _ error: any Error) {
        let reason = (error as? MediaError).map { $0.message } ?? "\(error)"
        logger.info("not checked: \(reason)", metadata: ["path": "\(entry.path)"])
        try? vault.store.complete(entry, seen: nil)
        count(.gone)
    }

    /// What `quarantine status` counts since the start.
    enum Counter {
        /// Files the watcher reported.
        case noticed
        /// Gone, or not a regular file, before they could be checked.
        case gone
        /// Flagged, but the vault refused to move them (changed, vanished, disk full).
        case notMoved
        /// Dealt with, by verdict.
        case verdict(Verdict)
        /// Child mode: kept held, out of reach, after a check that gave no verdict letting it go back.
        case keptHeld
        /// Child mode: held while nothing could analyse it.
        case heldWaiting

        /// The key in the published status (`counters` in `status --json`).
        var key: String {
            switch self {
            case .noticed: return "noticed"
            case .gone: return "gone"
            case .notMoved: return "not_moved"
            case .verdict(let verdict): return verdict.rawValue
            case .keptHeld: return "kept_held"
            case .heldWaiting: return "held_waiting"
            }
        }
    }

    func count(_ counter: Counter) {
        dispatch.work.withLock { $0.counters[counter.key, default: 0] += 1 }
    }

    // MARK: - One file

    /// The core decides (``Intake``); the agent counts, logs and tells the person.
    func process(_ entry: BacklogEntry, type: MediaType, engine: any AnalysisEngine, settings: Settings) async {
        var intake = Intake(vault: vault, engine: engine, actor: options.actor, maxCrashes: Self.maxAttempts, holding: holding)
        if settings.agent.browserHistory {
            var reader = settings.browserHistory(environment: options.environment, configHome: options.browserConfigHome)
            // The history's bytes are parsed by the sandboxed worker, never here: in a guardian
            // service they are the protected account's, possibly crafted.
            if let sandboxed = engine as? SandboxedAnalysis {
                reader.parser = sandboxed.historyParser
            } else if options.protectedAccount != nil {
                reader.parser = { _, _ in throw HistoryImage.Problem("not read: a guardian service parses no history without its sandboxed worker") }
            }
            let history = reader
            intake.originLookup = { path in
                history.origin(ofDownloadAt: path).map { DownloadSource(url: $0.fileURL, referrer: $0.pageURL, source: $0.browser) }
            }
            intake.originMayFollow = { _, written in history.mayStillRecord(writtenAt: written) }
        }
        let path = entry.path
        let judge = { [intake] in
            await intake.handle(entry, kind: type.kind, settings: settings) { [weak self] update in
                self?.progressed(path, update.fraction, coverage: update.coverage)
            }
        }
        // Registered in the crash journal while it is judged: a fatal signal in this process pins it.
        let outcome: Intake.Outcome
        if let crashJournal { outcome = await crashJournal.inFlight(path, judge) } else { outcome = await judge() }
        // No worker could be started for it: the file stays queued until one can.
        if let problem = engine.problem, state.withLock({ $0.engine.map { $0 as AnyObject } === (engine as AnyObject) }) {
            analysisBroke(problem)
        }
        report(outcome, for: entry, mode: settings.mode)
        // Hidden before its browser wrote the history (Chromium, seconds later): recorded then.
        if case .hidden(let item, _, _, _) = outcome, item.originURL == nil, item.id != nil {
            originFollowUpContinuation.yield(OriginFollowUp(intake: intake, item: item, path: entry.path, settings: settings))
        }
    }

    /// An item whose origin its browser has not written yet.
    struct OriginFollowUp: Sendable {
        var intake: Intake
        var item: VaultItem
        var path: String
        var settings: Settings
    }

    /// Waits for the origins of items hidden before their browser wrote its history, each
    /// beside the others. A child task of ``run()``; a stop cancels the waits.
    func followOrigins() async {
        await withTaskGroup(of: Void.self) { group in
            for await request in originFollowUps {
                if Task.isCancelled { break }
                group.addTask { [logger] in
                    guard let found = await request.intake.followOrigin(of: request.item, arrivedAt: request.path, settings: request.settings) else { return }
                    let id = request.item.id ?? 0
                    logger.info("item \(id) came from \(found.host ?? found.url) (\(found.source)'s download history)", metadata: ["item": "\(id)"])
                }
            }
            group.cancelAll()
        }
    }

    func report(_ outcome: Intake.Outcome, for entry: BacklogEntry, mode: AnalysisMode) {
        var metadata: Logger.Metadata = ["path": "\(shown(entry.path))", "mode": "\(mode.rawValue)"]
        switch outcome {
        case .unopenable(let reason):
            logger.info("not checked: \(reason)", metadata: metadata)
            count(.gone)
        case .alreadySeen, .cancelled:
            break
        case .allowed:
            logger.info("left alone: released before (on the allow list)", metadata: metadata)
            count(.verdict(.allowed))
        case .clean(let detail):
            logger.debug("\(detail)", metadata: metadata)
            count(.verdict(.clean))
        case .other:
            count(.verdict(.other))
        case .hidden(let item, let verdict, let reasons, let notice):
            let id = item.id ?? 0
            metadata["item"] = "\(id)"
            metadata["verdict"] = "\(verdict.rawValue)"
            count(.verdict(verdict))
            logger.notice("\(verdict == .unverified ? "held" : "quarantined") item \(id) (\(reasons.joined(separator: ", ")))", metadata: metadata)
            tell(notice, image: vault.previewPath(of: item), itemId: id)
        case .left(let reason, let notice):
            count(.verdict(.failed))
            logger.warning("could not check \(reason); left where it is", metadata: metadata)
            tell(notice, image: nil, itemId: nil)
        case .notMoved(let verdict, let reason):
            // A changed file is judged again as its newer version.
            logger.warning("\(verdict == .unverified ? "could not be checked" : "flagged") but not moved into the vault: \(reason)", metadata: metadata)
            requeueIfChanged(entry)
            count(.notMoved)
        case .changed:
            logger.info("changed while it was checked; it is checked again", metadata: metadata)
            requeueIfChanged(entry)
        case .databaseUnavailable(let message):
            // A fault of the database is said once by the gate (``noteDatabaseFaults()``).
            logger.debug("left where it is and queued, the audit database refused: \(message)", metadata: metadata)
        case .unreadable(let then):
            // Checked (again) as soon as it can be read: the watcher follows its mode.
            watcher()?.retryWhenReadable(entry.path)
            if case .left = then {
                logger.notice("cannot be read (permission denied): it is checked as soon as it can be read", metadata: metadata)
                count(.verdict(.failed))
            } else {
                report(then, for: entry, mode: mode)
            }
        case .keptHeld(let reason, _):
            // Recorded in the audit log by the core (the guardian's history shows it).
            logger.warning("kept held, out of reach: \(reason)", metadata: metadata)
            count(.keptHeld)
        case .givenUp(let crashes, let then):
            logger.error("given up after it crashed the agent \(crashes) times; check it with 'quarantine scan'", metadata: metadata)
            report(then, for: entry, mode: mode)
        }
    }

    func watcher() -> FolderWatcher? { state.withLock { $0.watcher } }

    /// Queues the file at `entry.path` again if it is there as another version.
    func requeueIfChanged(_ entry: BacklogEntry) {
        var info = stat()
        guard lstat(PathBytes.cString(entry.path), &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size > 0 else { return }
        let identity = FileIdentity(info)
        guard identity != entry.identity else { return }
        add(BacklogEntry(path: entry.path, root: entry.root, direction: entry.direction, identity: identity))
    }

    func progressed(_ path: String, _ fraction: Double?, coverage: Double? = nil) {
        dispatch.work.withLock { s in
            s.inFlight[path]?.progress = fraction
            if let coverage { s.inFlight[path]?.coverage = coverage }
        }
        publishSoon()
    }

    /// A desktop notification when there is a desktop session; always a log line.
    func tell(_ notice: Notice, image: String?, itemId: Int64?) {
        logger.notice("\(notice.summary): \(notice.body)", metadata: itemId.map { ["item": "\($0)"] })
        guard let notifier = notifications.notifier else { return }
        var notification = DesktopNotification(summary: notice.summary, body: notice.body)
        notification.imagePath = image
        // No preview to show (a picture that could not be decoded): no button for it.
        notification.actions = notice.actions.filter { image != nil || $0 != .showPreview(itemId ?? 0) }.map { .init(key: $0.key, label: $0.label) }
        do {
            let id = try notifier.send(notification)
            if let itemId, !notification.actions.isEmpty {
                notifications.desk.withLock { desk in
                    // Bounded: the oldest are forgotten (a server keeps few on screen anyway).
                    if desk.notifiedItems.count >= 200, let oldest = desk.notifiedItems.keys.min() { desk.notifiedItems.removeValue(forKey: oldest) }
                    desk.notifiedItems[id] = itemId
                }
            }
        } catch {
            logger.warning("desktop notification not shown: \(error)")
        }
    }

    // MARK: - Status

    /// Asks ``publisher()`` for a status update (at most one every ``statusInterval``).
    func publishSoon() {
        publication.continuation.yield()
    }

    /// Publishes the status for `quarantine status` after changes, at most every
    /// ``statusInterval``. A child task of ``run()``.
    func publisher() async {
        for await _ in publication.requests {
            try? await Task.sleep(for: Self.statusInterval)
            if Task.isCancelled { return }
            publishNow()
        }
    }

    func publishNow() {
        noteDatabaseFaults()
        let status = currentStatus()
        // While the database refuses writes (a lock would hold this thread for the busy timeout),
        // the status goes beside the agent's lock, where `quarantine status` looks too.
        if status.databaseFault != nil {
            AgentStatus.writeBesideTheLock(status, environment: options.environment)
            return
        }
        do {
            try vault.store.publish(status)
            AgentStatus.writeBesideTheLock(nil, environment: options.environment)
            if publication.failing.withLock({ failing in defer { failing = false }; return failing }) {
                logger.notice("the status is published again")
            }
        } catch {
            let first = publication.failing.withLock { failing in defer { failing = true }; return !failing }
            if first { logger.warning("cannot publish the status ('quarantine status' shows the last one until this works): \(error)") }
            else { logger.debug("status still not published: \(error)") }
            noteDatabaseFaults()
            if databaseGate.fault != nil { publishSoon() }
        }
    }

    /// What `quarantine status` shows now; with `readingTheDatabase` false, the backlog's depth
    /// as last read (no read that a busy database could hold for its timeout).
    func currentStatus(readingTheDatabase: Bool = true) -> AgentStatus {
        let depth = readingTheDatabase ? (try? vault.store.backlogCount()) ?? -1 : publication.lastDepth.withLock { $0 }
        if readingTheDatabase, depth >= 0 { publication.lastDepth.withLock { $0 = depth } }
        let (engine, settings) = state.withLock { ($0.engine, $0.settings) }
        // Asked outside the agent's lock (the engine takes its own).
        let analysis = Self.analysisDescription(engine, settings: settings)
        let notificationState = notifications.desk.withLock { $0.description }
        let work = dispatch.work.withLock { $0 }
        let gate = databaseGate.gate.withLock { $0 }
        let configurationProblem = reloads.file.withLock { $0.problem }
        let status = state.withLock { s -> AgentStatus in
            AgentStatus(pid: getpid(), startedAt: startedAt, updatedAt: Date(), state: s.state, mode: s.settings.mode.rawValue,
                               roots: s.roots.values.map { var root = $0; root.path = shown(root.path); return root }.sorted { $0.path < $1.path }, queueDepth: depth,
                               inFlight: work.inFlight.values.map { var work = $0; work.path = shown(work.path); return work }.sorted { $0.startedAt < $1.startedAt }, counters: work.counters,
                               problem: [configurationProblem, gate.problem, s.problem].compactMap { $0 }.joined(separator: "; ").nilIfEmpty,
                               notifications: notificationState, databaseFault: gate.fault?.rawValue, analysis: analysis,
                               unwatched: options.protectedHome.map { Self.unwatched(home: $0, mode: s.settings.mode, media: options.removableMediaFolders, shared: sharedFolders, runtime: options.runtimeFolder) })
        }
        return status
    }
}

extension String {
    /// Nil for the empty string.
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
