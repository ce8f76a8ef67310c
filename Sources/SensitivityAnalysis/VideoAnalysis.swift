import Foundation
import MediaDecoding
import Synchronization

/// How far a video analysis has got.
public struct VideoProgress: Sendable, Equatable {
    /// 0...1 of the duration reached; nil while the duration is unknown.
    public var fraction: Double?
    /// Frames analysed so far.
    public var samples: Int
    /// Media time reached, seconds.
    public var mediaTime: Double
    public var duration: Double?
    /// Estimated seconds of work left, once it can be estimated.
    public var estimatedSecondsRemaining: Double?
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
    /// The largest distance between analysed frames, seconds.
    public var largestGap: Double
    /// The decoder met damaged or missing data before the end (a partial-coverage verdict).
    public var endedEarly: Bool
    public var endReason: String?
    public var info: VideoDecoder.Info
    public var mode: AnalysisMode
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
    private let state = Mutex<State>(State())
    private let updates: AsyncStream<VideoProgress>.Continuation
    /// Progress as it happens; finishes when the analysis ends.
    public let progressUpdates: AsyncStream<VideoProgress>

    struct State {
        var progress = VideoProgress(fraction: nil, samples: 0, mediaTime: 0, duration: nil, estimatedSecondsRemaining: nil)
        var decoder: VideoDecoder?
        var cancelled = false
        var started = false
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
        let decoder = state.withLock { s -> VideoDecoder? in
            s.cancelled = true
            return s.decoder
        }
        decoder?.cancel()
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

    /// The analysis on the calling thread.
    func analyzeSynchronously() throws -> VideoSensitivityAnalysis {
        let started = state.withLock { s -> Bool in defer { s.started = true }; return s.started }
        precondition(!started, "a VideoAnalysisHandler runs once")
        defer { updates.finish() }
        let file = try MediaFile(path: path)
        guard file.type.kind == .video || file.type == .gif || file.type == .png else {
            throw MediaError(.unsupportedFormat, "is not a video (\(file.type.rawValue))", path: path)
        }
        let decoder = try VideoDecoder(file: file, limits: analyzer.configuration.limits,
                                       minimumLongSide: SensitivityAnalyzer.shrinkFloorFactor * NudeDetector.inputSize,
                                       minimumShortSide: SensitivityAnalyzer.shrinkFloorFactor * NSFWClassifier.resizeSide)
        let cancelledAlready = state.withLock { s -> Bool in s.decoder = decoder; return s.cancelled }
        if cancelledAlready { throw MediaError(.cancelled, "analysis was cancelled", path: path) }

        let start = DispatchTime.now().uptimeNanoseconds
        let duration = decoder.info.duration
        // Decoding stays on this thread; each sample's inference goes to the analysis workers,
        // at most two at a time, so decoding the next sample overlaps judging this one.
        let inFlight = DispatchSemaphore(value: 2)
        let pending = DispatchGroup()
        let judged = Mutex<[(time: Double, analysis: SensitivityAnalysis, frame: RGBImage?)]>([])
        let failure = Mutex<(any Error)?>(nil)
        let flagged = Atomic<Bool>(false)
        let identity = file.identity, type = file.type
        // An animation (GIF, APNG, a HEIF or AVIF image sequence) is a few seconds of pictures
        // that each matter: sampled ten times a second (a frame shown for less than 0.1 s is the
        // only way past).
        let animation = try file.type.kind != .video || MediaType.isImageSequence(file.readHead(16))
        let gap = animation ? min(options.maxGap, Self.animationGap) : options.maxGap
        let summary = try decoder.sample(maxGap: gap) { sample in
            if failure.withLock({ $0 != nil }) { return false }
            if flagged.load(ordering: .relaxed) && !options.allFlaggedRanges { return false }
            inFlight.wait()
            pending.enter()
            let decoded = DecodedImage(image: sample.image, originalWidth: sample.displayWidth, originalHeight: sample.displayHeight, type: type)
            let time = sample.time
            analyzer.pool.enqueue { [analyzer, path, policy] in
                defer { inFlight.signal(); pending.leave() }
                do {
                    let analysis = try analyzer.analyze(decoded, path: path, identity: identity, policy: policy)
                    if analysis.isSensitive { flagged.store(true, ordering: .relaxed) }
                    // Only flagged frames are kept (the vault blurs the first for its preview).
                    judged.withLock { $0.append((time, analysis, analysis.isSensitive ? decoded.image : nil)) }
                    self.publish(time: time, duration: duration, start: start, samplesDelta: 1)
                } catch {
                    failure.withLock { $0 = error }
                }
            }
            return true
        }
        pending.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        let results = judged.withLock { $0 }.sorted { $0.time < $1.time }
        let first = results.first { $0.analysis.isSensitive }
        var ranges: [ClosedRange<Double>] = []
        var rangeStart: Double? = nil, lastFlagged = 0.0
        for result in results {
            if result.analysis.isSensitive {
                if rangeStart == nil { rangeStart = result.time }
                lastFlagged = result.time
            } else if let begin = rangeStart {
                ranges.append(begin...lastFlagged)
                rangeStart = nil
            }
        }
        if let begin = rangeStart { ranges.append(begin...lastFlagged) }
        try file.verifyUnchanged()
        var coverage: Double? = nil
        if let duration, duration > 0 {
            coverage = summary.endedEarly || (first != nil && !options.allFlaggedRanges)
                ? min(1, (summary.reachedTime + (decoder.info.frameRate.map { 1 / $0 } ?? 0)) / duration)
                : 1
        }
        let result = VideoSensitivityAnalysis(
            isSensitive: first != nil, frameTime: first?.time, detections: first?.analysis.detections ?? [],
            nsfwScore: first?.analysis.nsfwScore, reasons: first?.analysis.reasons ?? [], flaggedFrame: first?.frame ?? nil,
            flaggedRanges: ranges, samples: results.count, duration: duration, coverage: coverage,
            largestGap: summary.largestGap, endedEarly: summary.endedEarly, endReason: summary.endReason,
            info: decoder.info, mode: policy.mode)
        publish(time: summary.reachedTime, duration: duration, start: start, samplesDelta: 0, finished: true)
        return result
    }

    func publish(time: Double, duration: Double?, start: UInt64, samplesDelta: Int, finished: Bool = false) {
        let progress = state.withLock { s -> VideoProgress in
            s.progress.samples += samplesDelta
            s.progress.mediaTime = max(s.progress.mediaTime, time)
            s.progress.duration = duration
            if let duration, duration > 0 {
                let fraction = finished ? 1 : min(1, s.progress.mediaTime / duration)
                s.progress.fraction = max(s.progress.fraction ?? 0, fraction)
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                if fraction > 0.02 && !finished { s.progress.estimatedSecondsRemaining = elapsed * (1 - fraction) / fraction }
                if finished { s.progress.estimatedSecondsRemaining = 0 }
            }
            return s.progress
        }
        updates.yield(progress)
    }
}

/// How a video is sampled.
public struct VideoOptions: Sendable, Equatable, Codable {
    /// At most this many seconds between analysed frames (config `video.max_gap`).
    public var maxGap: Double
    /// List every flagged stretch instead of stopping at the first flagged frame.
    public var allFlaggedRanges: Bool

    public init(maxGap: Double = 2, allFlaggedRanges: Bool = false) {
        self.maxGap = maxGap
        self.allFlaggedRanges = allFlaggedRanges
    }
}

extension SensitivityAnalyzer {
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
