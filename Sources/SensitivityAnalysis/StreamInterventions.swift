/// When a live stream's analysis tells the application to intervene, and when it lifts it: the
/// rule a ``VideoStreamAnalyzer`` applies to each judged frame, in frame order.
///
/// - Indicate sensitivity: at the first flagged frame, in every policy. Lifted once
///   ``clearAfterCleanFrames`` judged frames in a row are clean *and* ``clearAfterSeconds`` of
///   media time have passed since the last flagged frame (a flicker of clean frames between
///   flagged ones does not lift it).
/// - Interrupt the video and mute the audio: after ``interruptAfterFlaggedFrames`` flagged
///   frames in a row (child: 1, at once; adult: 3, so that one doubtful frame only indicates).
///   With ``holdUntilContinued`` (child) they stay until the application calls
///   ``VideoStreamAnalyzer/continueStream()``; otherwise (adult) they lift with the indication.
///   `continueStream()` always lifts them; the count of flagged frames then starts again, so
///   content still on screen interrupts again (a child's at the next flagged frame).
/// - A frame that cannot be judged counts as flagged where ``failuresCountAsFlagged`` (child:
///   fail closed), else it is skipped.
public struct StreamInterventions: Sendable, Equatable, Codable {
    public var interruptAfterFlaggedFrames: Int
    public var clearAfterCleanFrames: Int
    /// Seconds of media time.
    public var clearAfterSeconds: Double
    public var holdUntilContinued: Bool
    public var failuresCountAsFlagged: Bool

    public init(interruptAfterFlaggedFrames: Int, clearAfterCleanFrames: Int, clearAfterSeconds: Double,
                holdUntilContinued: Bool, failuresCountAsFlagged: Bool) {
        self.interruptAfterFlaggedFrames = max(1, interruptAfterFlaggedFrames)
        self.clearAfterCleanFrames = max(1, clearAfterCleanFrames)
        self.clearAfterSeconds = max(0, clearAfterSeconds)
        self.holdUntilContinued = holdUntilContinued
        self.failuresCountAsFlagged = failuresCountAsFlagged
    }

    /// The built-in rule of each policy (the documented numbers: docs/streams.md).
    public static func defaults(for policy: AnalysisPolicy) -> StreamInterventions {
        switch policy {
        case .descriptiveInterventions:
            return StreamInterventions(interruptAfterFlaggedFrames: 1, clearAfterCleanFrames: 3, clearAfterSeconds: 1,
                                       holdUntilContinued: true, failuresCountAsFlagged: true)
        case .simpleInterventions, .disabled:
            return StreamInterventions(interruptAfterFlaggedFrames: 3, clearAfterCleanFrames: 3, clearAfterSeconds: 1,
                                       holdUntilContinued: false, failuresCountAsFlagged: false)
        }
    }

    /// The guidance in force and the counts the rule needs.
    public struct State: Sendable, Equatable {
        public var indicate = false
        public var interrupt = false
        public var mute = false
        var flaggedRun = 0
        var cleanRun = 0
        var lastFlaggedTime: Double?

        public init() {}

        /// Applies one judged frame (`flagged`, at media time `time`); true when the guidance changed.
        public mutating func apply(flagged: Bool, time: Double, rules: StreamInterventions) -> Bool {
            let before = (indicate, interrupt, mute)
            if flagged {
                flaggedRun += 1
                cleanRun = 0
                lastFlaggedTime = time
                indicate = true
                if flaggedRun >= rules.interruptAfterFlaggedFrames { interrupt = true; mute = true }
            } else {
                cleanRun += 1
                flaggedRun = 0
                if indicate, cleanRun >= rules.clearAfterCleanFrames, time - (lastFlaggedTime ?? -.infinity) >= rules.clearAfterSeconds {
                    indicate = false
                    if !rules.holdUntilContinued { interrupt = false; mute = false }
                }
            }
            return before != (indicate, interrupt, mute)
        }

        /// The application has intervened: lifts the interruption; true when it was in force.
        public mutating func continueStream() -> Bool {
            flaggedRun = 0
            guard interrupt || mute else { return false }
            interrupt = false
            mute = false
            return true
        }
    }
}
