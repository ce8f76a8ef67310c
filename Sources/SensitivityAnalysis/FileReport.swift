import Foundation
import MediaDecoding

/// The outcome for one file: an analysis, or the reason there is none. Errors are data here so
/// that one bad file never stops a scan or the agent.
public struct FileReport: Sendable {
    /// An error as reported to people and scripts.
    public struct Failure: Sendable, Codable, Equatable, Error {
        /// Stable code, e.g. `truncated`, `dimensions_too_large`, `symbolic_link`.
        public var code: String
        /// The full sentence, with the file and the cause.
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }

        public init(_ error: any Error, path: String) {
            switch error {
            case let e as Failure: self = e
            case let e as MediaError: self.init(code: e.code.rawValue, message: e.at(path).description)
            case let e as InferenceError: self.init(code: e.code.rawValue, message: "\(path): \(e.description)")
            case is CancellationError: self.init(code: MediaError.Code.cancelled.rawValue, message: "\(path): analysis was cancelled")
            default: self.init(code: "error", message: "\(path): \(error)")
            }
        }
    }

    public var path: String
    public var kind: MediaType.Kind
    public var type: MediaType
    public var analysis: SensitivityAnalysis?
    public var failure: Failure?
    public var elapsedMilliseconds: Double
    /// The flagged picture or video frame at analysis size, for the vault's blurred preview.
    public var flaggedFrame: RGBImage? = nil
    /// Set by callers that moved the file into the vault.
    public var vaultItem: Int64? = nil
    /// What the allow and block lists decided, when they overrode the analysis (scan --quarantine).
    public var listDecision: String? = nil

    public var isSensitive: Bool { analysis?.isSensitive ?? false }

    public init(path: String, kind: MediaType.Kind, type: MediaType, analysis: SensitivityAnalysis?, failure: Failure?,
                elapsedMilliseconds: Double, flaggedFrame: RGBImage? = nil) {
        self.path = path
        self.kind = kind
        self.type = type
        self.analysis = analysis
        self.failure = failure
        self.elapsedMilliseconds = elapsedMilliseconds
        self.flaggedFrame = flaggedFrame
    }
}

extension SensitivityAnalyzer {
    /// Analyses whatever is at `path`: pictures are judged, other files are reported as such,
    /// and every problem becomes the report's ``FileReport/failure``.
    ///
    /// Videos report their progress to `progress` as they go. `policy` and `videoOptions`
    /// default to the analyzer's own: one loaded analyzer serves every mode.
    public func report(forFileAt path: String, policy: SensitivityPolicy? = nil, videoOptions: VideoOptions? = nil,
                       progress: (@Sendable (VideoProgress) -> Void)? = nil) async -> FileReport {
        let policy = policy ?? self.policy
        do {
            let (type, animated) = try await pool.run { [configuration] in
                let file = try MediaFile(path: path)
                // Animated GIFs and PNGs (APNG) are sampled as videos are, through ffmpeg;
                // animated WebPs are pictures whose frames libwebp composes (WebPFormat).
                switch file.type {
                case .gif: return (file.type, ImageHeader.isAnimated(try file.readAll(limit: configuration.limits.maxImageFileBytes), type: .gif))
                case .png: return (file.type, try ImageHeader.pngAnimationControl { try file.read(8, at: $0) })
                default: return (file.type, false)
                }
            }
            if type.kind == .container {
                return await containerReport(forFileAt: path, type: type, policy: policy, options: videoOptions ?? self.videoOptions, progress: progress)
            }
            if type.kind == .video || animated {
                return await videoReport(forFileAt: path, type: type, policy: policy, options: videoOptions ?? self.videoOptions, progress: progress)
            }
            return try await pool.run { [self] in reportSynchronously(forFileAt: path, policy: policy) }
        } catch {
            return FileReport(path: path, kind: .other, type: .other, analysis: nil, failure: .init(error, path: path), elapsedMilliseconds: 0)
        }
    }

    func videoReport(forFileAt path: String, type: MediaType, policy: SensitivityPolicy, options videoOptions: VideoOptions,
                     progress: (@Sendable (VideoProgress) -> Void)?) async -> FileReport {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        let handler = videoAnalysis(forFileAt: path, options: videoOptions, policy: policy)
        // Progress is passed on by a child task: it runs where the caller's tasks run (an
        // unstructured task would not inherit a task executor preference: the analysis worker's
        // async work must stay off libdispatch's global queues, see WorkerExecutor).
        return await withTaskGroup(of: Void.self) { group in
            if let progress {
                group.addTask { for await update in handler.progressUpdates { progress(update) } }
            }
            defer { group.cancelAll() }
            return await videoVerdict(handler, path: path, type: type, options: videoOptions, elapsed: elapsed)
        }
    }

    /// The report of a video analysis `handler`, once it has run.
    func videoVerdict(_ handler: VideoAnalysisHandler, path: String, type: MediaType, options videoOptions: VideoOptions,
                      elapsed: () -> Double) async -> FileReport {
        do {
            let video = try await handler.hasSensitiveContent()
            let swaps = video.info.rotation == 90 || video.info.rotation == 270
            var analysis = SensitivityAnalysis(
                path: path, kind: .video, type: type, isSensitive: video.isSensitive, detections: video.detections,
                nsfwScore: video.nsfwScore, reasons: video.reasons, mode: video.mode,
                width: swaps ? video.info.height : video.info.width, height: swaps ? video.info.width : video.info.height,
                identity: try MediaFile(path: path).identity, elapsedMilliseconds: elapsed())
            analysis.frameTime = video.frameTime
            analysis.samples = video.samples
            analysis.skippedSamples = video.skippedSamples
            analysis.largestGap = (video.largestGap * 1000).rounded() / 1000
            analysis.samplingRule = video.samplingRule.rawValue
            analysis.plannedGap = video.plannedGap
            analysis.duration = video.duration
            analysis.coverage = video.coverage
            analysis.flaggedRanges = videoOptions.allFlaggedRanges ? video.flaggedRanges.map { [$0.lowerBound, $0.upperBound] } : nil
            analysis.partialReason = video.endedEarly ? (video.endReason ?? "damaged or missing data") : nil
            return FileReport(path: path, kind: .video, type: type, analysis: analysis, failure: nil, elapsedMilliseconds: elapsed(),
                              flaggedFrame: video.flaggedFrame)
        } catch {
            return FileReport(path: path, kind: .video, type: type, analysis: nil, failure: .init(error, path: path), elapsedMilliseconds: elapsed())
        }
    }

    /// ``report(forFileAt:)`` on the calling thread.
    public func reportSynchronously(forFileAt path: String, policy: SensitivityPolicy? = nil) -> FileReport {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        var type = MediaType.other
        do {
            let file = try MediaFile(path: path)
            type = file.type
            switch file.type.kind {
            case .other:
                return FileReport(path: path, kind: .other, type: type, analysis: nil, failure: nil, elapsedMilliseconds: elapsed())
            case .container:
                throw MediaError(.unsupportedFormat, "is a container (\(type.displayName)); analyse it with report(forFileAt:)", path: path)
            case .video:
                throw MediaError(.unsupportedFormat, "is a video (\(type.rawValue)); analyse it with report(forFileAt:) or videoAnalysis(forFileAt:)", path: path)
            case .image:
                // Every picture a viewer could show (a HEIF collection's images...): the first
                // one flagged decides; else the displayed one's analysis stands.
                let images = try decoder.decodeAll(file)
                var decoded = images[0]
                var analysis = try analyze(decoded, path: path, identity: file.identity, policy: policy)
                for (index, other) in images.enumerated().dropFirst() where !analysis.isSensitive {
                    let candidate = try analyze(other, path: path, identity: file.identity, policy: policy)
                    if candidate.isSensitive {
                        analysis = candidate
                        analysis.reasons = candidate.reasons.map { "\($0) (image \(index + 1) of \(images.count))" }
                        decoded = other
                    }
                }
                try file.verifyUnchanged()
                analysis.elapsedMilliseconds = elapsed()
                return FileReport(path: path, kind: .image, type: type, analysis: analysis, failure: nil, elapsedMilliseconds: analysis.elapsedMilliseconds,
                                  flaggedFrame: analysis.isSensitive ? decoded.image : nil)
            }
        } catch {
            return FileReport(path: path, kind: type.kind, type: type, analysis: nil, failure: .init(error, path: path), elapsedMilliseconds: elapsed())
        }
    }
}
