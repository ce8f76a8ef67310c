import Locking
import ServiceSupport
import SensitivityAnalysis

/// One live stream on the session bus (a `BeginStream` object): a ``VideoStreamAnalyzer``,
/// which applies the one intervention rule (``StreamInterventions``, docs/streams.md), judging
/// through the agent's worker (``WorkerFrameJudge``), and the forwarding of its
/// ``VideoStreamAnalyzer/analysisChanges`` as `AnalysisChanged` signals to the caller alone.
final class BusStream: Sendable {
    let path: String
    /// The caller's unique bus name: the only one who sees the object.
    let owner: String
    let participant: String
    let direction: VideoStreamAnalyzer.StreamDirection
    let analyzer: VideoStreamAnalyzer
    private let judge: WorkerFrameJudge
    private let forwarding: Task<Void, Never>
    /// The pipe of raw frames being read for it (`AnalyzeRawFrames`), at most one; and whether
    /// the stream is ending (no pipe is taken any more).
    private let pipe = Locked<(current: RawFramePipe?, closed: Bool)>((nil, false))

    /// A stream judged by `judge` under `analysisPolicy` with the thresholds of `policy`;
    /// `emit` sends each change (it decides whether the object is still there).
    init(path: String, owner: String, participant: String, direction: VideoStreamAnalyzer.StreamDirection,
         judge: WorkerFrameJudge, policy: SensitivityPolicy, analysisPolicy: AnalysisPolicy,
         emit: @escaping @Sendable (VideoStreamAnalysis) -> Void) {
        self.path = path
        self.owner = owner
        self.participant = participant
        self.direction = direction
        self.judge = judge
        let analyzer = VideoStreamAnalyzer(participantUUID: participant, streamDirection: direction, judge: judge,
                                           policy: policy, analysisPolicy: analysisPolicy)
        self.analyzer = analyzer
        forwarding = Task {
            for await change in analyzer.analysisChanges { emit(change) }
        }
    }

    /// `End`: takes no more frames, judges the one still waiting, sends the last changes, and
    /// returns once they are sent.
    func end() async {
        // Frames still coming through a pipe are not waited for.
        if let pipe = pipe.withLock({ p -> RawFramePipe? in p.closed = true; return p.current }) { await Task.detached { pipe.stop(wait: true) }.value }
        await analyzer.end()
        await forwarding.value
    }

    /// The caller left (or the agent stops): the analysis under way is interrupted, the frame
    /// waiting discarded, nothing more is sent. Idempotent.
    func cancel() {
        pipe.withLock { p -> RawFramePipe? in p.closed = true; return p.current }?.stop(wait: false)
        judge.cancel()
        analyzer.cancel()
        forwarding.cancel()
    }

    /// Reads `pipe` for this stream; false when one is read already or the stream is ending.
    func attach(_ new: RawFramePipe) -> Bool {
        pipe.withLock { p in
            guard p.current == nil, !p.closed else { return false }
            p.current = new
            return true
        }
    }

    /// The pipe's reading ended.
    func detach(_ ended: RawFramePipe) {
        pipe.withLock { if $0.current === ended { $0.current = nil } }
    }

    /// The object's properties (interface `...Analysis1.Stream`).
    var properties: [(String, DBusValue)] {
        let advice = analyzer.analysis
        let counts = analyzer.statistics
        return [
            ("Participant", .string(participant)), ("Direction", .string(direction.rawValue)),
            ("AnalysisPolicy", .string(analyzer.analysisPolicy.rawValue)),
            ("ShouldIndicateSensitivity", .boolean(advice?.shouldIndicateSensitivity ?? false)),
            ("ShouldInterruptVideo", .boolean(advice?.shouldInterruptVideo ?? false)),
            ("ShouldMuteAudio", .boolean(advice?.shouldMuteAudio ?? false)),
            ("FramesSeen", .uint64(UInt64(counts.seen))), ("FramesJudged", .uint64(UInt64(counts.judged))),
            ("FramesDropped", .uint64(UInt64(counts.dropped))), ("FramesFailed", .uint64(UInt64(counts.failed))),
        ]
    }
}
