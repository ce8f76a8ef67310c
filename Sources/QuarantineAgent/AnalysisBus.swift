#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
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

    /// The largest frame `AnalyzeFrame` or `AnalyzeRawFrame` reads (a 4K RGBA frame is 33 MB).
    static let maxFrameBytes = 64 << 20

    private struct State {
        var service: SessionBusService?
        var settings: Settings
        var stopped = false
        var nextID: UInt64 = 0
        var videoJobs: [String: BusVideoJob] = [:]
        var streams: [String: BusStream] = [:]
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
            return (s.service, s.pictures.values.flatMap(\.values), Array(s.videoJobs.values), Array(s.streams.values))
        }
        for task in tasks { task.cancel() }
        for job in jobs { job.cancel(reason: "the agent is stopping") }
        for stream in streams { stream.cancel() }
        service?.stop()
    }

    /// The configuration in force changed (a reload): `AnalysisPolicy` follows, with
    /// `PropertiesChanged` when it changes.
    public func update(_ settings: Settings) {
        let (old, service) = state.withLock { s -> (AnalysisPolicy, SessionBusService?) in
            defer { s.settings = settings }
            return (AnalysisPolicy(s.settings), s.service)
        }
        let new = AnalysisPolicy(settings)
        guard new != old else { return }
        logger.notice("analysis policy for applications: \(old.rawValue) -> \(new.rawValue)")
        service?.propertiesChanged(path: Self.objectPath, interface: Self.interface, [("AnalysisPolicy", .string(new.rawValue))])
    }

    var policy: AnalysisPolicy { state.withLock { AnalysisPolicy($0.settings) } }

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
        streamInterface + ".AnalyzeRawFrame": ("huus", .stream),
        streamInterface + ".AnalyzeRawFrames": ("huus", .stream),
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
        case "AnalyzeRawFrame": analyzeRawFrame(call)
        case "AnalyzeRawFrames": analyzeRawFrames(call)
        case "ContinueStream":
            state.withLock { $0.streams[call.path] }?.analyzer.continueStream()
            call.reply([])
        case "End": endStream(call)
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
            all = stream.properties
        case .any:
            return call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path)
        }
        call.replyProperties(all, of: expected)
    }

    // MARK: - Admission

    /// Why a call cannot start analysis, as a D-Bus error; nil when it may.
    private func refusal(for caller: String) -> (name: String, text: String)? {
        let (stopped, count, policy) = state.withLock { s in (s.stopped, jobCount(s, caller), AnalysisPolicy(s.settings)) }
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
        Self.readable(call.withArguments({ $0.unixFD() }), call)
    }

    /// `fd` when it is open for reading; else closes it and answers the call (`what` the
    /// descriptor stands for, in the answer: a file, a frame). The forwarder's streams check theirs
    /// here too.
    static func readable(_ fd: Int32?, _ call: SessionBusService.Call, of what: String = "file") -> Int32? {
        guard let fd else {
            call.fail("org.freedesktop.DBus.Error.InvalidArgs", "\(call.member) takes an open descriptor (h) of the \(what), never a path")
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
    /// `settings`: those in force, unless given (a stream keeps those of its beginning).
    func judgePicture(_ fd: Int32, key: String, caller: String, settings given: Settings? = nil) async -> Result<SensitivityAnalysis, Failure> {
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
        let settings = given ?? state.withLock { $0.settings }
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
        let job = BusVideoJob(path: path, owner: caller, emit: { [weak self] member, values in
            self?.state.withLock { $0.service }?.signal(path: path, interface: Self.videoJobInterface, member: member, values, destination: caller)
        }, changed: { [weak self] properties in
            self?.state.withLock { $0.service }?.propertiesChanged(path: path, interface: Self.videoJobInterface, properties, destination: caller)
        })
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
        let (participant, rawDirection) = call.withArguments { ($0.string() ?? "", $0.string() ?? "") }
        guard let direction = VideoStreamAnalyzer.StreamDirection(rawValue: rawDirection) else {
            return call.fail("org.freedesktop.DBus.Error.InvalidArgs", "direction must be \"incoming\" or \"outgoing\", not \"\(rawDirection)\"")
        }
        if let refused = refusal(for: call.sender) { return call.fail(refused.name, refused.text) }
        let caller = call.sender
        // The stream keeps the policy in force when it began: its rule and its thresholds.
        let (id, settings) = state.withLock { s -> (UInt64, Settings) in s.nextID += 1; return (s.nextID, s.settings) }
        let path = "\(Self.objectPath)/stream/\(id)"
        let judge = WorkerFrameJudge { [weak self] file, serial in
            guard let self else { throw WorkerFrameJudge.Cancelled() }
            return try await self.judgeFrame(file, key: "\(caller)/stream-\(id)/frame-\(serial)", caller: caller, settings: settings)
        }
        let stream = BusStream(path: path, owner: caller, participant: participant, direction: direction, judge: judge,
                               policy: settings.policy, analysisPolicy: AnalysisPolicy(settings)) { [weak self] change in
            // Only while the object is there: nothing after the caller left.
            guard let service = self?.state.withLock({ $0.streams[path] != nil ? $0.service : nil }) else { return }
            Self.sendAdvice(on: service, path: path, to: caller, indicate: change.shouldIndicateSensitivity,
                            interrupt: change.shouldInterruptVideo, mute: change.shouldMuteAudio)
        }
        state.withLock { $0.streams[path] = stream }
        call.reply([.objectPath(path)])
    }

    /// Judges one frame (a picture file's bytes) through the engine, in the caller's turn: the
    /// bytes go to the worker in a memfd, as a caller's picture does.
    private func judgeFrame(_ file: [UInt8], key: String, caller: String, settings: Settings) async throws -> VideoFrameVerdict {
        let fd: Int32
        switch MemoryFile.holding(file, name: "quarantine-frame") {
        case .success(let made): fd = made
        case .failure(let failure): throw Failure(name: "org.freedesktop.DBus.Error.NoMemory", message: failure.description)
        }
        defer { close(fd) }
        let analysis = try await judgePicture(fd, key: key, caller: caller, settings: settings).get()
        return VideoFrameVerdict(isSensitive: analysis.isSensitive, reasons: analysis.reasons, detections: analysis.detections)
    }

    /// The stream a frame call is for (its caller's, checked by the route), or nil after answering.
    private func stream(for call: SessionBusService.Call, closing fd: Int32) -> BusStream? {
        guard let stream = state.withLock({ $0.streams[call.path] }) else {
            close(fd)
            call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path)
            return nil
        }
        return stream
    }

    /// `AnalyzeFrame(h frame)`: one encoded picture, read whole now; answered at once (the frame
    /// waits, or pushes out the one waiting); `AnalysisChanged` tells the outcome.
    private func analyzeFrame(_ call: SessionBusService.Call) {
        guard let fd = descriptor(of: call), let stream = stream(for: call, closing: fd) else { return }
        defer { close(fd) }
        do {
            let bytes = try Self.readFrame(fd, bytes: nil)
            stream.analyzer.analyze(VideoStreamFrame(.encoded(bytes)))
            call.reply([])
        } catch {
            call.fail(error.name, error.message)
        }
    }

    /// `AnalyzeRawFrame(h frame, u width, u height, s pixel_format)`: one uncompressed frame, the
    /// first bytes of the descriptor's file (a memfd), laid out as `pixel_format`.
    private func analyzeRawFrame(_ call: SessionBusService.Call) {
        let (passed, width, height, formatName) = call.withArguments { r in (r.unixFD(), r.uint32(), r.uint32(), r.string()) }
        guard let fd = Self.readable(passed, call), let stream = stream(for: call, closing: fd) else { return }
        defer { close(fd) }
        do {
            let raw = try Self.rawFrame(fd, width: Int(width ?? 0), height: Int(height ?? 0), format: formatName ?? "")
            stream.analyzer.analyze(VideoStreamFrame(.raw(raw)))
            call.reply([])
        } catch {
            call.fail(error.name, error.message)
        }
    }

    /// `AnalyzeRawFrames(h pipe, u width, u height, s pixel_format)`: a pipe of raw frames of one
    /// size, read on a thread of its own until the writer closes it (``RawFramePipe``); answered
    /// at once; `RawFramesEnded(t frames, s reason)` when the reading ends.
    private func analyzeRawFrames(_ call: SessionBusService.Call) {
        let (passed, width, height, formatName) = call.withArguments { r in (r.unixFD(), r.uint32(), r.uint32(), r.string()) }
        guard let fd = Self.readable(passed, call), let stream = stream(for: call, closing: fd),
              let pipe = Self.rawFramePipe(call, fd: fd, width: width, height: height, format: formatName, attach: stream.attach) else { return }
        let path = stream.path, caller = call.sender
        pipe.start(deliver: { [weak stream] frame in
            stream?.analyzer.analyze(VideoStreamFrame(.raw(frame)))
        }, ended: { [weak self, weak stream] frames, reason in
            stream?.detach(pipe)
            self?.logger.debug("\(path): a pipe of raw frames ended (\(reason)) after \(frames) frame(s)")
            // Only while the object is there: nothing after the caller left.
            guard let service = self?.state.withLock({ $0.streams[path] != nil ? $0.service : nil }) else { return }
            service.signal(path: path, interface: Self.streamInterface, member: "RawFramesEnded", [.uint64(frames), .string(reason)], destination: caller)
        })
        call.reply([])
    }

    /// A stream's new advice to its caller alone (the agent's streams and the forwarder's): the
    /// three properties first, so that a client reading them at the signal sees them changed,
    /// then `AnalysisChanged`.
    static func sendAdvice(on service: SessionBusService, path: String, to caller: String, indicate: Bool, interrupt: Bool, mute: Bool) {
        service.propertiesChanged(path: path, interface: streamInterface, [
            ("ShouldIndicateSensitivity", .boolean(indicate)),
            ("ShouldInterruptVideo", .boolean(interrupt)),
            ("ShouldMuteAudio", .boolean(mute)),
        ], destination: caller)
        service.signal(path: path, interface: streamInterface, member: "AnalysisChanged", [.boolean(indicate), .boolean(interrupt), .boolean(mute)],
                       destination: caller)
    }

    /// The pipe of `AnalyzeRawFrames` for a stream (the agent's or the forwarder's): made from
    /// `fd` (its size and pixel format checked) and given to the stream with `attach`, which
    /// takes one at a time and none once the stream is ending. Nil when refused, the call then
    /// answered with why; the caller starts the pipe and answers the call.
    static func rawFramePipe(_ call: SessionBusService.Call, fd: Int32, width: UInt32?, height: UInt32?, format: String?,
                             attach: (RawFramePipe) -> Bool) -> RawFramePipe? {
        let pipe: RawFramePipe
        do { pipe = try RawFramePipe(fd: fd, width: Int(width ?? 0), height: Int(height ?? 0), format: format ?? "") } catch {
            call.fail(error.name, error.message)
            return nil
        }
        guard attach(pipe) else {
            pipe.stop(wait: false)
            call.fail("org.freedesktop.DBus.Error.LimitsExceeded", "this stream reads a pipe already (one at a time: close its writing end first), or it is ending")
            return nil
        }
        return pipe
    }

    /// The raw frame at the start of `fd`'s file, its size and layout checked before anything is read.
    static func rawFrame(_ fd: Int32, width: Int, height: Int, format formatName: String) throws(Failure) -> RawVideoFrame {
        let (format, count) = try rawFrameLayout(width: width, height: height, format: formatName)
        do {
            return try RawVideoFrame(format: format, width: width, height: height, bytes: readFrame(fd, bytes: count))
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(error)")
        }
    }

    /// A raw frame's layout and byte count, checked (a known format, pixels within the limits,
    /// at most ``maxFrameBytes``) before anything is read.
    static func rawFrameLayout(width: Int, height: Int, format formatName: String) throws(Failure) -> (RawVideoFrame.PixelFormat, Int) {
        guard let format = RawVideoFrame.PixelFormat(rawValue: formatName) else {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                          message: "unknown pixel format \"\(formatName)\": one of \(RawVideoFrame.PixelFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard width > 0, height > 0 else {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "a frame of \(width)x\(height) pixels has no pixels")
        }
        do {
            try MediaLimits.default.check(width: width, height: height)
        } catch {
            throw Failure(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "the frame \(error.message)")
        }
        let count = format.byteCount(width: width, height: height)
        guard count <= maxFrameBytes else {
            throw Failure(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "a frame of \(count) bytes is over the limit of \(maxFrameBytes >> 20) MiB")
        }
        return (format, count)
    }

    /// Reads a frame from the start of `fd`'s file: all of it (`bytes` nil) or its first `bytes`.
    /// Only a regular file (a memfd) is read, never a pipe, so the bus thread never waits on a
    /// writer; at most ``maxFrameBytes``.
    static func readFrame(_ fd: Int32, bytes wanted: Int?) throws(Failure) -> [UInt8] {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                          message: "the frame's descriptor is not a regular file (a pipe or a socket is not read here): pass a memfd or a file")
        }
        let size = Int(info.st_size)
        let count = wanted ?? size
        guard count <= maxFrameBytes else {
            throw Failure(name: "org.freedesktop.DBus.Error.LimitsExceeded", message: "a frame of \(count) bytes is over the limit of \(maxFrameBytes >> 20) MiB")
        }
        guard count > 0, size >= count else {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                          message: wanted == nil ? "the frame's file is empty" : "the frame's file holds \(size) bytes; this frame needs \(count)")
        }
        let bytes = MemoryFile.prefix(of: fd, count: count)
        let read = bytes.count
        guard read == count else {
            throw Failure(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "the frame's file ended after \(read) of \(count) bytes (it changed while read)")
        }
        return bytes
    }

    /// `End`: the frame still waiting is judged and the last changes sent before the answer;
    /// then the object is gone.
    private func endStream(_ call: SessionBusService.Call) {
        guard let stream = state.withLock({ $0.streams[call.path] }) else { return call.fail("org.freedesktop.DBus.Error.UnknownObject", call.path) }
        Task { [weak self] in
            await stream.end()
            self?.state.withLock { s in
                if s.streams[stream.path] === stream { s.streams[stream.path] = nil }
            }
            call.reply([])
        }
    }

    // MARK: - Callers leaving

    /// The caller left the bus: its pictures and videos are cancelled, its streams ended, its objects removed.
    private func callerLeft(_ caller: String) {
        let (tasks, jobs, streams) = state.withLock { s -> ([Task<Void, Never>], [BusVideoJob], [BusStream]) in
            let tasks = Array((s.pictures.removeValue(forKey: caller) ?? [:]).values)
            let jobs = s.videoJobs.values.filter { $0.owner == caller }
            for job in jobs { s.videoJobs[job.path] = nil }
            s.finishedJobs[caller] = nil
            let streams = s.streams.filter { $0.value.owner == caller }
            for path in streams.keys { s.streams[path] = nil }
            return (tasks, jobs, Array(streams.values))
        }
        let running = jobs.filter { $0.phase == .running }.count
        for task in tasks { task.cancel() }
        for job in jobs { job.cancel(reason: "the caller left the bus") }
        for stream in streams { stream.cancel() }
        if !tasks.isEmpty || running > 0 || !streams.isEmpty {
            logger.info("\(caller) left the session bus: \(tasks.count) picture(s) and \(running) video(s) cancelled, \(streams.count) stream(s) ended")
        }
    }
}

extension SessionBusService.Call {
    /// Answers `org.freedesktop.DBus.Properties.Get` or `GetAll` (this call's arguments: the
    /// interface, empty when not given, and for `Get` the property's name) on an object whose
    /// properties, all of `expected`, are `all`: every one for `GetAll`, the one named for
    /// `Get`; an error for another interface (`GetAll` may name none) or an unknown property.
    /// What the agent's and the forwarder's objects (root, video jobs, streams) all answer.
    func replyProperties(_ all: [(String, DBusValue)], of expected: String) {
        let (interface, name) = withArguments { reader in (reader.string() ?? "", reader.string()) }
        guard interface == expected || (name == nil && interface.isEmpty) else {
            return fail("org.freedesktop.DBus.Error.UnknownInterface", "\(path) has no properties of \(interface)")
        }
        guard let name else { return reply([.variantDictionary(all)]) }
        guard let value = all.first(where: { $0.0 == name })?.1 else {
            return fail("org.freedesktop.DBus.Error.UnknownProperty", "\(expected) has no property \(name)")
        }
        reply([.variant(value)])
    }
}
