import CSystemShims
import Foundation
import MediaDecoding
import Synchronization
import Locking

/// How far a video analysis has got.
public struct VideoProgress: Sendable, Equatable, Codable {
    /// 0...1 of the work done (the planned samples judged; for a video without an index, the
    /// media time reached); nil while the duration is unknown.
    public var fraction: Double?
    /// Frames analysed so far.
    public var samples: Int
    /// Media time reached, seconds.
    public var mediaTime: Double
    public var duration: Double?
    /// Estimated seconds of work left, once it can be estimated.
    public var estimatedSecondsRemaining: Double?
    /// 0...1 of the duration covered: every frame in it within the gap of an analysed frame.
    public var coverage: Double? = nil
    /// The stretches covered so far, all judged clean: an analysis interrupted now can resume
    /// from them (``VideoOptions/alreadyCovered``). They stop growing once a frame is flagged.
    public var covered = CoveredRanges()
    /// Samples whose inference was skipped: practically identical to the analysed frame before.
    public var skippedSamples = 0

    public init(fraction: Double?, samples: Int = 0, mediaTime: Double = 0, duration: Double? = nil, estimatedSecondsRemaining: Double? = nil) {
        self.fraction = fraction
        self.samples = samples
        self.mediaTime = mediaTime
        self.duration = duration
        self.estimatedSecondsRemaining = estimatedSecondsRemaining
    }
}

/// The verdict on a video.
public struct VideoSensitivityAnalysis: Sendable {
    public var isSensitive: Bool
    /// The first flagged frame's media time, seconds.
    public var frameTime: Double?
    /// The flagged frame's detections and reasons.
    public var detections: [Detection]
    public var nsfwScore: Double?
    public var reasons: [String]
    /// The flagged frame itself, upright at analysis size (the vault blurs it for a preview).
    public var flaggedFrame: RGBImage?
    /// With `allFlaggedRanges`: every flagged stretch, seconds (start...end of flagged samples).
    public var flaggedRanges: [ClosedRange<Double>]
    public var samples: Int
    public var duration: Double?
    /// Fraction of the duration covered by samples (1 for a complete analysis; lower when the
    /// file is truncated or damaged part-way, or when an early exit stopped it).
    public var coverage: Double?
    /// Samples judged without running the models: practically identical to the analysed
    /// frame before them (``GreyThumbnail``), so their verdict is that frame's.
    public var skippedSamples: Int
    /// The largest distance between analysed frames, seconds.
    public var largestGap: Double
    /// Which sampling rule set the gap (``VideoSamplingRule``).
    public var samplingRule: VideoSamplingRule
    /// The gap the rule allowed between analysed frames, seconds.
    public var plannedGap: Double
    /// The decoder met damaged or missing data before the end (a partial-coverage verdict).
    public var endedEarly: Bool
    public var endReason: String?
    public var info: VideoDecoder.Info
    public var mode: AnalysisMode
    /// How many decoders worked on the file at once.
    public var decoders: Int
}

/// Analyses one video, in the manner of SensitiveContentAnalysis's `VideoAnalysisHandler`:
/// observe ``progress`` (or ``progressUpdates``), await ``hasSensitiveContent()``, ``cancel()``
/// to stop decoding promptly.
public final class VideoAnalysisHandler: Sendable {
    public let path: String
    let analyzer: SensitivityAnalyzer
    let options: VideoOptions
    /// The policy every sampled frame is judged by.
    let policy: SensitivityPolicy
    let state = Locked<State>(State())
    private let updates: AsyncStream<VideoProgress>.Continuation
    /// Progress as it happens; finishes when the analysis ends.
    public let progressUpdates: AsyncStream<VideoProgress>

    struct State {
        var progress = VideoProgress(fraction: nil, samples: 0, mediaTime: 0, duration: nil, estimatedSecondsRemaining: nil)
        var decoders: [VideoDecoder] = []
        var cancelled = false
        var started = false
        /// CPU time in the models when judged inline (the benchmark), nanoseconds.
        var inferenceCPU: UInt64 = 0
    }

    init(path: String, analyzer: SensitivityAnalyzer, options: VideoOptions, policy: SensitivityPolicy) {
        self.path = path
        self.analyzer = analyzer
        self.options = options
        self.policy = policy
        (progressUpdates, updates) = AsyncStream.makeStream(of: VideoProgress.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The latest progress.
    public var progress: VideoProgress { state.withLock { $0.progress } }

    /// Stops decoding as soon as possible; ``hasSensitiveContent()`` then throws `cancelled`.
    public func cancel() {
        let decoders = state.withLock { s -> [VideoDecoder] in
            s.cancelled = true
            return s.decoders
        }
        for decoder in decoders { decoder.cancel() }
    }

    /// Runs the analysis (once) and returns the verdict.
    public func hasSensitiveContent() async throws -> VideoSensitivityAnalysis {
        try await withTaskCancellationHandler {
            try await analyzer.videoPool.run { [self] in try analyzeSynchronously() }
        } onCancel: {
            cancel()
        }
    }

    /// The sampling gap of animated pictures, in seconds.
    static let animationGap = 0.1
    /// Videos shorter than this (seconds) are sampled densely: they are cheap to check whole,
    /// and they are what people send each other.
    public static let shortClipLimit = 60.0
    /// A short clip's gap: every scene of twice this (0.5 s) or longer holds at least one
    /// analysed frame, and with the skip of practically identical frames comparing each sample
    /// with the last analysed one, a changed frame is never skipped.
    public static let shortClipGap = 0.25

    /// The rule and gap for a file: animations every 0.1 s, videos under a minute every 0.25 s
    /// (or every frame, when frames are farther apart: the decoder takes the next frame after
    /// each target), longer ones every `video.max_gap` (2 s by default); never coarser than
    /// `maxGap`.
    static func sampling(animation: Bool, duration: Double?, maxGap: Double, denseShortClips: Bool = true) -> (rule: VideoSamplingRule, gap: Double) {
        if animation { return (.animation, min(maxGap, animationGap)) }
        if denseShortClips, let duration, duration > 0, duration < shortClipLimit { return (.shortClip, min(maxGap, shortClipGap)) }
        return (.standard, maxGap)
    }

    /// The analysis on the calling thread (a second decoder, when used, gets a thread of its own).
    func analyzeSynchronously(judging: VideoRun.Judging = .workers) throws -> VideoSensitivityAnalysis {
        let started = state.withLock { s -> Bool in defer { s.started = true }; return s.started }
        precondition(!started, "a VideoAnalysisHandler runs once")
        defer { updates.finish() }
        let file = try MediaFile(path: path)
        guard file.type.kind == .video || file.type == .gif || file.type == .png else {
            throw MediaError(.unsupportedFormat, "is not a video (\(file.type.rawValue))", path: path)
        }
        let decoder = try openDecoder(file)
        // An animation (GIF, APNG, a HEIF or AVIF image sequence) is a few seconds of pictures
        // that each matter: sampled ten times a second, front to back (a frame shown for less
        // than 0.1 s is the only way past).
        let animation = try file.type.kind != .video || MediaType.isImageSequence(file.readHead(16))
        let (rule, gap) = Self.sampling(animation: animation, duration: decoder.info.duration, maxGap: options.maxGap,
                                        denseShortClips: options.denseShortClips ?? true)
        let run = VideoRun(handler: self, file: file, info: decoder.info, gap: gap, rule: rule, judging: judging)
        defer { state.withLock { $0.inferenceCPU = run.inferenceCPU.load(ordering: .relaxed) } }
        let result: VideoSensitivityAnalysis
        if animation || decoder.keyframeTimes.count < 2 || (decoder.info.duration ?? 0) <= 0 {
            result = try run.sequential(decoder)
        } else {
            let wanted = options.decoders ?? Self.automaticDecoders(info: decoder.info, workers: analyzer.configuration.workers, gap: gap)
            result = try run.coarseToFine(decoder) { [self] in wanted >= 2 ? try openDecoder(file) : nil }
        }
        try file.verifyUnchanged()
        return result
    }

    /// Two decoders where there are two workers, keyframes farther apart than the gap (so most
    /// of the work is decoding the stretches between them) and frames up to 1080p; else one.
    /// Measured (docs/analysis.md, "Videos"): 720p with 8-s keyframes 18.4 s -> 16.2 s; with keyframes within
    /// the gap no faster (inference is the bottleneck) but 20-60 MB more; a second 4K decoder
    /// halves the time but takes the peak over 300 MB.
    static func automaticDecoders(info: VideoDecoder.Info, workers: Int, gap: Double) -> Int {
        workers >= 2 && (info.keyframeInterval ?? 0) > gap && info.width * info.height <= 1920 * 1088 ? 2 : 1
    }

    /// A decoder for `file`, registered for ``cancel()``.
    func openDecoder(_ file: MediaFile) throws -> VideoDecoder {
        let decoder = try VideoDecoder(file: file, limits: analyzer.configuration.limits,
                                       minimumLongSide: SensitivityAnalyzer.shrinkFloorFactor * NudeDetector.inputSize,
                                       minimumShortSide: SensitivityAnalyzer.shrinkFloorFactor * NSFWClassifier.resizeSide)
        let cancelledAlready = state.withLock { s -> Bool in s.decoders.append(decoder); return s.cancelled }
        if cancelledAlready {
            decoder.cancel()
            throw MediaError(.cancelled, "analysis was cancelled", path: path)
        }
        return decoder
    }

    func publish(_ progress: VideoProgress) {
        let merged = state.withLock { s -> VideoProgress in
            var next = progress
            next.fraction = [s.progress.fraction, progress.fraction].compactMap { $0 }.max()
            next.samples = max(s.progress.samples, progress.samples)
            next.mediaTime = max(s.progress.mediaTime, progress.mediaTime)
            s.progress = next
            return next
        }
        updates.yield(merged)
    }
}

/// Which rule set a video's sampling gap: what a file costs to check decides how densely it is
/// checked.
public enum VideoSamplingRule: String, Sendable, Codable {
    /// A GIF, APNG or image sequence: every 0.1 s.
    case animation
    /// A video under a minute: every 0.25 s (or every frame, when that is fewer), so a scene of
    /// 0.5 s or longer is never missed.
    case shortClip = "short_clip"
    /// A longer video: every `video.max_gap` seconds (2 by default), keyframes first.
    case standard
}

/// How a video is sampled.
public struct VideoOptions: Sendable, Equatable, Codable {
    /// At most this many seconds between analysed frames (config `video.max_gap`).
    public var maxGap: Double
    /// List every flagged stretch instead of stopping at the first flagged frame.
    public var allFlaggedRanges: Bool
    /// Stretches an interrupted analysis of the same file, under the same policy and gap,
    /// already covered and judged clean: not analysed again.
    public var alreadyCovered: CoveredRanges?
    /// Decoders working on one file at once (nil: two when there are two workers, else one).
    public var decoders: Int?
    /// Skip the models for a sample practically identical to the analysed frame before it
    /// (nil: yes).
    public var skipIdenticalFrames: Bool?
    /// Sample a video under a minute every 0.25 s (``VideoSamplingRule/shortClip``) (nil: yes).
    /// Off, every video follows the standard plan: tests of that plan use short fixtures.
    public var denseShortClips: Bool?

    public init(maxGap: Double = 2, allFlaggedRanges: Bool = false, alreadyCovered: CoveredRanges? = nil,
                decoders: Int? = nil, skipIdenticalFrames: Bool? = nil, denseShortClips: Bool? = nil) {
        self.maxGap = maxGap
        self.allFlaggedRanges = allFlaggedRanges
        self.alreadyCovered = alreadyCovered
        self.decoders = decoders
        self.skipIdenticalFrames = skipIdenticalFrames
        self.denseShortClips = denseShortClips
    }
}

/// What `quarantine-bench video-decode` measures: the sampler's own work on one thread, the
/// same plan an analysis follows, with the models run inline (timed apart) or not at all.
public struct VideoDecodeBenchmark: Sendable, Codable {
    public var samples: Int
    /// Samples the models judged (the rest were practically identical to the frame before).
    public var analysed: Int
    public var decodeCPUSeconds: Double
    /// Nil when the models were not run.
    public var inferenceCPUSeconds: Double?
    public var wallSeconds: Double
    public var largestGap: Double
    public var coverage: Double?
}

extension SensitivityAnalyzer {
    /// Samples the video at `path` as an analysis would, on the calling thread with one decoder;
    /// with `infer`, judges each analysed sample inline (its CPU time kept apart from decoding's).
    public func benchmarkVideoDecoding(path: String, options: VideoOptions? = nil, infer: Bool) throws -> VideoDecodeBenchmark {
        var options = options ?? videoOptions
        options.decoders = 1
        let handler = VideoAnalysisHandler(path: path, analyzer: self, options: options, policy: policy)
        let wall = DispatchTime.now().uptimeNanoseconds, cpu = qsys_thread_cpu_ns()
        let result = try handler.analyzeSynchronously(judging: infer ? .inline : .none)
        let totalCPU = Double(qsys_thread_cpu_ns() - cpu) / 1e9
        let inference = Double(handler.state.withLock { $0.inferenceCPU }) / 1e9
        return VideoDecodeBenchmark(samples: result.samples, analysed: result.samples - result.skippedSamples,
                                    decodeCPUSeconds: totalCPU - inference, inferenceCPUSeconds: infer ? inference : nil,
                                    wallSeconds: Double(DispatchTime.now().uptimeNanoseconds - wall) / 1e9,
                                    largestGap: result.largestGap, coverage: result.coverage)
    }

    /// A handler that analyses the video at `path` when asked (``VideoAnalysisHandler/hasSensitiveContent()``).
    /// `options` and `policy` default to the analyzer's own ``videoOptions`` and ``policy``.
    public func videoAnalysis(forFileAt path: String, options: VideoOptions? = nil, policy: SensitivityPolicy? = nil) -> VideoAnalysisHandler {
        VideoAnalysisHandler(path: path, analyzer: self, options: options ?? videoOptions, policy: policy ?? self.policy)
    }

    /// A handler for the video at `url`.
    public func videoAnalysis(forFileAt url: URL, options: VideoOptions? = nil, policy: SensitivityPolicy? = nil) -> VideoAnalysisHandler {
        videoAnalysis(forFileAt: url.path, options: options, policy: policy)
    }
}
