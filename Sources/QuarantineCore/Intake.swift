import Foundation
import QuarantineBase
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis
import PathBytes
import Locking

/// What happens to one file that arrived in a watched folder: a crash guard, the allow and block
/// lists, the verdict cache, the analysis, `on_error`, hiding it in the vault, and what the audit
/// database records. The agent runs it for each backlog entry and only counts, logs and tells
/// the person what the ``Outcome`` says; the logic is here, testable in process.
public struct Intake: Sendable {
    /// The analysis of one file under the given settings, reporting a video's progress.
    public typealias Analysis = @Sendable (_ path: String, _ settings: Settings, _ progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport
    /// Runs blocking work (reading and hashing a file) off Swift's cooperative threads.
    public typealias Blocking = @Sendable (_ video: Bool, _ work: @escaping @Sendable () throws -> Digest) async throws -> Digest

    /// A file's bytes as read for the lists: their hash, the site they came from, the version read.
    public struct Digest: Sendable {
        public var sha256: String
        public var originHost: String?
        public var identity: FileIdentity
        /// Where it came from by the browser's download history (no `user.xdg.origin.url`).
        public var source: DownloadSource? = nil
        /// Whether the history was asked (while a site is blocked): not asked again to hide it.
        public var historyAsked = false
    }

    /// Where a download at a path came from, by the browsers' own download history; nil when
    /// no browser knows it (``Settings`` `agent.browser_history` off: no lookup at all).
    public typealias OriginLookup = @Sendable (_ path: String) -> DownloadSource?

    public let vault: Vault
    let analysis: Analysis
    let blocking: Blocking
    /// A picture of a file for its blurred preview, when no analysis gave one.
    let previewFrame: @Sendable (String) async -> RGBImage?
    /// Where a download came from when the file does not say.
    public var originLookup: OriginLookup? = nil
    /// Whether a browser may still write the history of the download at a path (a running
    /// Chromium commits its history about every 10 s): then its origin is awaited, up to
    /// ``originWait``, before such a file is left as clean while some site is blocked, and
    /// after a hidden one is told (``followOrigin(of:arrivedAt:settings:)``).
    public var originMayFollow: (@Sendable (_ path: String, _ writtenAt: Date) -> Bool)? = nil
    /// How long a browser's history is awaited.
    public var originWait: Duration = .seconds(12)
    /// A file that crashed the process this many times (observed crashes) is given up (then `on_error`).
    public let maxCrashes: Int
    /// Who is recorded as acting ("agent", "guardian service").
    public let actor: String
    /// Holds files out of reach while they are checked, where ``Settings/holdsWhileChecking``.
    public let holding: Holding?

    public init(vault: Vault, actor: String = "agent", maxCrashes: Int = 2, holding: Holding? = nil, blocking: @escaping Blocking, analysis: @escaping Analysis,
                previewFrame: @escaping @Sendable (String) async -> RGBImage? = { _ in nil }) {
        self.vault = vault
        self.previewFrame = previewFrame
        self.actor = actor
        self.holding = holding
        self.maxCrashes = maxCrashes
        self.blocking = blocking
        self.analysis = analysis
    }

    /// The engine's own analysis and threads (models in process, or a confined worker).
    public init(vault: Vault, engine: any AnalysisEngine, actor: String = "agent", maxCrashes: Int = 2, holding: Holding? = nil) {
        self.init(vault: vault, actor: actor, maxCrashes: maxCrashes, holding: holding,
                  blocking: { video, work in try await engine.runBlocking(video: video, work) },
                  analysis: { path, settings, progress in await engine.report(forFileAt: path, settings: settings, progress: progress) },
                  previewFrame: { path in await engine.previewFrame(forFileAt: path) })
    }

    /// How it ended for one file.
    public indirect enum Outcome: Sendable {
        /// Gone, a link, not a regular file, empty, unreadable: nothing to judge. Off the backlog.
        case unopenable(reason: String)
        /// This exact version was dealt with before.
        case alreadySeen
        /// Released before: its bytes are on the allow list. Left alone.
        case allowed
        /// Not sensitive (`detail` says how it was decided).
        case clean(detail: String)
        /// Not a picture or a video.
        case other
        /// Hidden in the vault: flagged (`.quarantined`), on a block list (`.blocked`) or not
        /// analysable in a mode that holds such files (`.unverified`). `notice` tells the person.
        case hidden(VaultItem, verdict: Verdict, reasons: [String], notice: Notice)
        /// Could not be analysed and left where it is (`on_error = "leave"`).
        case left(reason: String, notice: Notice)
        /// Flagged (or to be held) but the vault refused to move it: it changed or vanished, or
        /// the disk is full. Nothing moved; the caller queues the file again if it changed.
        case notMoved(verdict: Verdict, reason: String)
        /// Changed while it was read: judged again as the newer version.
        case changed
        /// Stopped (the service is stopping): it stays in the backlog for the next start.
        case cancelled
        /// The audit database could not be read or written: it stays in the backlog.
        case databaseUnavailable(String)
        /// It crashed the process `crashes` times: given up, then handled by `on_error`.
        case givenUp(crashes: Int, then: Intake.Outcome)
        /// It cannot be read (permission denied): `on_error` decided (`then`: held as unverified,
        /// which needs no read access, or left); the caller checks it again once it can be read.
        case unreadable(then: Intake.Outcome)

        /// Child mode, a held file whose check ended without a verdict that lets it go back and
        /// that the vault could not take either (or that is to be checked again: a stop, a
        /// database fault): it stays held, out of reach, and is checked again later.
        case keptHeld(reason: String, after: Intake.Outcome)

        /// Whether a held file may go back where it arrived after this (child mode): only a
        /// verdict that says it may (not sensitive, not a picture or video, on the allow list, or
        /// this exact version dealt with before), or nothing there to judge (gone, empty).
        public var letsAHeldFileGoBack: Bool {
            switch self {
            case .clean, .other, .allowed, .alreadySeen: return true
            default: return false
            }
        }

        /// Why a held file is kept out of reach after this, in words for the guardian.
        var failClosedReason: String {
            switch self {
            case .unopenable(let reason): return "it could not be opened (\(reason))"
            case .left(let reason, _): return "it could not be checked (\(reason))"
            case .notMoved(_, let reason): return "the vault refused it (\(reason))"
            case .changed: return "it kept changing while it was checked"
            case .cancelled: return "it was not checked yet (the service stopped, or nothing could analyse it: see the status)"
            case .databaseUnavailable(let message): return "the audit database is unavailable (\(message))"
            case .givenUp(let crashes, _): return "it crashed the analysis \(crashes) times"
            case .unreadable: return "it cannot be read"
            case .keptHeld(let reason, _): return reason
            default: return "no verdict"
            }
        }

        /// Whether the file went into the vault (directly, or as what `on_error` decided).
        public var movedIntoVault: Bool {
            switch self {
            case .hidden: return true
            case .unreadable(let then), .givenUp(_, let then): return then.movedIntoVault
            default: return false
            }
        }
    }

    /// Handles one backlog entry of kind `kind` under `settings`.
    public func handle(_ entry: BacklogEntry, kind: MediaType.Kind, settings: Settings,
                       progress: @escaping @Sendable (VideoProgress) -> Void = { _ in }) async -> Outcome {
        let store = vault.store
        let path = entry.path, mode = settings.mode
        // Only crashes the program observed count (a fatal signal recorded by the agent's crash
        // journal; a worker's crash is the worker's, handled where the agent sees it die): a kill
        // or a power cut in the middle of an attempt counts nothing. A file whose crash count
        // cannot be read is not attempted: its verdict could not be recorded either. It stays
        // where it is, queued, until the database works.
        let crashes: Int
        do { crashes = try store.crashCount(entry) } catch { return .databaseUnavailable("\(error)") }
        // Held already (kept held after a failure, at a stop or a crash, or while nothing could
        // analyse it): judged again where it is held, never put back first.
        let alreadyHeld = settings.holdsWhileChecking ? holding?.held(originalPath: path) : nil
        if crashes >= maxCrashes {
            try? store.record(.error, path: path, mode: mode, actor: actor, detail: "given up after it crashed the analysis \(crashes) times")
            let failure = FileReport.Failure(code: "crashed", message: "\(path): crashed the analysis \(crashes) times")
            let heldAt = alreadyHeld.flatMap { held in holding.map { $0.path(of: held) } }
            let then = await failed(entry, at: heldAt, held: alreadyHeld, failure: failure, kind: kind, digest: nil,
                                    identity: heldAt.flatMap { FileIdentity(statAt: $0) }, settings: settings)
            let outcome = Outcome.givenUp(crashes: crashes, then: then)
            guard let held = alreadyHeld, let holding else { return outcome }
            if outcome.movedIntoVault { try? holding.forget(held); return outcome }
            if mode == .child { return await keepOut(entry, held: held, holding: holding, after: outcome, kind: kind, settings: settings) }
            _ = try? await onOwnThread("intake-put-back") { try holding.putBack(held) }
            return outcome
        }
        if let holding, let held = alreadyHeld {
            let outcome = await judgeHeld(entry, held: held, holding: holding, kind: kind, settings: settings, progress: progress)
            // Another file saved under the same name meanwhile (its backlog entry was this one,
            // the path being the key): queued again for its own check.
            var info = stat()
            if lstat(PathBytes.cString(path), &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 {
                let there = FileIdentity(info)
                if there.device != held.device || there.inode != held.inode {
                    _ = try? store.enqueue([BacklogEntry(path: path, root: entry.root, direction: entry.direction, identity: there)], mode: mode)
                }
            }
            return outcome
        }
        // A release putting a file here right now records it as seen when it finishes: waited
        // for (a few seconds at most), never held meanwhile, so what was released does not vanish
        // again to be found on the allow list.
        await waitForRelease(into: path)
        // This exact version was dealt with (a held file put back arrives again as a new name,
        // a release records what it put back).
        if let identity = FileIdentity(statAt: path), (try? store.hasSeen(identity, at: path, in: mode)) == true {
            try? store.complete(entry, seen: nil)
            return .alreadySeen
        }
        // Given up before by another program or other models: tried again, and the history says so.
        if let identity = FileIdentity(statAt: path), let earlier = try? store.givenUpOnAnotherBasis(identity, at: path, in: mode) {
            try? store.record(.analysed, path: path, mode: mode, actor: actor,
                              detail: "tried again: it was given up by \(earlier); the program or its models changed since (\(SeenFile.currentBasis))")
        }
        guard let holding, settings.holdsWhileChecking else {
            return await judge(entry, at: path, kind: kind, settings: settings, progress: progress)
        }
        // Locked where it is by this service (its own, mode 0000): the lock's own change of owner
        // and mode brings it back here, and it is not judged again.
        if holding.isLockedInPlace(path) {
            try? store.complete(entry, seen: nil)
            return .alreadySeen
        }
        let held: HeldFile
        // A hold by a copy (another filesystem, other names) reads the whole file: off Swift's
        // cooperative threads, like every move and copy here (``hide(_:at:held:identity:sha256:kind:reasons:preview:mode:verdict:because:origin:tooLargeToHash:)``).
        do { held = try await onOwnThread("intake-hold") { try holding.hold(path: path, root: entry.root) } } catch let failure as Holding.Failure where failure.alreadyHeld {
            // A held file seen by a watcher in its holding folder: it is judged as what it was.
            try? store.complete(entry, seen: nil)
            return .unopenable(reason: failure.description)
        } catch {
            // Held meanwhile by the agent's hold-at-once pass: judged where it is held.
            if let nowHeld = holding.held(originalPath: path) {
                return await judgeHeld(entry, held: nowHeld, holding: holding, kind: kind, settings: settings, progress: progress)
            }
            // Not holdable (gone, replaced, no holding folder or copy could be made): checked where it is.
            try? store.record(.error, path: path, mode: mode, actor: actor, detail: "checked without holding it: \(error)")
            let outcome = await judge(entry, at: path, kind: kind, settings: settings, progress: progress)
            // Child mode: a file neither held nor hidden without a verdict that lets it be is said
            // to the guardian (the history), never left silently.
            if mode == .child, !outcome.letsAHeldFileGoBack, !outcome.movedIntoVault, let now = FileIdentity(statAt: path) {
                // Fail closed: locked where it is (the service's, mode 0000), else said as it is.
                do {
                    try holding.lockInPlace(path: path, root: entry.root, expected: now)
                    try? store.record(.error, path: path, mode: mode, actor: actor,
                                      detail: "locked where it is (owner the guardian service, mode 0000): it could not be held (\(error)) and \(outcome.failClosedReason)")
                } catch let lockFailure {
                    try? store.record(.error, path: path, mode: mode, actor: actor,
                                      detail: "left where it is, readable: it could not be held (\(error)) and \(outcome.failClosedReason); not locked: \(lockFailure)")
                }
            }
            return outcome
        }
        return await judgeHeld(entry, held: held, holding: holding, kind: kind, settings: settings, progress: progress)
    }

    /// Waits while a release is putting a file at `path` (polled every 20 ms, 10 s at most: a
    /// release cut short by a crash is finished or undone by the vault's recovery, not here).
    func waitForRelease(into path: String) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? vault.store.releaseUnderWay(into: path)) == true, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Judges a held file where it is held. It goes back to where it arrived only on a verdict
    /// that lets it (``Outcome/letsAHeldFileGoBack``); in child mode every other outcome hides it
    /// in the vault as unverified, with the reason, or (when the vault refuses that too, or the
    /// service is stopping, or the database is unavailable) keeps it held, recorded so that the
    /// guardian sees it in the history. Adult mode (`hold_while_checking`) puts it back whatever
    /// happened, as it always did.
    func judgeHeld(_ entry: BacklogEntry, held: HeldFile, holding: Holding, kind: MediaType.Kind, settings: Settings,
                   progress: @escaping @Sendable (VideoProgress) -> Void) async -> Outcome {
        let path = entry.path, mode = settings.mode, store = vault.store
        // Reached through the holding folder's descriptor, never through the account's folders.
        let source = holding.path(of: held)
        var outcome = await judge(entry, at: source, held: held, kind: kind, settings: settings, progress: progress)
        // Changed while held (someone kept a descriptor or another name of it): judged again as it is now.
        var rounds = 1
        while case .changed = outcome, rounds < Self.changedRounds, !Task.isCancelled {
            rounds += 1
            outcome = await judge(entry, at: source, held: held, kind: kind, settings: settings, progress: progress)
        }
        if outcome.movedIntoVault {
            try? holding.forget(held)
            return outcome
        }
        if mode == .child && !outcome.letsAHeldFileGoBack {
            return await keepOut(entry, held: held, holding: holding, after: outcome, kind: kind, settings: settings)
        }
        let before = FileIdentity(statAt: source)
        do {
            // A held copy goes back as a copy: off Swift's cooperative threads.
            let back = try await onOwnThread("intake-put-back") { try holding.putBack(held) }
            // What was recorded for it while held stays true where it is back.
            if let before { try? store.carrySeen(from: path, identity: before, to: back.path, identity: back.identity) }
        } catch let failure as Holding.Failure where failure.refusedPutBack {
            // Its folder cannot take it back (gone, replaced, not the account's): it goes into the
            // vault, from where it can be released elsewhere, never into someone else's folder.
            try? store.record(.error, path: path, mode: mode, actor: actor, detail: "not put back: \(failure)")
            return await keepOut(entry, held: held, holding: holding, after: .keptHeld(reason: "it could not be put back: \(failure)", after: outcome),
                                 kind: kind, settings: settings)
        } catch {
            try? store.record(.error, path: path, mode: mode, actor: actor, detail: "\(error)")
        }
        return outcome
    }

    /// How many times a file that changes while held is judged before it is hidden as unverified.
    static let changedRounds = 3

    /// Child mode, a held file whose check ended without a verdict that lets it go back: hidden
    /// in the vault as unverified, with the reason; else (the vault refused, or the check is to be
    /// made again: a stop, a database fault) kept held, and recorded for the guardian.
    func keepOut(_ entry: BacklogEntry, held: HeldFile, holding: Holding, after outcome: Outcome, kind: MediaType.Kind, settings: Settings) async -> Outcome {
        let path = entry.path, mode = settings.mode, store = vault.store
        let reason = outcome.failClosedReason
        let source = holding.path(of: held)
        // Gone from where it was held (nothing left to protect), or empty (nothing to see).
        guard let now = FileIdentity(statAt: source) else {
            try? holding.forget(held)
            return outcome
        }
        if now.size == 0 {
            _ = try? await onOwnThread("intake-put-back") { try holding.putBack(held) }
            return outcome
        }
        switch outcome {
        case .cancelled, .databaseUnavailable:
            // Judged again from where it is held: at the next start, or once the database works.
            try? store.record(.error, path: path, mode: mode, actor: actor, detail: "kept held, out of reach: \(reason); it is checked again")
            return .keptHeld(reason: reason, after: outcome)
        default:
            break
        }
        let hidden = await hide(entry, at: source, held: held, identity: now, sha256: nil, kind: kind, reasons: ["unverified: \(reason)"], preview: nil,
                                mode: mode, verdict: .unverified)
        if hidden.movedIntoVault {
            try? holding.forget(held)
            return hidden
        }
        let refused: String
        if case .notMoved(_, let why) = hidden { refused = why } else { refused = hidden.failClosedReason }
        try? store.record(.error, path: path, mode: mode, actor: actor,
                          detail: "kept held, out of reach: \(reason); the vault refused it too (\(refused)); it is tried again")
        return .keptHeld(reason: "\(reason); the vault refused it too (\(refused))", after: outcome)
    }

    /// Judges the file of `entry`, now at `source` (where it is held, or its own path); every
    /// record names the entry's own path.
    func judge(_ entry: BacklogEntry, at source: String, held: HeldFile? = nil, kind: MediaType.Kind, settings: Settings,
               progress: @escaping @Sendable (VideoProgress) -> Void) async -> Outcome {
        let store = vault.store
        let path = entry.path, mode = settings.mode
        let lookup = settings.agent.browserHistory ? originLookup : nil
        // A lookup copies the browsers' databases (up to ~15 ms): before a verdict only when a
        // site is blocked (then the origin decides); else only for a file that is hidden.
        let sitesBlocked = lookup != nil && (try? store.hasBlockedOrigins()) == true
        let listLookup = sitesBlocked ? lookup : nil
        let digest: Digest
        do {
            let pictureLimit = settings.analyzer.limits.maxImageFileBytes
            let videoLimit = settings.analyzer.limits.maxVideoFileBytes
            digest = try await blocking(kind.isLong) {
                let file = try MediaFile(path: source)
                // A picture past the decoders' size limit cannot be judged: refused before it is
                // hashed, so a huge (or sparse) file never holds a lane while it is read. So is a
                // video past its limit (a 64 GiB sparse .mp4 cost minutes of hashing at each try).
                if kind == .image, file.identity.size > Int64(pictureLimit) {
                    throw MediaError(.fileTooLarge, "is \(file.identity.size >> 20) MiB, over the \(pictureLimit >> 20) MiB limit for pictures", path: source)
                }
                if kind == .video, file.identity.size > videoLimit {
                    throw MediaError(.fileTooLarge, "is \(file.identity.size >> 30) GiB, over the \(videoLimit >> 30) GiB limit for videos (analysis.max_video_file_gib)", path: source)
                }
                var digest = Digest(sha256: try Vault.sha256(fd: file.descriptor), originHost: Vault.originHost(fd: file.descriptor), identity: file.identity)
                // The browser's history names the path the file arrived at (not where it is held).
                if digest.originHost == nil, let listLookup {
                    digest.historyAsked = true
                    if let found = listLookup(path) {
                        digest.source = found
                        digest.originHost = found.host
                    }
                }
                return digest
            }
        } catch let error as MediaError where error.code == .permissionDenied {
            // Moving it into the vault needs no read access: child mode holds it at once.
            let identity = FileIdentity(statAt: source) ?? entry.identity
            let failure = FileReport.Failure(code: error.code.rawValue, message: "\(path): cannot be read (permission denied)")
            return .unreadable(then: await failed(entry, at: source, held: held, failure: failure, kind: kind, digest: nil, identity: identity, settings: settings))
        } catch let error as MediaError where error.code == .fileTooLarge {
            let failure = FileReport.Failure(code: error.code.rawValue, message: "\(path): \(error.message)")
            return await failed(entry, at: source, held: held, failure: failure, kind: kind, digest: nil, identity: FileIdentity(statAt: source) ?? entry.identity, settings: settings)
        } catch {
            try? store.complete(entry, seen: nil)
            return .unopenable(reason: (error as? MediaError).map(\.message) ?? "\(error)")
        }
        do {
            if try store.hasSeen(digest.identity, at: path, in: mode) {
                try store.complete(entry, seen: nil)
                return .alreadySeen
            }
            switch try ListCheck.check(sha256: digest.sha256, originHost: digest.originHost, mode: mode, store: store) {
            case .allowed:
                try store.complete(entry, seen: SeenFile(path: path, identity: digest.identity, sha256: digest.sha256, mode: mode, verdict: .allowed),
                                   events: [AuditEvent(.analysed, path: path, mode: mode, actor: actor, detail: "on the allow list: not analysed")])
                return .allowed
            case .blocked(let reason, let site):
                return await hideBlocked(entry, at: source, held: held, identity: digest.identity, sha256: digest.sha256, kind: kind, mode: mode,
                                         reason: reason, site: site != nil, origin: origin(of: digest, arrivedAt: path, settings: settings))
            case .knownClean:
                if digest.originHost == nil, let late = await blockedSiteFoundLater(path, writtenAt: digest.identity, lookup: listLookup), let host = late.host {
                    return await hideBlocked(entry, at: source, held: held, identity: digest.identity, sha256: digest.sha256, kind: kind, mode: mode,
                                             reason: AuditStore.blockedSiteReason(host), site: true, origin: late)
                }
                let detail = "same bytes as a file found not sensitive before"
                try store.complete(entry, seen: SeenFile(path: path, identity: digest.identity, sha256: digest.sha256, mode: mode, verdict: .clean),
                                   events: [AuditEvent(.analysed, path: path, mode: mode, actor: actor, detail: detail)])
                return .clean(detail: detail)
            case .analyse:
                break
            }
        } catch {
            return .databaseUnavailable("\(error)")
        }

        var report = await analyseResuming(source, sha256: digest.sha256, kind: kind, settings: settings, progress: progress)
        if source != path, var failure = report.failure {
            failure.message = failure.message.replacingOccurrences(of: source, with: path)
            report.failure = failure
        }
        if let analysis = report.analysis, analysis.identity != digest.identity {
            // Not the version that was hashed: no verdict is recorded for these bytes.
            try? store.complete(entry, seen: nil)
            return .changed
        }
        if let analysis = report.analysis, report.isSensitive {
            return await hide(entry, at: source, held: held, identity: analysis.identity, sha256: digest.sha256, kind: report.kind, reasons: analysis.reasons,
                              preview: report.flaggedFrame, mode: mode, verdict: .quarantined, origin: origin(of: digest, arrivedAt: path, settings: settings))
        }
        if let failure = report.failure {
            return await failed(entry, at: source, held: held, failure: failure, kind: kind, digest: digest, settings: settings)
        }
        if let analysis = report.analysis, digest.originHost == nil,
           let late = await blockedSiteFoundLater(path, writtenAt: digest.identity, lookup: listLookup), let host = late.host {
            return await hideBlocked(entry, at: source, held: held, identity: analysis.identity, sha256: digest.sha256, kind: kind, mode: mode,
                                     reason: AuditStore.blockedSiteReason(host), site: true, origin: late)
        }
        if let analysis = report.analysis {
            var detail = analysis.cleanDetail
            if let partial = analysis.partialReason {
                detail += analysis.kind == .video ? " (video checked up to where it is readable: \(partial))" : " (partial picture: \(partial))"
            }
            if analysis.kind == .container {
                detail += analysis.pages.map { " (\(analysis.pagesJudged ?? 0) of \($0) pages judged)" }
                    ?? " (\(analysis.entries?.count ?? 0) pictures or videos inside judged)"
            }
            do {
                try store.complete(entry, seen: SeenFile(path: path, identity: analysis.identity, sha256: digest.sha256, mode: mode, verdict: .clean),
                                   events: [AuditEvent(.analysed, path: path, mode: mode, actor: actor, detail: detail)])
            } catch { return .databaseUnavailable("\(error)") }
            return .clean(detail: detail)
        }
        do {
            try store.complete(entry, seen: SeenFile(path: path, identity: digest.identity, sha256: digest.sha256, mode: mode, verdict: .other))
        } catch { return .databaseUnavailable("\(error)") }
        return .other
    }

    /// The analysis of the file at `source`; a video's resumes from the stretches an earlier,
    /// interrupted analysis of the same bytes on the same basis covered (the audit database keeps
    /// them while it runs, at most a second behind), and forgets them once it ends.
    func analyseResuming(_ source: String, sha256: String, kind: MediaType.Kind, settings: Settings,
                         progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
        guard kind == .video else { return await analysis(source, settings, progress) }
        let store = vault.store
        let basis = Self.videoBasis(settings)
        var settings = settings
        let earlier = CoveredRanges(pairs: (try? store.videoProgress(sha256: sha256, basis: basis)) ?? [])
        if !earlier.isEmpty {
            settings.video.alreadyCovered = earlier
            try? store.record(.analysed, path: source, mode: settings.mode, actor: actor,
                              detail: "video resumed: \(Int(earlier.measure.rounded())) s covered before it was interrupted")
        }
        struct Saved { var covered = CoveredRanges(); var at = ContinuousClock.now - .seconds(10); var written = CoveredRanges() }
        let saved = Locked(Saved(covered: earlier, written: earlier))
        @Sendable func save(_ covered: CoveredRanges, force: Bool) {
            let due = saved.withLock { s -> Bool in
                s.covered = covered
                guard covered != s.written, force || ContinuousClock.now - s.at >= .seconds(1) else { return false }
                s.at = .now
                s.written = covered
                return true
            }
            if due { try? store.saveVideoProgress(sha256: sha256, basis: basis, covered: covered.pairs) }
        }
        let report = await analysis(source, settings) { update in
            if update.covered.measure > 0 { save(update.covered, force: false) }
            progress(update)
        }
        if report.failure?.code == MediaError.Code.cancelled.rawValue {
            // Interrupted (a stop): what was covered stays for the next run.
            save(saved.withLock { $0.covered }, force: true)
        } else {
            try? store.forgetVideoProgress(sha256: sha256)
        }
        return report
    }

    /// What a video's covered stretches were judged on: the mode's policy, the gap and the models
    /// (every model of the catalog).
    static func videoBasis(_ settings: Settings, models: [ModelCatalog.Artifact] = ModelCatalog.models) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let policy = (try? encoder.encode(settings.policy)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        return "\(settings.mode.rawValue) gap=\(settings.video.maxGap) short=\(VideoAnalysisHandler.shortClipGap)<\(VideoAnalysisHandler.shortClipLimit) models=\(ModelCatalog.pins(of: models, separator: ",")) policy=\(policy)"
    }

    /// Hides a file in the vault: records `flagged` for a file that was judged sensitive, then
    /// moves it (the vault re-checks that it is still the version `identity` names) with its
    /// blurred preview. Throws, having moved nothing, when the vault refuses. `scan --quarantine`
    /// hides through this too.
    public func hide(path: String, recordedAs: String? = nil, identity: FileIdentity?, reasons: [String], preview: RGBImage?, mode: AnalysisMode,
                     verdict: Verdict, origin: DownloadSource? = nil, hash: Vault.ContentHash = .compute) throws -> VaultItem {
        if verdict == .quarantined {
            try vault.store.record(.flagged, path: recordedAs ?? path, mode: mode, actor: actor, detail: reasons.joined(separator: ", "))
        }
        return try vault.quarantine(path: path, recordedAs: recordedAs, expected: identity, reasons: reasons, mode: mode, actor: actor, preview: preview, origin: origin,
                                    hash: hash)
    }

    /// Hides a backlog entry and takes it off the backlog. The vault's move runs on a thread of
    /// its own (``onOwnThread(_:_:)``), never on Swift's cooperative threads (two here): a file
    /// with other names or from another filesystem is copied, and one to be hashed is read,
    /// whole (a hard-linked 10 GB video for minutes), and meanwhile every other account's
    /// pipeline, and every other task of the process, goes on.
    func hide(_ entry: BacklogEntry, at source: String, held: HeldFile? = nil, identity: FileIdentity, sha256: String?, kind: MediaType.Kind, reasons: [String], preview: RGBImage?,
              mode: AnalysisMode, verdict: Verdict, because: Notice.HiddenBecause = .flagged, origin: DownloadSource? = nil, tooLargeToHash: Bool = false) async -> Outcome {
        let intake = self
        let moved = try? await onOwnThread("intake-vault-move") {
            intake.hideNow(entry, at: source, held: held, identity: identity, sha256: sha256, kind: kind, reasons: reasons, preview: preview,
                           mode: mode, verdict: verdict, because: because, origin: origin, tooLargeToHash: tooLargeToHash)
        }
        // (The body throws nothing: each failure is an outcome.)
        return moved ?? .notMoved(verdict: verdict, reason: "the move could not be started")
    }

    /// ``hide(_:at:held:identity:sha256:kind:reasons:preview:mode:verdict:because:origin:tooLargeToHash:)``'s
    /// work, on the calling thread (it blocks for as long as the move takes).
    func hideNow(_ entry: BacklogEntry, at source: String, held: HeldFile?, identity: FileIdentity, sha256: String?, kind: MediaType.Kind, reasons: [String], preview: RGBImage?,
                 mode: AnalysisMode, verdict: Verdict, because: Notice.HiddenBecause, origin: DownloadSource?, tooLargeToHash: Bool) -> Outcome {
        let path = entry.path
        let store = vault.store
        // Its times go into the vault as they were before the check read it. That changes its
        // ctime, nothing else: in the private folder no one else can reach it.
        var identity = identity
        if let held, let holding {
            holding.restoreAccessTime(held)
            if let now = FileIdentity(statAt: source), now.device == identity.device, now.inode == identity.inode, now.size == identity.size,
               now.modificationNanoseconds == identity.modificationNanoseconds {
                identity = now
            }
        }
        do {
            // The hash judging took is the vault's too (it re-checks the version by identity).
            let hash: Vault.ContentHash = tooLargeToHash ? .skipped : sha256.map { .known($0) } ?? .compute
            var item = try hide(path: source, recordedAs: source == path ? nil : path, identity: identity, reasons: reasons, preview: preview, mode: mode, verdict: verdict,
                                origin: origin, hash: hash)
            // Released, it goes back into the folder it arrived in (by identity), if that is the account's.
            if let held, let arrival = holding?.arrival(of: held), let id = item.id { try? vault.recordArrival(arrival, of: id) }
            // Its other names were locked while it was held: the vault records the owner and mode it had.
            if let held, let original = holding?.originalOwnership(of: held), let id = item.id {
                item = (try? vault.recordOwnership(of: id, uid: original.uid, gid: original.gid, mode: original.mode)) ?? item
            }
            let id = item.id ?? 0
            try store.complete(entry, seen: SeenFile(path: path, identity: identity, sha256: sha256 ?? (item.sha256.isEmpty ? nil : item.sha256), mode: mode, verdict: verdict, itemId: id))
            let notice: Notice = verdict == .unverified ? .held(id: id, kind: kind, mode: mode)
                : .hidden(id: id, kind: kind, mode: mode, because: because)
            return .hidden(item, verdict: verdict, reasons: reasons, notice: notice)
        } catch {
            // The database refused (locked, read-only, damaged...): nothing was moved, and the
            // entry stays queued, so the file is judged again once it works. Taking it off the
            // backlog here would leave a flagged file where it is with its verdict lost.
            if DatabaseFault(error) != nil { return .databaseUnavailable("\(error)") }
            // The vault refused (the file changed or vanished since it was read, or the disk is
            // full): nothing was moved.
            try? store.complete(entry, seen: nil)
            return .notMoved(verdict: verdict, reason: "\(error)")
        }
    }

    /// Hides a file on a block list without analysis: its bytes, or (`site`) the site it came
    /// from. Its preview is decoded afterwards, from the vault's own copy.
    func hideBlocked(_ entry: BacklogEntry, at source: String, held: HeldFile?, identity: FileIdentity, sha256: String, kind: MediaType.Kind, mode: AnalysisMode,
                     reason: String, site: Bool, origin: DownloadSource?) async -> Outcome {
        let hidden = await hide(entry, at: source, held: held, identity: identity, sha256: sha256, kind: kind, reasons: ["blocked: \(reason)"], preview: nil, mode: mode,
                                verdict: .blocked, because: site ? .blockedSite : .blockedBytes, origin: origin)
        return await hidden.withPreview(from: self)
    }

    /// Where the file that arrived at `path` came from, for the record of its hiding: what its
    /// digest found, else (the file does not say) the browsers' history, asked now.
    func origin(of digest: Digest, arrivedAt path: String, settings: Settings) -> DownloadSource? {
        if let source = digest.source { return source }
        guard digest.originHost == nil, !digest.historyAsked, settings.agent.browserHistory else { return nil }
        return originLookup?(path)
    }

    /// The origin of a download that its browser records a moment later, awaited (up to
    /// ``originWait``) only when it could change the verdict: `lookup` is given only while some
    /// site is blocked, and a browser may still record it. Returns it when its site is blocked.
    func blockedSiteFoundLater(_ path: String, writtenAt: FileIdentity, lookup: OriginLookup?) async -> DownloadSource? {
        guard let lookup, let mayFollow = originMayFollow,
              mayFollow(path, Self.date(nanoseconds: writtenAt.modificationNanoseconds)) else { return nil }
        guard let found = await awaitOrigin(path, lookup: lookup), let host = found.host else { return nil }
        return (try? vault.store.isBlocked(host: host)) == true ? found : nil
    }

    /// A recorded modification time (nanoseconds since 1970) as a date.
    static func date(nanoseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(nanoseconds) / 1e9) }

    /// Asks `lookup` every half second until it answers, for up to ``originWait``.
    func awaitOrigin(_ path: String, lookup: OriginLookup) async -> DownloadSource? {
        let deadline = ContinuousClock.now + originWait
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(500))
            if Task.isCancelled { return nil }
            if let found = lookup(path) { return found }
        }
        return nil
    }

    /// After `item` was hidden without a known origin: waits for its browser's history (when a
    /// browser may still write it) and records the URL and page, so that `show` names the site
    /// and `block --origin` works. Returns what was found.
    @discardableResult
    public func followOrigin(of item: VaultItem, arrivedAt path: String, settings: Settings) async -> DownloadSource? {
        guard item.originURL == nil, settings.agent.browserHistory, let lookup = originLookup, let id = item.id,
              originMayFollow?(path, Self.date(nanoseconds: item.modificationNanoseconds)) == true,
              let found = await awaitOrigin(path, lookup: lookup) else { return nil }
        guard (try? vault.recordOrigin(found, of: id, actor: actor)) == true else { return nil }
        return found
    }

    /// A file that could not be analysed: `on_error` decides.
    func failed(_ entry: BacklogEntry, at source: String? = nil, held: HeldFile? = nil, failure: FileReport.Failure, kind: MediaType.Kind, digest: Digest?,
                identity known: FileIdentity? = nil, settings: Settings) async -> Outcome {
        let path = entry.path
        let mode = settings.mode
        switch failure.code {
        case MediaError.Code.cancelled.rawValue:
            return .cancelled
        case MediaError.Code.notFound.rawValue, MediaError.Code.symbolicLink.rawValue, MediaError.Code.notRegularFile.rawValue, MediaError.Code.empty.rawValue:
            try? vault.store.complete(entry, seen: nil)
            return .unopenable(reason: failure.message)
        case MediaError.Code.changedDuringRead.rawValue:
            try? vault.store.complete(entry, seen: nil)
            return .changed
        default:
            break
        }
        let identity = digest?.identity ?? known ?? entry.identity
        switch settings.policy.onError {
        case .hold:
            return await hide(entry, at: source ?? path, held: held, identity: identity, sha256: digest?.sha256, kind: kind, reasons: ["unverified: \(failure.message)"],
                              preview: nil, mode: mode, verdict: .unverified, origin: digest.flatMap { origin(of: $0, arrivedAt: path, settings: settings) },
                              tooLargeToHash: digest == nil && failure.code == MediaError.Code.fileTooLarge.rawValue)
        case .leave:
            try? vault.store.complete(entry, seen: SeenFile(path: path, identity: identity, sha256: digest?.sha256, mode: mode, verdict: .failed),
                                      events: [AuditEvent(.error, path: path, mode: mode, actor: actor, detail: "\(failure.code): \(failure.message)")])
            let reason = failure.message.hasPrefix(path + ": ") ? String(failure.message.dropFirst(path.count + 2)) : failure.message
            let shown = PathBytes.escapingRawBytes(reason)
            let notice = Notice.left(name: PathBytes.display((path as NSString).lastPathComponent), reason: shown.prefix(1).uppercased() + shown.dropFirst(), mode: mode)
            return .left(reason: failure.message, notice: notice)
        }
    }
}

extension Intake.Outcome {
    /// A file hidden without analysis has no preview yet: one is decoded from the vault's own
    /// copy (by the engine: the confined worker) and attached.
    func withPreview(from intake: Intake) async -> Intake.Outcome {
        guard case .hidden(let item, let verdict, let reasons, let notice) = self, let id = item.id, item.previewName == nil,
              let copy = intake.vault.contentPath(of: item), let frame = await intake.previewFrame(copy),
              let withPreview = try? intake.vault.attachPreview(frame, to: id) else { return self }
        return .hidden(withPreview, verdict: verdict, reasons: reasons, notice: notice)
    }
}
