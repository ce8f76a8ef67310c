/// What an application should do about a live video stream now, in the words of Apple's
/// `SCVideoStreamAnalyzer`: show that it is sensitive, interrupt the video, mute the audio.
struct StreamIntervention: Sendable, Equatable {
    var shouldIndicateSensitivity = false
    var shouldInterruptVideo = false
    var shouldMuteAudio = false

    static let none = StreamIntervention()

    /// The intervention for a flagged frame under `policy`: simple (adult) indicates and
    /// interrupts the video; descriptive (child) also mutes the audio.
    static func forFlaggedFrame(policy: AnalysisBus.Policy) -> StreamIntervention {
        StreamIntervention(shouldIndicateSensitivity: true, shouldInterruptVideo: true, shouldMuteAudio: policy == .descriptive)
    }
}

/// A live stream's counters, as the stream object's properties show them.
struct LiveStreamSnapshot: Sendable, Equatable {
    var intervention = StreamIntervention.none
    /// Frames judged (clean or flagged).
    var judged: UInt64 = 0
    /// Frames dropped, oldest first, because newer ones came before they could be judged.
    var dropped: UInt64 = 0
    /// Frames not judged while the stream waited for `ContinueStream` after a flag.
    var skipped: UInt64 = 0
}

/// The seam between the bus and a live stream's analysis: the bus hands frames in and
/// learns of changes; how frames are judged is the implementation's business.
/// ``WorkerFrameStream`` judges each frame (an encoded picture) through the agent's analysis
/// worker; a stream analyzer of the SensitivityAnalysis library can take its place.
protocol LiveStreamAnalysis: AnyObject, Sendable {
    /// Takes a frame: an open descriptor of an encoded picture, which the stream now owns.
    func submit(frame descriptor: Int32)
    /// The application intervened: judging resumes (the stream waits for this after a flag).
    func continueStream()
    /// Stops judging; frames waiting are closed. Idempotent.
    func end()
    var snapshot: LiveStreamSnapshot { get }
}
