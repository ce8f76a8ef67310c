import CSystemShims
import DequeModule
import Foundation
import MediaDecoding

/// Analyses one live video stream (a camera, a call participant's frames), after Apple's
/// `SCVideoStreamAnalyzer`: give it frames with ``analyze(_:)`` as they arrive and read the
/// advice from ``analysisChanges``.
///
/// Frames wait in a bounded slot (``slotCapacity``, one by default) for the judging threads;
/// a frame that arrives while the slot is full pushes the oldest waiting one out, which is counted
/// as dropped (``Statistics/dropped``). Nothing queues without bound, so the advice always
/// concerns what is on screen now. Judged frames are applied in arrival order to the policy's
/// ``StreamInterventions`` rule; each change of advice is one value of ``analysisChanges``.
///
/// Judgements are spaced: each begins at least ``spacing`` after the one before (125 ms by
/// default, so at most 8 a second, as the guardian service holds a child's streams to), and the
/// frame judged is the newest that arrived meanwhile. A stream costs a share of a core, not all
/// of it, whatever its frame rate; nil judges as fast as the judging threads go.
///
/// ``analyze(_:)`` never blocks; judging runs on the analyzer's own threads, never on Swift's
/// cooperative pool. ``end()`` judges what is still waiting and finishes ``analysisChanges``;
/// ``cancel()`` stops at once (a caller that went away).
///
/// ```swift
/// let stream = analyzer.videoStreamAnalyzer(participantUUID: peer, streamDirection: .incoming)
/// Task { for await change in stream.analysisChanges { blur(change.shouldIndicateSensitivity) } }
/// for frame in frames { stream.analyze(VideoStreamFrame(frame)) }
/// let statistics = await stream.end()
/// ```
public final class VideoStreamAnalyzer: Sendable {
    /// Which way the stream goes, as in Apple's framework.
    public enum StreamDirection: String, Sendable, Codable {
        /// This device's camera, sent to others.
        case outgoing
        /// Another participant's video, shown here.
        case incoming
    }

    /// Counts for one stream.
    public struct Statistics: Sendable, Equatable, Codable {
        /// Frames given to ``VideoStreamAnalyzer/analyze(_:)``.
        public var seen = 0
        /// Frames judged (including those that failed).
        public var judged = 0
        /// Frames not judged: pushed out of the slot by newer ones, or discarded by
        /// ``VideoStreamAnalyzer/cancel()`` (so `judged + dropped == seen` once the stream is over).
        public var dropped = 0
        /// Frames the judge could not judge.
        public var failed = 0
        /// Judged frames that were flagged.
        public var flagged = 0
        /// Changes of advice published.
        public var changes = 0
        /// Wall seconds from the first frame to the last judgement (or to now).
        public var seconds = 0.0
        /// Wall seconds spent judging, summed over the judging threads.
        public var judgingSeconds = 0.0

        /// Frames judged per wall second.
        public var judgedPerSecond: Double { seconds > 0 ? Double(judged) / seconds : 0 }
        /// Mean wall time of one judgement, seconds.
        public var secondsPerJudgement: Double { judged > 0 ? judgingSeconds / Double(judged) : 0 }
    }

    public let participantUUID: String
    public let streamDirection: StreamDirection
    public let analysisPolicy: AnalysisPolicy
    /// The thresholds and decision rules each frame is judged by.
    public let policy: SensitivityPolicy
    public let interventions: StreamInterventions
    public let slotCapacity: Int
    /// The least time between the starts of two judgements (nil: none).
    public let spacing: Duration?
    /// ``spacing``'s default: 8 judgements a second at most.
    public static let defaultSpacing: Duration = .milliseconds(125)
    /// The advice, one value per change; finishes after ``end()``. Only the latest values are
    /// kept for a slow reader (each carries the whole advice in force).
    public let analysisChanges: AsyncStream<VideoStreamAnalysis>
    let core: Core

    /// A stream analyzer judging with `judge` by `policy`. `analysisPolicy` defaults to the one
    /// that follows the policy's mode; `.disabled` judges nothing (frames are only counted).
    /// `judges` threads judge at once (frames beyond them wait in the slot of `slotCapacity`),
    /// their judgements begun at least `spacing` apart.
    public init(participantUUID: String, streamDirection: StreamDirection, judge: any VideoFrameJudge, policy: SensitivityPolicy,
                analysisPolicy: AnalysisPolicy? = nil, interventions: StreamInterventions? = nil, judges: Int = 1, slotCapacity: Int = 1,
                spacing: Duration? = VideoStreamAnalyzer.defaultSpacing) {
        let analysisPolicy = analysisPolicy ?? AnalysisPolicy(mode: policy.mode)
        self.participantUUID = participantUUID
        self.streamDirection = streamDirection
        self.analysisPolicy = analysisPolicy
        self.policy = policy
        self.interventions = interventions ?? .defaults(for: analysisPolicy)
        self.slotCapacity = max(1, slotCapacity)
        self.spacing = spacing.flatMap { $0 > .zero ? $0 : nil }
        let (changes, continuation) = AsyncStream.makeStream(of: VideoStreamAnalysis.self, bufferingPolicy: .bufferingNewest(32))
        analysisChanges = changes
        core = Core(judge: judge, policy: policy, rules: self.interventions, capacity: self.slotCapacity,
                    judging: analysisPolicy != .disabled, spacing: self.spacing, continuation: continuation)
        core.start(threads: analysisPolicy == .disabled ? 0 : max(1, judges), name: "stream-\(participantUUID.prefix(8))")
    }

    deinit { core.finish() }

    /// Gives the stream's next frame; returns at once. When the slot is full, the oldest waiting
    /// frame is dropped for it. Ignored after ``end()``.
    public func analyze(_ frame: VideoStreamFrame) { core.submit(frame) }

    /// The application has intervened (shown its warning, the person chose to go on): lifts an
    /// interruption and a mute in force, publishing the change.
    public func continueStream() { core.continueStream() }

    /// The advice in force now (nil before anything was advised), like Apple's `analysis`.
    public var analysis: VideoStreamAnalysis? { core.locked { core.latest } }

    /// The counts so far.
    public var statistics: Statistics { core.locked { core.currentStatistics() } }

    /// Stops taking frames, judges those still waiting, finishes ``analysisChanges`` and returns
    /// the final counts.
    @discardableResult
    public func end() async -> Statistics {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.finish { continuation.resume() }
        }
        return statistics
    }

    /// Stops at once, for a consumer that is gone: frames still waiting are discarded (counted
    /// as dropped), a judgement under way is not applied when it returns, nothing more is
    /// published, and ``analysisChanges`` finishes once the judging threads are idle. A judge
    /// that can be interrupted is the caller's to interrupt. Idempotent; ``end()`` after it
    /// returns the counts.
    public func cancel() { core.cancel() }
}

extension VideoStreamAnalyzer {
    /// The slot, the judging threads and the advice state, shared by the threads (which must not
    /// keep the analyzer itself alive).
    final class Core: @unchecked Sendable {
        let judge: any VideoFrameJudge
        let policy: SensitivityPolicy
        let rules: StreamInterventions
        let capacity: Int
        let judging: Bool
        /// The least time between two judgements' starts (nil: none).
        let spacing: Duration?
        let continuation: AsyncStream<VideoStreamAnalysis>.Continuation
        /// Guards everything below; judging threads wait on it.
        let lock = NSCondition()

        struct Waiting {
            var frame: VideoStreamFrame
            var index: Int
            var time: Double
            var arrived: UInt64
        }

        var slot = Deque<Waiting>()
        var state = StreamInterventions.State()
        var statistics = Statistics()
        var latest: VideoStreamAnalysis?
        var ended = false
        /// Set by ``cancel()``: verdicts are no longer applied.
        var cancelled = false
        var running = 0
        var whenDone: [() -> Void] = []
        var firstArrival: UInt64?
        /// The newest arrived frame's media time.
        var newestTime: Double?
        var lastJudged: UInt64?
        /// When the latest judgement began.
        var lastStart: UInt64?
        /// Tickets in dispatch order: verdicts are applied in that order.
        var nextTicket = 0
        var nextToApply = 0
        var finished: [Int: (Waiting, Result<VideoFrameVerdict, Error>, UInt64)] = [:]
        /// Told of each applied verdict (``VideoStreamAnalyzer/observeJudgements(_:)``).
        var judgementObserver: (@Sendable (Judgement) -> Void)?

        init(judge: any VideoFrameJudge, policy: SensitivityPolicy, rules: StreamInterventions, capacity: Int, judging: Bool,
             spacing: Duration?, continuation: AsyncStream<VideoStreamAnalysis>.Continuation) {
            self.judge = judge
            self.policy = policy
            self.rules = rules
            self.capacity = capacity
            self.judging = judging
            self.spacing = spacing
            self.continuation = continuation
        }

        func locked<T>(_ body: () -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }

        func start(threads: Int, name: String) {
            running = threads
            for i in 0..<threads {
                let thread = Thread { [self] in
                    qsys_set_thread_name("\(name)-\(i)")
                    loop()
                }
                thread.name = "\(name)-\(i)"
                thread.stackSize = 4 << 20
                thread.start()
            }
        }

        func submit(_ frame: VideoStreamFrame) {
            let now = DispatchTime.now().uptimeNanoseconds
            lock.lock()
            defer { lock.unlock() }
            guard !ended else { return }
            if firstArrival == nil { firstArrival = now }
            let time = frame.time ?? Double(now - firstArrival!) / 1e9
            let index = statistics.seen
            statistics.seen += 1
            newestTime = max(newestTime ?? time, time)
            guard judging else { return }
            if slot.count >= capacity {
                slot.removeFirst()
                statistics.dropped += 1
            }
            slot.append(Waiting(frame: frame, index: index, time: time, arrived: now))
            lock.signal()
        }

        func continueStream() {
            lock.lock()
            defer { lock.unlock() }
            guard !cancelled, state.continueStream() else { return }
            publish(cause: .continued, waiting: nil, verdict: nil, now: DispatchTime.now().uptimeNanoseconds)
        }

        func cancel() {
            lock.lock()
            if !cancelled {
                cancelled = true
                ended = true
                statistics.dropped += slot.count
                slot.removeAll()
                lock.broadcast()
            }
            let finishedAlready = running == 0
            lock.unlock()
            if finishedAlready { continuation.finish() }
        }

        /// Ends the stream; `done` runs once every judging thread has finished.
        func finish(_ done: (() -> Void)? = nil) {
            lock.lock()
            ended = true
            let finishedAlready = running == 0
            if !finishedAlready, let done { whenDone.append(done) }
            lock.broadcast()
            lock.unlock()
            if finishedAlready {
                continuation.finish()
                done?()
            }
        }

        /// A judging thread: takes the oldest waiting frame once the spacing since the latest
        /// judgement's start has passed (also after ``finish(_:)``; not after ``cancel()``, which
        /// empties the slot), judges it outside the lock, applies the verdicts in ticket order.
        func loop() {
            lock.lock()
            while true {
                while slot.isEmpty && !ended { lock.wait() }
                if !slot.isEmpty, let spacing, let last = lastStart {
                    let since = Duration.nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - last))
                    if since < spacing {
                        // Newer frames may replace the waiting one meanwhile: the newest is judged.
                        _ = lock.wait(until: Date(timeIntervalSinceNow: (spacing - since) / .seconds(1)))
                        continue
                    }
                }
                guard let waiting = slot.popFirst() else { break }
                let ticket = nextTicket
                nextTicket += 1
                let started = DispatchTime.now().uptimeNanoseconds
                lastStart = started
                lock.unlock()
                let verdict = Result { try judge.judge(waiting.frame, policy: policy) }
                let now = DispatchTime.now().uptimeNanoseconds
                lock.lock()
                statistics.judgingSeconds += Double(now - started) / 1e9
                finished[ticket] = (waiting, verdict, now)
                while let ready = finished.removeValue(forKey: nextToApply) {
                    nextToApply += 1
                    if cancelled { statistics.dropped += 1 } else {
                        apply(ready.0, ready.1, ready.2)
                        judgementObserver?(Judgement(frameIndex: ready.0.index, mediaTime: ready.0.time, failed: (try? ready.1.get()) == nil, advice: state))
                    }
                }
            }
            running -= 1
            let last = running == 0
            let callbacks = last ? whenDone : []
            if last { whenDone = [] }
            lock.unlock()
            if last {
                continuation.finish()
                for callback in callbacks { callback() }
            }
        }

        /// Applies one verdict to the advice (under the lock).
        func apply(_ waiting: Waiting, _ result: Result<VideoFrameVerdict, Error>, _ now: UInt64) {
            statistics.judged += 1
            lastJudged = now
            let flagged: Bool
            var verdict: VideoFrameVerdict?
            switch result {
            case .success(let v):
                verdict = v
                flagged = v.isSensitive
            case .failure:
                statistics.failed += 1
                guard rules.failuresCountAsFlagged else { return }
                flagged = true
            }
            if flagged { statistics.flagged += 1 }
            guard state.apply(flagged: flagged, time: waiting.time, rules: rules) else { return }
            publish(cause: verdict == nil ? .failure : (flagged ? .flagged : .cleared), waiting: waiting, verdict: verdict, now: now)
        }

        func publish(cause: VideoStreamAnalysis.Cause, waiting: Waiting?, verdict: VideoFrameVerdict?, now: UInt64) {
            let change = VideoStreamAnalysis(
                shouldIndicateSensitivity: state.indicate, shouldInterruptVideo: state.interrupt, shouldMuteAudio: state.mute,
                cause: cause, mediaTime: waiting?.time, frameIndex: waiting?.index,
                latency: waiting.map { Double(now - $0.arrived) / 1e9 }, streamTime: newestTime,
                reasons: cause == .flagged ? verdict?.reasons ?? [] : [], detections: cause == .flagged ? verdict?.detections ?? [] : [])
            latest = change
            statistics.changes += 1
            continuation.yield(change)
        }

        func currentStatistics() -> Statistics {
            var s = statistics
            if let first = firstArrival {
                let end = (ended && running == 0 ? lastJudged : nil) ?? DispatchTime.now().uptimeNanoseconds
                s.seconds = Double(max(end, first) - first) / 1e9
            }
            return s
        }
    }
}
