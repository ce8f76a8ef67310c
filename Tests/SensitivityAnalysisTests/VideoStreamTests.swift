import Foundation
import MediaDecoding
import Synchronization
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// Live streams (issue 31): ``VideoStreamAnalyzer`` fed by ``LiveVideoSource`` from ffmpeg-made
/// 720p30 video played at its own rate, the intervention rule, and the bounded slot under a
/// judge slower than the frames.
@Suite("Video streams", .serialized)
struct VideoStreamTests {
    /// A `seconds`-long 1280x720 30 fps H.264 clip of moving `testsrc2`, with the card (800x450,
    /// 39% of the frame) shown from `cardFrom` to `cardUntil` seconds.
    static func clip(_ url: URL, seconds: Int, cardFrom: Double?, cardUntil: Double? = nil) throws {
        let card = url.deletingLastPathComponent().appendingPathComponent("card-800x450.png")
        if !FileManager.default.fileExists(atPath: card.path) {
            try Data(try PNGEncoder.encode(TestCard.render(width: 800, height: 450))).write(to: card)
        }
        let graph = cardFrom.map { String(format: "[0][1]overlay=x=240:y=135:enable='between(t,%.3f,%.3f)'", $0, cardUntil ?? Double(seconds)) } ?? "[0]null"
        try FFmpegTool.run(["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30:d=\(seconds)", "-i", card.path, "-filter_complex", graph,
                            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", url.path])
    }

    /// Plays `url` at its own rate into a stream analyzer judging with the real analyzer;
    /// returns every change and the final counts.
    static func play(_ url: URL, policy: SensitivityPolicy) async throws -> ([VideoStreamAnalysis], VideoStreamAnalyzer.Statistics, LiveVideoSource.Summary) {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let stream = analyzer.videoStreamAnalyzer(participantUUID: "test", streamDirection: .incoming, policy: policy)
        let collector = Task { var all: [VideoStreamAnalysis] = []; for await change in stream.analysisChanges { all.append(change) }; return all }
        let source = try LiveVideoSource(input: url.path)
        #expect(source.info.paced && source.info.kind == .file && source.info.width == 1280 && source.info.height == 720)
        let summary = try await offPool("stream-source") { try source.run { stream.analyze(VideoStreamFrame($0)); return true } }
        let statistics = await stream.end()
        return (await collector.value, statistics, summary)
    }

    @Test("the card in a 720p30 stream is signalled within 0.5 s of its first frame and cleared after it is gone")
    func cardSignalledAndCleared() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("call.mp4")
        try Self.clip(url, seconds: 7, cardFrom: 2.5, cardUntil: 4.5)
        let (changes, statistics, summary) = try await Self.play(url, policy: .defaults(for: .adult))
        #expect(summary.frames == 210, "frames read: \(summary.frames)")
        #expect(statistics.seen == 210 && statistics.judged + statistics.dropped == statistics.seen, "\(statistics)")
        let first = try #require(changes.first, "no change at all: \(statistics)")
        #expect(first.cause == .flagged && first.shouldIndicateSensitivity && first.reasons == ["TEST_CARD 1.00"])
        // The card's first frame is at 2.5 s (frame 75): the frame judged flagged is one of the
        // card's, and when the change came the stream had not gone more than 0.5 s past its start.
        let flaggedFrame = try #require(first.mediaTime), signalled = try #require(first.streamTime)
        #expect(flaggedFrame >= 2.5 - 0.001 && signalled >= flaggedFrame)
        #expect(signalled <= 2.5 + 0.5, "card from 2.5 s: frame \(flaggedFrame) s flagged when the stream was at \(signalled) s (judged \(first.latency ?? -1) s after it arrived; \(statistics.secondsPerJudgement) s per judgement)")
        // Adult: interrupted after 3 flagged frames in a row, all lifted once the card is gone.
        #expect(changes.contains { $0.shouldInterruptVideo && $0.shouldMuteAudio && ($0.mediaTime ?? 99) < 4.5 })
        let last = try #require(changes.last)
        #expect(last.cause == .cleared && !last.isSensitive, "the last change: \(last)")
        let cleared = try #require(last.mediaTime)
        // Lifted 1 s after the last flagged judgement, which is within a spacing (125 ms) and a
        // frame of the card's end.
        #expect(cleared >= 4.5 + 1 - 0.125 - 1.0 / 30 - 0.001 && cleared <= 4.5 + 2.5, "card gone at 4.5 s, cleared at \(cleared) s")
        #expect(!changes.contains { ($0.mediaTime ?? 0) < 2.5 - 0.001 }, "a change before the card: \(changes)")
        print("stream 720p30 (card): \(statistics.judged) judged, \(statistics.dropped) dropped of \(statistics.seen) in \(statistics.seconds) s, "
              + "\(statistics.judgedPerSecond) judged/s, \(statistics.secondsPerJudgement) s per judgement, signalled at +\(signalled - 2.5) s of media time")
    }

    @Test("a benign 720p30 stream is never flagged")
    func benignNeverFlagged() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plain.mp4")
        // 3 s (90 frames, played in real time; 5 s until issue 27's suite time): the stream is
        // judged all along, a judgement every few frames, each one a chance of a false flag.
        try Self.clip(url, seconds: 3, cardFrom: nil)
        let (changes, statistics, _) = try await Self.play(url, policy: .defaults(for: .child))
        #expect(changes.isEmpty, "\(changes)")
        #expect(statistics.flagged == 0 && statistics.failed == 0 && statistics.judged >= 3, "\(statistics)")
        #expect(statistics.judged + statistics.dropped == statistics.seen)
    }

    @Test("a live source's frames are converted to RGB only when judged: the frames the spacing passes over never are")
    func convertedOnlyWhenJudged() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("small.mp4")
        try VideoFixtures.make(url, seconds: 2, encoder: ["-c:v", "libx264", "-preset", "ultrafast"])
        let stream = try TestEnvironment.sharedAnalyzer().videoStreamAnalyzer(participantUUID: "test", streamDirection: .incoming)
        // Read as fast as it decodes: far more frames than 8 judgements a second can take.
        let source = try LiveVideoSource(input: url.path, paced: false)
        let pictures = Mutex<[FramePicture]>([])
        _ = try await offPool("stream-source") {
            try source.run { frame in
                pictures.withLock { $0.append(frame.picture) }
                stream.analyze(VideoStreamFrame(frame))
                return true
            }
        }
        let statistics = await stream.end()
        let all = pictures.withLock { $0 }
        #expect(all.count == 50 && statistics.seen == 50)
        #expect(statistics.judged >= 1 && statistics.judged < statistics.seen, "\(statistics)")
        #expect(all.filter(\.isConverted).count == statistics.judged, "\(all.filter(\.isConverted).count) converted, \(statistics)")
        // One never asked for converts when asked: upright, at analysis size (a 320x240 frame stays so).
        let unasked = try #require(all.first { !$0.isConverted })
        let image = try unasked.image()
        #expect(image.width == 320 && image.height == 240 && unasked.isConverted)
    }

    /// A stand-in judge (not the real analyzer): sleeps `delay` per frame, flags red frames,
    /// and records which frames it was given, in order.
    final class SlowStandInJudge: VideoFrameJudge {
        let delay: Double
        let judgedTimes = Mutex<[Double]>([])
        init(delay: Double) { self.delay = delay }
        func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
            usleep(useconds_t(delay * 1e6))
            judgedTimes.withLock { $0.append(frame.time ?? -1) }
            guard case .rgb(let image, _, _) = frame.content else { return VideoFrameVerdict(isSensitive: false) }
            return VideoFrameVerdict(isSensitive: image.pixels[0] > 200 && image.pixels[1] < 50, reasons: ["RED"])
        }
    }

    @Test("frames faster than the judge are dropped oldest first, with a count; the newest is always judged")
    func dropOldest() async throws {
        let judge = SlowStandInJudge(delay: 0.05)
        let stream = VideoStreamAnalyzer(participantUUID: "slow", streamDirection: .incoming, judge: judge, policy: .defaults(for: .adult))
        let grey = RGBImage(width: 16, height: 16, filledWith: (128, 128, 128))
        // 200 frames at once: far faster than 20 judgements per second.
        for i in 0..<200 { stream.analyze(VideoStreamFrame(grey, time: Double(i) / 30)) }
        let statistics = await stream.end()
        let judged = judge.judgedTimes.withLock { $0 }
        #expect(statistics.seen == 200 && statistics.judged == judged.count && statistics.judged + statistics.dropped == 200, "\(statistics)")
        #expect(statistics.dropped >= 190, "\(statistics)")
        #expect(judged.last == 199.0 / 30, "the newest frame must be judged: \(judged)")
        #expect(judged == judged.sorted(), "frames judged out of order: \(judged)")
    }

    /// A stand-in judge (not the real analyzer) that judges at once and records when each
    /// judgement began and which frame it was given.
    final class TimedStandInJudge: VideoFrameJudge {
        let starts = Mutex<[(at: ContinuousClock.Instant, frame: Double)]>([])
        func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
            starts.withLock { $0.append((ContinuousClock.now, frame.time ?? -1)) }
            return VideoFrameVerdict(isSensitive: false)
        }
    }

    @Test("judgements begin at least 125 ms apart by default (8 a second), each on the newest frame; without spacing every frame a fast judge can take is judged")
    func spacing() async throws {
        let grey = RGBImage(width: 16, height: 16, filledWith: (128, 128, 128))
        /// 100 frames 10 ms apart (about a second); the judge's starts, and the stream's counts.
        func feed(spacing: Duration?) async throws -> ([(at: ContinuousClock.Instant, frame: Double)], VideoStreamAnalyzer.Statistics) {
            let judge = TimedStandInJudge()
            let stream = VideoStreamAnalyzer(participantUUID: "spaced", streamDirection: .incoming, judge: judge, policy: .defaults(for: .adult),
                                             spacing: spacing)
            for i in 0..<100 {
                stream.analyze(VideoStreamFrame(grey, time: Double(i) / 100))
                try await Task.sleep(for: .milliseconds(10))
            }
            let statistics = await stream.end()
            return (judge.starts.withLock { $0 }, statistics)
        }
        let (spaced, counts) = try await feed(spacing: VideoStreamAnalyzer.defaultSpacing)
        let gaps = zip(spaced.dropFirst(), spaced).map { ($0.at - $1.at) }
        #expect(gaps.allSatisfy { $0 >= .milliseconds(124) }, "judgements closer than 125 ms: \(gaps)")
        #expect(counts.judged == spaced.count && counts.judged + counts.dropped == 100, "\(counts)")
        // The frames fed took at least a second: at most one judgement per 125 ms of it and the
        // one judged at the end (what was still waiting).
        let fed = try #require(spaced.last).at - spaced[0].at
        #expect(Double(spaced.count) <= 2 + fed / VideoStreamAnalyzer.defaultSpacing, "\(spaced.count) judged in \(fed)")
        #expect(spaced.map(\.frame) == spaced.map(\.frame).sorted() && spaced.last?.frame == 0.99, "the newest frame is judged last: \(spaced.map(\.frame))")
        let (unspaced, _) = try await feed(spacing: nil)
        #expect(unspaced.count > spaced.count * 2, "unspaced: \(unspaced.count) judged, spaced: \(spaced.count)")
    }

    /// A stand-in judge (not the real analyzer) that holds each frame until the test lets it go,
    /// and says when it has one: the moment a judgement is under way is the test's, not the load's.
    final class GatedStandInJudge: VideoFrameJudge {
        let entered = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let judgedTimes = Mutex<[Double]>([])
        func judge(_ frame: VideoStreamFrame, policy: SensitivityPolicy) throws -> VideoFrameVerdict {
            judgedTimes.withLock { $0.append(frame.time ?? -1) }
            entered.signal()
            gate.wait()
            return VideoFrameVerdict(isSensitive: true, reasons: ["RED"])
        }
    }

    @Test("cancel() stops at once: the waiting frame is discarded, the verdict under way is not applied, nothing is published, the changes finish")
    func cancelStopsAtOnce() async throws {
        // Gated, not timed: with a judge that slept 0.3 s, a loaded run let the verdict land
        // before the test's cancel() (the test's task starved past the sleep).
        let judge = GatedStandInJudge()
        let stream = VideoStreamAnalyzer(participantUUID: "gone", streamDirection: .incoming, judge: judge, policy: .defaults(for: .child))
        let collector = Task { var all: [VideoStreamAnalysis] = []; for await change in stream.analysisChanges { all.append(change) }; return all }
        let red = RGBImage(width: 16, height: 16, filledWith: (255, 0, 0))
        stream.analyze(VideoStreamFrame(red, time: 0))
        await offPool("judge-entered") { judge.entered.wait() }  // the first is being judged
        stream.analyze(VideoStreamFrame(red, time: 0.1))
        stream.cancel()
        stream.cancel()
        stream.analyze(VideoStreamFrame(red, time: 0.2))  // ignored
        stream.continueStream()                             // nothing to publish
        judge.gate.signal()                                 // the verdict under way returns now
        let changes = await collector.value
        let statistics = await stream.end()
        #expect(changes.isEmpty, "a cancelled stream publishes nothing: \(changes)")
        #expect(stream.analysis == nil)
        #expect(statistics.seen == 2 && statistics.judged == 0 && statistics.dropped == 2, "\(statistics)")
        #expect(judge.judgedTimes.withLock { $0 } == [0], "only the frame under way reached the judge")
    }

    @Test("with a slot of 4 and two judging threads, verdicts are still applied in frame order")
    func orderWithTwoJudges() async throws {
        let judge = SlowStandInJudge(delay: 0.01)
        // Unspaced: the two threads judge side by side, which is what the order is checked against.
        let stream = VideoStreamAnalyzer(participantUUID: "two", streamDirection: .outgoing, judge: judge, policy: .defaults(for: .child),
                                         judges: 2, slotCapacity: 4, spacing: nil)
        let collector = Task { var all: [VideoStreamAnalysis] = []; for await change in stream.analysisChanges { all.append(change) }; return all }
        let grey = RGBImage(width: 16, height: 16, filledWith: (128, 128, 128)), red = RGBImage(width: 16, height: 16, filledWith: (255, 0, 0))
        for i in 0..<120 {
            stream.analyze(VideoStreamFrame((40..<60).contains(i) ? red : grey, time: Double(i) / 10))
            try await Task.sleep(nanoseconds: 15_000_000)
        }
        let statistics = await stream.end()
        let changes = await collector.value
        #expect(statistics.flagged > 0 && statistics.judged + statistics.dropped == 120, "\(statistics)")
        let times = changes.compactMap(\.mediaTime)
        #expect(times == times.sorted(), "changes out of frame order: \(changes)")
        // Child: interrupted at the first red frame, and the interruption outlives the red frames.
        let first = try #require(changes.first)
        #expect(first.shouldInterruptVideo && first.shouldMuteAudio && (first.mediaTime ?? 0) >= 4.0 && (first.mediaTime ?? 99) < 4.5)
        #expect(changes.last?.shouldIndicateSensitivity == false && changes.last?.shouldInterruptVideo == true, "\(changes)")
        stream.continueStream()
    }

    @Test("the intervention rule: adult interrupts after 3 flagged frames and lifts with the card; child interrupts at once and holds until continued")
    func interventionRule() {
        let adult = StreamInterventions.defaults(for: .simpleInterventions)
        var state = StreamInterventions.State()
        var changed = state.apply(flagged: true, time: 0, rules: adult)
        #expect(changed && state.indicate && !state.interrupt)
        changed = state.apply(flagged: false, time: 0.1, rules: adult)
        #expect(!changed, "one clean frame lifts nothing")
        _ = state.apply(flagged: true, time: 0.2, rules: adult)
        _ = state.apply(flagged: true, time: 0.3, rules: adult)
        #expect(!state.interrupt, "flagged frames must be in a row")
        changed = state.apply(flagged: true, time: 0.4, rules: adult)
        #expect(changed && state.interrupt && state.mute)
        for i in 1...3 { _ = state.apply(flagged: false, time: 0.4 + Double(i) * 0.1, rules: adult) }
        #expect(state.indicate, "3 clean frames within 1 s of the last flagged one lift nothing")
        changed = state.apply(flagged: false, time: 1.5, rules: adult)
        #expect(changed && !state.indicate && !state.interrupt && !state.mute)

        let child = StreamInterventions.defaults(for: .descriptiveInterventions)
        state = StreamInterventions.State()
        changed = state.apply(flagged: true, time: 0, rules: child)
        #expect(changed && state.indicate && state.interrupt && state.mute)
        for i in 1...10 { _ = state.apply(flagged: false, time: Double(i), rules: child) }
        #expect(!state.indicate && state.interrupt && state.mute, "a child's interruption holds until continued")
        changed = state.continueStream()
        #expect(changed && !state.interrupt && !state.mute)
        changed = state.continueStream()
        #expect(!changed, "nothing to lift twice")
        changed = state.apply(flagged: true, time: 11, rules: child)
        #expect(changed && state.interrupt, "flagged again: interrupted again")
    }

    @Test("a disabled policy judges nothing")
    func disabledPolicy() async {
        let judge = SlowStandInJudge(delay: 0)
        let stream = VideoStreamAnalyzer(participantUUID: "off", streamDirection: .incoming, judge: judge, policy: .defaults(for: .adult),
                                         analysisPolicy: .disabled)
        for _ in 0..<5 { stream.analyze(VideoStreamFrame(RGBImage(width: 8, height: 8, filledWith: (255, 0, 0)))) }
        let statistics = await stream.end()
        #expect(statistics.seen == 5 && statistics.judged == 0 && judge.judgedTimes.withLock { $0.isEmpty })
    }

    @Test("raw YUV and encoded frames are judged by the real analyzer: the card is flagged in each")
    func rawAndEncodedFrames() async throws {
        let analyzer = try TestEnvironment.sharedAnalyzer()
        let card = TestCard.render(width: 320, height: 240)
        let png = try PNGEncoder.encode(card)
        #expect(try analyzer.judge(VideoStreamFrame(.encoded(png)), policy: analyzer.policy).reasons == ["TEST_CARD 1.00"])
        // RGB -> I420 by the BT.601 formulas (as a camera would send it).
        var y = [UInt8](), u = [UInt8](), v = [UInt8]()
        func px(_ x: Int, _ yy: Int) -> (Double, Double, Double) {
            let i = (yy * 320 + x) * 3
            return (Double(card.pixels[i]), Double(card.pixels[i + 1]), Double(card.pixels[i + 2]))
        }
        for row in 0..<240 { for col in 0..<320 { let (r, g, b) = px(col, row); y.append(UInt8(max(0, min(255, 16 + 0.257 * r + 0.504 * g + 0.098 * b)))) } }
        for row in stride(from: 0, to: 240, by: 2) {
            for col in stride(from: 0, to: 320, by: 2) {
                let (r, g, b) = px(col, row)
                u.append(UInt8(max(0, min(255, 128 - 0.148 * r - 0.291 * g + 0.439 * b))))
                v.append(UInt8(max(0, min(255, 128 + 0.439 * r - 0.368 * g - 0.071 * b))))
            }
        }
        let raw = try RawVideoFrame(format: .yuv420p, width: 320, height: 240, bytes: y + u + v)
        #expect(try analyzer.judge(VideoStreamFrame(.raw(raw)), policy: analyzer.policy).reasons == ["TEST_CARD 1.00"])
        let grey = try RawVideoFrame(format: .yuyv422, width: 320, height: 240, bytes: [UInt8](repeating: 128, count: 320 * 240 * 2))
        #expect(try !analyzer.judge(VideoStreamFrame(.raw(grey)), policy: analyzer.policy).isSensitive)
        #expect(throws: MediaError.self) { try RawVideoFrame(format: .nv12, width: 320, height: 240, bytes: [UInt8](repeating: 0, count: 100)) }
    }
}
