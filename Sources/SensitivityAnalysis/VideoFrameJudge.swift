/// Whatever judges one frame of a live stream: ``SensitivityAnalyzer`` in this process (the test
/// card, both models, the policy and its decision rules), or a service's confined worker.
///
/// ``judge(_:policy:)`` is called on a ``VideoStreamAnalyzer``'s own threads and may block; it
/// must be safe to call from several threads at once.
public protocol VideoFrameJudge: Sendable {
    /// Judges `frame` by `policy`; throws when the frame cannot be judged (undecodable bytes, a
    /// worker that failed).
    func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict
}

/// One frame's verdict.
public struct VideoFrameVerdict: Sendable, Equatable, Codable {
    public var isSensitive: Bool
    /// Why, e.g. `TEST_CARD 1.00` or `FEMALE_BREAST_EXPOSED 0.83` (empty when clean).
    public var reasons: [String]
    /// In the frame's own pixels.
    public var detections: [Detection]

    public init(isSensitive: Bool, reasons: [String] = [], detections: [Detection] = []) {
        self.isSensitive = isSensitive
        self.reasons = reasons
        self.detections = detections
    }
}
