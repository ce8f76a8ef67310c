/// A change in what a live stream's analysis advises, after Apple's `SCSensitivityAnalysis` for
/// `SCVideoStreamAnalyzer`: every value of ``VideoStreamAnalyzer/analysisChanges`` carries the
/// whole guidance now in force, so a consumer that missed one still ends right.
public struct VideoStreamAnalysis: Sendable, Equatable, Codable {
    /// What brought the change.
    public enum Cause: String, Sendable, Codable {
        /// A flagged frame (the first, or the one that reached the interruption count).
        case flagged
        /// Enough clean frames and time since the last flagged one.
        case cleared
        /// The application called ``VideoStreamAnalyzer/continueStream()``.
        case continued
        /// A frame that could not be judged, counted as flagged (child policy: fail closed).
        case failure
    }

    /// Show that the stream holds sensitive content (a badge, a blur).
    public var shouldIndicateSensitivity: Bool
    /// Stop showing the video until the person chooses to continue.
    public var shouldInterruptVideo: Bool
    /// Mute the stream's audio.
    public var shouldMuteAudio: Bool
    public var cause: Cause
    /// Media time of the frame that brought the change, seconds (nil for `continued`).
    public var mediaTime: Double?
    /// That frame's index among the frames given (0 for the first), nil for `continued`.
    public var frameIndex: Int?
    /// Seconds from the frame's arrival to this change (time waiting in the slot, plus judging).
    public var latency: Double?
    /// Media time of the newest frame that had arrived when the change was published: how far
    /// the stream had got (`streamTime - mediaTime` is the stream's advance during judging).
    public var streamTime: Double?
    /// The flagged frame's reasons (empty otherwise).
    public var reasons: [String]
    public var detections: [Detection]

    /// Whether anything is advised at all.
    public var isSensitive: Bool { shouldIndicateSensitivity || shouldInterruptVideo || shouldMuteAudio }
}
