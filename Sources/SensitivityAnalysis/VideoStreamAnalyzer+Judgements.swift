extension VideoStreamAnalyzer {
    /// One judged frame's verdict, applied: which frame, and the advice in force after it.
    ///
    /// Unlike ``VideoStreamAnalyzer/analysisChanges`` (changes only), there is one per judged
    /// frame, so a consumer holding frames back until they are judged (`quarantine stream
    /// --blur-to`) learns when a later frame's verdict vouches for them.
    public struct Judgement: Sendable, Equatable {
        /// The frame's index: 0 for the first frame given to ``VideoStreamAnalyzer/analyze(_:)``.
        public var frameIndex: Int
        /// Its media time, seconds.
        public var mediaTime: Double
        /// The frame could not be judged (under the adult policy, the advice is then unchanged:
        /// it says nothing about the frame).
        public var failed: Bool
        /// The advice after its verdict was applied.
        public var advice: StreamInterventions.State
    }

    /// Calls `observer` after each judged frame's verdict is applied, in arrival order, on a
    /// judging thread and under the analyzer's lock: it must return quickly and must not call
    /// the analyzer. Set it before the first frame; a later call replaces it.
    public func observeJudgements(_ observer: @escaping @Sendable (Judgement) -> Void) {
        core.locked { core.judgementObserver = observer }
    }
}
