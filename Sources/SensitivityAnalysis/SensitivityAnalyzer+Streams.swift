import MediaDecoding

/// The shapes of Apple's SensitiveContentAnalysis: the policy in force, and live streams judged in
/// this process.
extension SensitivityAnalyzer: VideoFrameJudge {
    /// The policy this analyzer applies, as Apple's `SCSensitivityAnalyzer.analysisPolicy` names
    /// it: simple interventions for the adult mode, descriptive for the child's. (An analyzer
    /// always judges; `.disabled` is what a service answers when analysis is off.)
    public var analysisPolicy: AnalysisPolicy { AnalysisPolicy(mode: policy.mode) }

    /// Judges one stream frame on the calling thread: decoded to RGB at analysis size when it is
    /// raw, encoded or not yet converted, then the test card, both models (at once, the score on
    /// a second thread: a frame's verdict is wanted soon) and the policy's decision rules, as any
    /// picture.
    public func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
        let decoded: DecodedImage
        switch frame.content {
        case .rgb(let image, let width, let height):
            decoded = DecodedImage(image: image, originalWidth: max(width, 1), originalHeight: max(height, 1), type: .other)
        case .picture(let picture, let width, let height):
            decoded = DecodedImage(image: try picture.image(), originalWidth: max(width, 1), originalHeight: max(height, 1), type: .other)
        case .raw(let raw):
            decoded = try raw.analysisImage(minimumLongSide: Self.shrinkFloorFactor * NudeDetector.inputSize,
                                            minimumShortSide: Self.shrinkFloorFactor * NSFWClassifier.resizeSide)
        case .encoded(let bytes):
            guard bytes.count <= configuration.limits.maxImageFileBytes else {
                throw MediaError(.fileTooLarge, "is a \(bytes.count >> 20) MiB picture, over the \(configuration.limits.maxImageFileBytes >> 20) MiB limit")
            }
            decoded = try decoder.decode(bytes)
        }
        let identity = FileIdentity(device: 0, inode: 0, size: Int64(decoded.image.pixels.count), modificationNanoseconds: 0)
        let analysis = try analyze(decoded, path: "stream", identity: identity, policy: policy, modelsAtOnce: true)
        return VideoFrameVerdict(isSensitive: analysis.isSensitive, reasons: analysis.reasons, detections: analysis.detections)
    }

    /// A stream analyzer that judges with this analyzer, in this process, by its policy (or
    /// `policy`), its judgements begun at least `spacing` apart: see ``VideoStreamAnalyzer``.
    public func videoStreamAnalyzer(participantUUID: String, streamDirection: VideoStreamAnalyzer.StreamDirection,
                                    policy: SensitivityPolicy? = nil, interventions: StreamInterventions? = nil,
                                    judges: Int = 1, slotCapacity: Int = 1,
                                    spacing: Duration? = VideoStreamAnalyzer.defaultSpacing) -> VideoStreamAnalyzer {
        VideoStreamAnalyzer(participantUUID: participantUUID, streamDirection: streamDirection, judge: self, policy: policy ?? self.policy,
                            interventions: interventions, judges: judges, slotCapacity: slotCapacity, spacing: spacing)
    }
}
