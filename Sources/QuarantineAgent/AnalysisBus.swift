#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Locking
import Logging
import MediaDecoding
import QuarantineCore
import SensitivityAnalysis
import ServiceSupport

/// The agent's analysis service for applications on the session bus: the well-known name
/// `io.github.quarantine.Analysis1`, object `/io/github/quarantine/Analysis1`
/// (packaging/dbus/io.github.quarantine.Analysis1.xml, docs/dbus.md).
///
/// Applications of the agent's own user pass open descriptors, never paths; the bytes are
/// judged by the agent's ``AnalysisEngine`` (the same confined worker as every file), under the
/// policy of the mode in force. Each caller has at most ``maxJobsPerCaller`` jobs at once
/// (pictures waiting or judged, videos running, streams open); pictures and frames share
/// ``AnalysisEngine/workers`` slots and videos one, both handed out in turn among callers
/// (``FairShare``). A caller that leaves the bus has its jobs cancelled and its objects removed.
public final class AnalysisBus: Sendable {
    public static let busName = "io.github.quarantine.Analysis1"
    public static let objectPath = "/io/github/quarantine/Analysis1"
    public static let interface = "io.github.quarantine.Analysis1"
    static let videoJobInterface = interface + ".VideoJob"
    static let streamInterface = interface + ".Stream"
    static let errorPrefix = interface + ".Error."
    /// Jobs one caller may have at once.
    public static let maxJobsPerCaller = 8
    /// Finished video jobs kept on the bus per caller (for their `Result`), oldest removed first.
    static let keptFinishedJobs = 8

    /// The `AnalysisPolicy` property, as Apple's `SCSensitivityAnalysisPolicy`.
    public enum Policy: String, Sendable {
        /// Adult mode with `agent.app_analysis = false`: applications are told not to ask.
        case disabled
        /// Adult mode: brief interventions.
        case simple = "simple"
        /// Child mode: descriptive interventions; never `disabled`.
        case descriptive

        public init(_ settings: Settings) {
            if settings.mode == .child { self = .descriptive } else { self = settings.agent.appAnalysis ? .simple : .disabled }
        }
    }

    private struct State {
        var service: SessionBusService?
        var settings: Settings
        var stopped = false
        var nextID: UInt64 = 0
        var videoJobs: [String: BusVideoJob] = [:]
        var streams: [String: (owner: String, participant: String, direction: String, analysis: any LiveStreamAnalysis)] = [:]
        /// Pictures waiting or judged, by caller, with their tasks (cancelled when the caller goes).
        var pictures: [String: [UInt64: Task<Void, Never>]] = [:]
        /// Finished video jobs per caller, oldest first.
        var finishedJobs: [String: [String]] = [:]
    }

    private let state: Locked<State>
    private let engine: @Sendable () -> (any AnalysisEngine)?
    private let problem: @Sendable () -> String?
    private let logger: Logger
    private let pictureShare: FairShare
    private let videoShare = FairShare(slots: 1)

    private init(settings: Settings, engine: @escaping @Sendable () -> (any AnalysisEngine)?,
                 problem: @escaping @Sendable () -> String?, logger: Logger) {
        state = Locked(State(settings: settings))
        self.engine = engine
        self.problem = problem
        self.logger = logger
        pictureShare = FairShare(slots: max(1, settings.analyzer.workers))
    }

    /// Takes the name on the bus at `address` and serves until ``stop()``. `engine` is asked at
    /// each call (the agent replaces it when it reloads); `problem` says why there is none.
    public static func start(address: String, settings: Settings, engine: @escaping @Sendable () -> (any AnalysisEngine)?,
                             problem: @escaping @Sendable () -> String?, logger: Logger) throws -> AnalysisBus {
        let bus = AnalysisBus(settings: settings, engine: engine, problem: problem, logger: logger)
        let service = try SessionBusService.start(address: address, name: busName, handler: { [weak bus] call in
            guard let bus else { return call.fail("org.freedesktop.DBus.Error.ServiceUnknown", "the agent is stopping") }
            bus.handle(call)
        }, callerGone: { [weak bus] sender in bus?.callerLeft(sender) })
        bus.state.withLock { $0.service = service }
        return bus
    }

    /// Cancels every job, ends every stream and leaves the bus. Idempotent.
    public func stop() {
        let (service, tasks, jobs, streams) = state.withLock { s in
            s.stopped = true
            defer { s.service = nil; s.pictures = [:]; s.videoJobs = [:]; s.streams = [:] }
            return (s.service, s.pictures.values.flatMap(\.values), Array(s.videoJobs.values), s.streams.values.map(\.analysis))
        }
        for task in tasks { task.cancel() }
        for job in jobs { job.cancel(reason: "the agent is stopping") }
        for stream in streams { stream.end() }
        service?.stop()
    }

    /// The configuration in force changed (a reload): `AnalysisPolicy` follows, with
    /// `PropertiesChanged` when it changes.
    public func update(_ settings: Settings) {
        let (old, service) = state.withLock { s -> (Policy, SessionBusService?) in
            defer { s.settings = settings }
            return (Policy(s.settings), s.service)
        }
        let new = Policy(settings)
        guard new != old else { return }
        logger.notice("analysis policy for applications: \(old.rawValue) -> \(new.rawValue)")
        service?.propertiesChanged(path: Self.objectPath, interface: Self.interface, [("AnalysisPolicy", .string(new.rawValue))])
    }

    var policy: Policy { state.withLock { Policy($0.settings) } }

    // MARK: - Routes

    /// One table: each (interface, member) with the argument signature it takes and where it
    /// lives (the root object, a caller's video job, a caller's stream).
    private enum Place { case root, videoJob, stream, any }

    private static let routes: [String: (signature: String, place: Place)] = [
        "org.freedesktop.DBus.Introspectable.Introspect": ("", .any),
        "org.freedesktop.DBus.Properties.Get": ("ss", .any),
        "org.freedesktop.DBus.Properties.GetAll": ("s", .any),
        "org.freedesktop.DBus.Properties.Set": ("ssv", .any),
        "org.freedesktop.DBus.Peer.Ping": ("", .any),
        interface + ".AnalyzeImage": ("h", .root),
        interface + ".AnalyzeVideo": ("h", .root),
        interface + ".BeginStream": ("ss", .root),
        videoJobInterface + ".Cancel": ("", .videoJob),
        streamInterface + ".AnalyzeFrame": ("h", .stream),
        streamInterface + ".ContinueStream": ("", .stream),
        streamInterface + ".End": ("", .stream),
    ]

    private func handle(_ call: SessionBusService.Call) {
        guard let route = Self.routes[call.interface + "." + call.member] else {
            return call.fail("org.freedesktop.DBus.Error.UnknownMethod", "no method \(call.interface).\(call.member) here (see Introspect)")
        }
        guard call.signature == route.signature else {
            return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "\(call.member) takes (\(route.signature)), not (\(call.signature))")
        }
        // Objects of other callers are not there, as far as a caller can tell.
        let place: Place
        if call.path == Self.objectPath { place = .root }
        else if let job = state.withLock({ $0.videoJobs[call.path] }), job.owner == call.sender { place = .videoJob }
        else if let stream = state.withLock({ $0.streams[call.path] }), stream.owner == call.sender { place = .stream }
        else { return call.fail("org.freedesktop.DBus.Error.UnknownObject", "no object \(call.path) for this caller") }
        guard route.place == .any || route.place == place else {
            return call.fail("org.freedesktop.DBus.Error.UnknownMethod", "\(call.path) has no method \(call.interface).\(call.member)")
        }
        switch call.member {
        case "Introspect": introspect(call, place)
        case "Get", "GetAll": properties(call, place)
        case "Set": call.fail("org.freedesktop.DBus.Error.PropertyReadOnly", "every property here is read-only")
        case "Ping": call.reply([])
        case "AnalyzeImage": analyzeImage(call)
        case "AnalyzeVideo": analyzeVideo(call)
        case "BeginStream": beginStream(call)
        case "Cancel":
            state.withLock { $0.videoJobs[call.path] }?.cancel()
            call.reply([])
        case "AnalyzeFrame": analyzeFrame(call)
        case "ContinueStream":
            state.withLock { $0.streams[call.path] }?.analysis.continueStream()
            call.reply([])
        case "End":
            endStream(call.path)
            call.reply([])
        default: call.fail("org.freedesktop.DBus.Error.UnknownMethod", call.member)
        }
    }

    private func introspect(_ call: SessionBusService.Call, _ place: Place) {
        switch place {
        case .root: call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.analysis))])
        case .videoJob: call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.videoJob))])
        case .stream: call.reply([.string(AnalysisBusInterface.document(AnalysisBusInterface.stream))])
        case .any: call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path)
        }
    }

    private func properties(_ call: SessionBusService.Call, _ place: Place) {
        let (interfaceName, name) = call.withArguments { reader in (reader.string() ?? "", reader.string()) }
        let all: [(String, DBusValue)]
        let expected: String
        switch place {
        case .root:
            expected = Self.interface
            all = [("AnalysisPolicy", .string(policy.rawValue))]
        case .videoJob:
            expected = Self.videoJobInterface
            all = state.withLock { $0.videoJobs[call.path] }?.properties ?? []
        case .stream:
            expected = Self.streamInterface
            guard let stream = state.withLock({ $0.streams[call.path] }) else { return call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path) }
            let snapshot = stream.analysis.snapshot
            all = [
                ("Participant", .string(stream.participant)), ("Direction", .string(stream.direction)),
                ("ShouldIndicateSensitivity", .boolean(snapshot.intervention.shouldIndicateSensitivity)),
                ("ShouldInterruptVideo", .boolean(snapshot.intervention.shouldInterruptVideo)),
                ("ShouldMuteAudio", .boolean(snapshot.intervention.shouldMuteAudio)),
                ("FramesJudged", .uint64(snapshot.judged)), ("FramesDropped", .uint64(snapshot.dropped)),
                ("FramesSkipped", .uint64(snapshot.skipped)),
            ]
        case .any:
            return call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path)
        }
        guard interfaceName == expected || (name == nil && interfaceName.isEmpty) else {
            return call.fail("org.freedesktop.DBus.Error.UnknownInterface", "\(call.path) has no properties of \(interfaceName)")
        }
        guard let name else { return call.reply([.variantDictionary(all)]) }
        guard let value = all.first(where: { $0.0 == name })?.1 else {
            return call.fail("org.freedesktop.DBus.Error.UnknownProperty", "\(expected) has no property \(name)")
        }
        call.reply([.variant(value)])
    }

    // MARK: - Admission

    /// Why a call cannot start analysis, as a D-Bus error; nil when it may.
    private func refusal(for caller: String) -> (name: String, text: String)? {
        let (stopped, count, policy) = state.withLock { s in (s.stopped, jobCount(s, caller), Policy(s.settings)) }
        if stopped { return ("org.freedesktop.DBus.Error.ServiceUnknown", "the agent is stopping") }
        if policy == .disabled {
            return (Self.errorPrefix + "Disabled", "analysis for applications is turned off (agent.app_analysis = false in the configuration)")
        }
        if engine() == nil {
            return (Self.errorPrefix + "Unavailable", "the agent cannot analyse now: \(problem() ?? "its analysis is starting")")
        }
        if count >= Self.maxJobsPerCaller {
            return ("org.freedesktop.DBus.Error.LimitsExceeded", "\(Self.maxJobsPerCaller) jobs of this caller are in flight already: wait for one to end")
        }
        return nil
    }

    private func jobCount(_ s: State, _ caller: String) -> Int {
        (s.pictures[caller]?.count ?? 0) + s.videoJobs.values.filter { $0.owner == caller && $0.phase == .running }.count
            + s.streams.values.filter { $0.owner == caller }.count
    }

    /// O_PATH (Linux, the same on x86-64 and arm64): Glibc's Swift module leaves it out.
    static let openPathFlag: Int32 = 0o10000000

    /// Reads the one descriptor a call carries (`h`); answers the call when it has none.
    private func descriptor(of call: SessionBusService.Call) -> Int32? {
        guard let fd = call.withArguments({ $0.unixFD() }) else {
            call.fail("org.freedesktop.DBus.Error.InvalidArgs", "\(call.member) takes an open descriptor (h) of the file, never a path")
            return nil
        }
        // Opened for reading: an O_PATH or write-only descriptor would read as empty bytes.
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, flags & Self.openPathFlag == 0, flags & O_ACCMODE != O_WRONLY else {
            close(fd)
            call.fail("org.freedesktop.DBus.Error.InvalidArgs", "the descriptor is not open for reading: open the file with O_RDONLY")
            return nil
        }
        return fd
    }

    // MARK: - Pictures

    private func analyzeImage(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call) else { return }
        if let refused = refusal(for: call.sender) {
            close(fd)
            return call.fail(refused.name, refused.text)
        }
        let caller = call.sender
        state.withLock { s in
            s.nextID += 1
            let id = s.nextID
            s.pictures[caller, default: [:]][id] = Task { [self] in
                defer {
                    close(fd)
                    state.withLock { s in
                        s.pictures[caller]?[id] = nil
                        if s.pictures[caller]?.isEmpty == true { s.pictures[caller] = nil }
                    }
                }
                let started = ContinuousClock.now
                switch await judgePicture(fd, key: "\(caller)/picture-\(id)", caller: caller) {
                case .success(let analysis):
                    let elapsed = ContinuousClock.now - started
                    let policy = state.withLock { $0.settings.policy }
                    call.reply([.boolean(analysis.isSensitive), .stringArray(analysis.reasons),
                                Self.boxes(analysis, policy: policy),
                                .double(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)])
                case .failure(let failure):
                    call.fail(failure.name, failure.message)
                }
            }
        }
    }

    /// Why a picture or frame has no verdict, as a D-Bus error.
    struct Failure: Error {
        var name: String
        var message: String
    }

    /// Judges the picture open at `fd` (borrowed) through the engine, in the caller's turn.
    /// `key` names it for the analysis (``MediaFile/PassedDescriptors``): no path is ever opened.
    func judgePicture(_ fd: Int32, key: String, caller: String) async -> Result<SensitivityAnalysis, Failure> {
        guard let engine = engine() else {
            return .failure(Failure(name: Self.errorPrefix + "Unavailable", message: "the agent cannot analyse now: \(problem() ?? "its analysis is starting")"))
        }
        let name = "dbus:" + key
        guard MediaFile.PassedDescriptors.add(fd, for: name) else {
            return .failure(Failure(name: "org.freedesktop.DBus.Error.Failed", message: "the descriptor could not be handed to the analysis"))
        }
        defer { MediaFile.PassedDescriptors.remove(name) }
        let type: MediaType
        do {
            type = try await engine.runBlocking(video: false) { try MediaFile(path: name).type }
        } catch {
            return .failure(Self.cannotAnalyze(FileReport.Failure(error, path: name), name: name))
        }
        guard type.kind == .image else {
            return .failure(Failure(name: Self.errorPrefix + "NotAPicture",
                                    message: type.kind == .video ? "this is a video: use AnalyzeVideo" : "these bytes are not a picture this agent reads (\(type.rawValue))"))
        }
        let settings = state.withLock { $0.settings }
        let report: FileReport
        do {
            report = try await pictureShare.run(caller: caller) {
                await engine.report(forFileAt: name, settings: settings, progress: { _ in })
            }
        } catch {
            return .failure(Failure(name: Self.errorPrefix + "CannotAnalyze", message: "cancelled"))
        }
        guard let analysis = report.analysis else {
            return .failure(Self.cannotAnalyze(report.failure ?? .init(code: "error", message: "no verdict"), name: name))
        }
        return .success(analysis)
    }

    static func cannotAnalyze(_ failure: FileReport.Failure, name: String) -> Failure {
        // The key stands for a descriptor: the caller knows it as "the file".
        let message = failure.message.replacingOccurrences(of: name + ": ", with: "").replacingOccurrences(of: name, with: "the file")
        return Failure(name: errorPrefix + "CannotAnalyze", message: "\(failure.code): \(message)")
    }

    /// The regions that made the picture sensitive: label, score, x, y, width, height (pixels).
    static func boxes(_ analysis: SensitivityAnalysis, policy: SensitivityPolicy) -> DBusValue {
        let counted = analysis.detections.filter { d in
            analysis.reasons.contains { $0.hasPrefix(d.label + " ") }
                && (d.label == TestCard.label || policy.labelThresholds[d.label].map { d.score >= $0 } ?? false)
        }
        return .array(elementSignature: "(sddddd)", counted.map {
            .structure([.string($0.label), .double($0.score), .double($0.box.x), .double($0.box.y), .double($0.box.width), .double($0.box.height)])
        })
    }

    // MARK: - Videos

    private func analyzeVideo(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call) else { return }
        if let refused = refusal(for: call.sender) {
            close(fd)
            return call.fail(refused.name, refused.text)
        }
        guard let engine = engine() else {
            close(fd)
            return call.fail(Self.errorPrefix + "Unavailable", "the agent cannot analyse now")
        }
        let caller = call.sender
        let key: String
        do {
            key = try Self.videoKey(fd, state: state)
        } catch {
            close(fd)
            return call.fail(error.name, error.message)
        }
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        let path = "\(Self.objectPath)/video/\(id)"
        let job = BusVideoJob(path: path, owner: caller) { [weak self] member, values in
            self?.state.withLock { $0.service }?.signal(path: path, interface: Self.videoJobInterface, member: member, values, destination: caller)
        }
        state.withLock { $0.videoJobs[path] = job }
        // Judged to the end: every flagged stretch is in the result.
        let videoSettings = state.withLock { s -> Settings in
            var settings = s.settings
            settings.video.allFlaggedRanges = true
            return settings
        }
        let share = videoShare
        let task = Task { [weak self] in
            defer { close(fd) }
            let name = "dbus:" + key
            guard MediaFile.PassedDescriptors.add(fd, for: name) else { return job.failed(code: "error", message: "the descriptor could not be handed to the analysis") }
            defer { MediaFile.PassedDescriptors.remove(name) }
            do {
                let type = try await engine.runBlocking(video: true) { try MediaFile(path: name).type }
                guard type.kind == .video || type == .gif || type == .png || type == .webp else {
                    return job.failed(code: "not_a_video", message: "these bytes are not a video this agent reads (\(type.rawValue)); pictures go to AnalyzeImage")
                }
                let report = try await share.run(caller: caller) {
                    await engine.report(forFileAt: name, settings: videoSettings) { job.progressed($0) }
                }
                if Task.isCancelled { return }
                guard let analysis = report.analysis else {
                    let failure = Self.cannotAnalyze(report.failure ?? .init(code: "error", message: "no verdict"), name: name)
                    return job.failed(code: report.failure?.code ?? "error", message: failure.message)
                }
                job.finished(BusVideoJob.Verdict(sensitive: analysis.isSensitive, flaggedTime: analysis.frameTime ?? -1,
                                                 flaggedRanges: (analysis.flaggedRanges ?? []).compactMap { $0.count == 2 ? $0[0]...max($0[0], $0[1]) : nil },
                                                 reasons: analysis.reasons))
            } catch {
                if !Task.isCancelled { job.failed(code: FileReport.Failure(error, path: name).code, message: Self.cannotAnalyze(FileReport.Failure(error, path: name), name: name).message) }
            }
            self?.retire(job)
        }
        job.attach(task)
        call.reply([.objectPath(path)])
    }

    /// A video job ended: kept for its `Result`, the oldest finished ones of its caller removed.
    private func retire(_ job: BusVideoJob) {
        state.withLock { s in
            guard s.videoJobs[job.path] != nil else { return }
            s.finishedJobs[job.owner, default: []].append(job.path)
            while let list = s.finishedJobs[job.owner], list.count > Self.keptFinishedJobs {
                s.videoJobs[list[0]] = nil
                s.finishedJobs[job.owner]!.removeFirst()
            }
        }
    }

    /// A name for a passed video descriptor (checked to be a regular file first, so a pipe is
    /// refused at the call, not in the job).
    private static func videoKey(_ fd: Int32, state: Locked<State>) throws(Failure) -> String {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw Failure(name: errorPrefix + "NotAVideo", message: "the descriptor is not a regular file (a pipe or socket cannot be sought in): pass a file or a memfd")
        }
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        return "video-\(id)"
    }

    // MARK: - Streams

    private func beginStream(_ call: SessionBusService.Call) {
        let (participant, direction) = call.withArguments { ($0.string() ?? "", $0.string() ?? "") }
        guard ["incoming", "outgoing"].contains(direction) else {
            return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "direction must be \"incoming\" or \"outgoing\", not \"\(direction)\"")
        }
        if let refused = refusal(for: call.sender) { return call.fail(refused.name, refused.text) }
        let caller = call.sender
        let id = state.withLock { s -> UInt64 in s.nextID += 1; return s.nextID }
        let path = "\(Self.objectPath)/stream/\(id)"
        let stream = WorkerFrameStream(judge: { [weak self] fd, serial in
            guard let self else { return nil }
            guard case .success(let analysis) = await self.judgePicture(fd, key: "\(caller)/stream-\(id)/frame-\(serial)", caller: caller) else { return nil }
            return (analysis.isSensitive, self.policy)
        }, changed: { [weak self] change in
            guard let service = self?.state.withLock({ $0.service }) else { return }
            service.signal(path: path, interface: Self.streamInterface, member: "AnalysisChanged",
                           [.boolean(change.shouldIndicateSensitivity), .boolean(change.shouldInterruptVideo), .boolean(change.shouldMuteAudio)],
                           destination: caller)
        })
        state.withLock { $0.streams[path] = (owner: caller, participant: participant, direction: direction, analysis: stream as any LiveStreamAnalysis) }
        call.reply([.objectPath(path)])
    }

    private func analyzeFrame(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call) else { return }
        guard let stream = state.withLock({ $0.streams[call.path] }) else {
            close(fd)
            return call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path)
        }
        // Answered at once: the frame waits (or an older one is dropped); AnalysisChanged tells.
        stream.analysis.submit(frame: fd)
        call.reply([])
    }

    private func endStream(_ path: String) {
        state.withLock { $0.streams.removeValue(forKey: path) }?.analysis.end()
    }

    // MARK: - Callers leaving

    /// The caller left the bus: its pictures and videos are cancelled, its streams ended, its objects removed.
    private func callerLeft(_ caller: String) {
        let (tasks, jobs, streams) = state.withLock { s -> ([Task<Void, Never>], [BusVideoJob], [any LiveStreamAnalysis]) in
            let tasks = Array((s.pictures.removeValue(forKey: caller) ?? [:]).values)
            let jobs = s.videoJobs.values.filter { $0.owner == caller }
            for job in jobs { s.videoJobs[job.path] = nil }
            s.finishedJobs[caller] = nil
            let streams = s.streams.filter { $0.value.owner == caller }
            for path in streams.keys { s.streams[path] = nil }
            return (tasks, jobs, streams.values.map(\.analysis))
        }
        let running = jobs.filter { $0.phase == .running }.count
        for task in tasks { task.cancel() }
        for job in jobs { job.cancel(reason: "the caller left the bus") }
        for stream in streams { stream.end() }
        if !tasks.isEmpty || running > 0 || !streams.isEmpty {
            logger.info("\(caller) left the session bus: \(tasks.count) picture(s) and \(running) video(s) cancelled, \(streams.count) stream(s) ended")
        }
    }
}
