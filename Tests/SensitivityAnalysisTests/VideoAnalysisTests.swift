import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis
import Locking

/// Videos made in the test with ffmpeg: a moving test pattern with the test card shown full
/// frame at a known time, in several codecs and containers.
enum VideoFixtures {
    static func ffmpeg(_ arguments: [String]) throws { try FFmpegTool.run(arguments) }

    /// A `seconds`-long 320x240 clip at `rate` frames a second, the card shown from `cardFrom` to
    /// `cardTo` (if given). The long clips (a minute or more), where the frame rate is not what
    /// is tested, are made at 5 frames a second with the keyframe spacing in seconds kept: each
    /// frame costs the encoder the same, so such a clip is made in a fifth of the time where the
    /// fixture cache is empty (a fresh machine's first run: 25 s of the suite's CPU went to
    /// encoding the long clips), and every sample's decode from its keyframe is a fifth as long.
    static func make(_ url: URL, seconds: Int = 12, cardFrom: Double? = nil, cardTo: Double? = nil, encoder: [String],
                     size: String = "320x240", rate: Int = 25, extraInput: [String] = [], filter: String? = nil) throws {
        let parts = size.split(separator: "x").map { Int($0)! }
        let card = url.deletingLastPathComponent().appendingPathComponent("card-\(size).png")
        if !FileManager.default.fileExists(atPath: card.path) {
            try Data(try PNGEncoder.encode(TestCard.render(width: parts[0], height: parts[1]))).write(to: card)
        }
        var args = ["-f", "lavfi", "-i", "testsrc2=s=\(size):r=\(rate):d=\(seconds)", "-i", card.path] + extraInput
        var graph = cardFrom.map { "[0][1]overlay=enable='between(t,\($0),\(cardTo ?? $0 + 1))'" } ?? "[0]null"
        if let filter { graph += ",\(filter)" }
        args += ["-filter_complex", graph, "-pix_fmt", "yuv420p"] + encoder + [url.path]
        try ffmpeg(args)
    }
}

@Suite("Video analysis")
struct VideoAnalysisTests {
    /// Each codec's clips, at 10 frames a second (the keyframe spacing in seconds as at 25: 10 s,
    /// 1 s, 4 s, 4 s, 4 s, the encoder's default, 4 s): what is tested is each decoder and the
    /// plan, and the fixtures cost the encoders 60% less where the cache is empty (AV1 and HEVC
    /// the most: 4.3 and 2.5 s of CPU at 25 frames a second).
    static let codecs: [(name: String, ext: String, encoder: [String])] = [
        ("h264-long-gop", "mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "100"]),
        ("h264-1s-gop", "mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10"]),
        ("h264-mov", "mov", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "40", "-bf", "3"]),
        ("hevc", "mkv", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error:keyint=40"]),
        ("vp9", "webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k", "-g", "40"]),
        ("vp8", "webm", ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k"]),
        ("av1", "mkv", ["-c:v", "libsvtav1", "-preset", "12", "-g", "40"]),
        ("mpeg4", "avi", ["-c:v", "mpeg4", "-q:v", "4"]),
        ("mjpeg", "avi", ["-c:v", "mjpeg", "-q:v", "4", "-pix_fmt", "yuvj420p"]),
    ]

    /// The models loaded once for the suite (every test that needs no special options). These
    /// tests check decoding and the standard plan on short fixtures, so the dense sampling of
    /// clips under a minute is off here (ShortClipTests checks it).
    static let shared = Result { try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2),
                                                         videoOptions: VideoOptions(maxGap: 2, denseShortClips: false)) }

    func analyzer(gap: Double = 2, all: Bool = false, limits: MediaLimits = .default) throws -> SensitivityAnalyzer {
        if gap == 2 && !all && limits == .default { return try Self.shared.get() }
        return try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2, limits: limits),
                                       videoOptions: VideoOptions(maxGap: gap, allFlaggedRanges: all, denseShortClips: false))
    }

    /// The models' stand-in (the test card found as always, every other frame clean, no model
    /// run) for the codecs after the first: what differs between them is the decoding and the
    /// plan, not the models, which cost about 50 ms a sample (8 s of the suite's CPU for the nine).
    static let standIn = Result { try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2),
                                                          videoOptions: VideoOptions(maxGap: 2, denseShortClips: false), modelsStandIn: true) }

    @Test("the card is found at its time, within the gap (the real models for H.264, their stand-in for the other codecs)", arguments: codecs.map(\.name))
    func cardFound(codec: String) async throws {
        let spec = try #require(Self.codecs.first { $0.name == codec })
        let analyzer = codec == Self.codecs[0].name ? try analyzer() : try Self.standIn.get()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("clip.\(spec.ext)")
        try VideoFixtures.make(url, seconds: 12, cardFrom: 7, cardTo: 9.5, encoder: spec.encoder, rate: 10)
        let result = try await analyzer.videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.isSensitive, "\(codec): card not found in \(result.samples) samples")
        // Early exit: found within the gap of where the card begins (coarse to fine: the stretch
        // before the first flagged sample is searched), not necessarily with every gap filled.
        let time = try #require(result.frameTime)
        #expect(time >= 6.9 && time <= 9.1, "\(codec): card found at \(time)")
        #expect(result.reasons == ["TEST_CARD 1.00"])
        #expect(result.flaggedFrame != nil)
        // Coverage: what was analysed when the verdict came (all of a short clip, at times).
        #expect(result.coverage.map { $0 >= 0 && $0 <= 1 } == true)
        let clean = dir.appendingPathComponent("plain.\(spec.ext)")
        try VideoFixtures.make(clean, seconds: 12, encoder: spec.encoder, rate: 10)
        let plain = try await analyzer.videoAnalysis(forFileAt: clean.path).hasSensitiveContent()
        #expect(!plain.isSensitive)
        #expect(plain.samples >= 6, "\(codec): \(plain.samples) samples over 12 s")
        #expect(plain.largestGap <= 2.0 + 1e-6, "\(codec): largest gap \(plain.largestGap)")
        #expect(plain.coverage == 1)
    }

    @Test("--all lists every flagged range")
    func allRanges() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let card = dir.appendingPathComponent("card-320x240.png")
        try Data(try PNGEncoder.encode(TestCard.render(width: 320, height: 240))).write(to: card)
        let url = dir.appendingPathComponent("two.mp4")
        try VideoFixtures.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=20", "-i", card.path, "-filter_complex",
                                  "[0][1]overlay=enable='between(t,3,6)+between(t,13,16)'", "-pix_fmt", "yuv420p",
                                  "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", url.path])
        let result = try await analyzer(gap: 1, all: true).videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.flaggedRanges.count == 2, "\(result.flaggedRanges)")
        if result.flaggedRanges.count == 2 {
            #expect(result.flaggedRanges[0].lowerBound >= 2.9 && result.flaggedRanges[0].upperBound <= 6.1)
            #expect(result.flaggedRanges[1].lowerBound >= 12.9 && result.flaggedRanges[1].upperBound <= 16.1)
        }
        #expect(result.coverage == 1)
    }

    @Test("rotation metadata is applied: a card stored sideways is upright again")
    func rotation() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stored = dir.appendingPathComponent("stored.mp4"), url = dir.appendingPathComponent("rotated.mp4")
        // Store the card turned a quarter clockwise, then tag the stream (a stream-copy remux
        // writes the display matrix) so that players, ffmpeg's autorotate included, show it upright.
        try VideoFixtures.make(stored, seconds: 6, cardFrom: 0, cardTo: 6, encoder: ["-c:v", "libx264", "-preset", "ultrafast"], filter: "transpose=1")
        try VideoFixtures.ffmpeg(["-i", stored.path, "-c", "copy", "-metadata:s:v:0", "rotate=90", url.path])
        let result = try await analyzer().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.info.rotation == 270)
        #expect(result.isSensitive, "the sideways card was not turned upright")
        #expect(result.flaggedFrame.map { $0.width > $0.height } == true)
        let unturned = try await analyzer().videoAnalysis(forFileAt: stored.path).hasSensitiveContent()
        #expect(!unturned.isSensitive, "a sideways card without rotation metadata must not match")
    }

    @Test("progress only grows and ends at 1.0")
    func progressGrows() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("p.mp4")
        try VideoFixtures.make(url, seconds: 10, encoder: ["-c:v", "libx264", "-preset", "ultrafast"])
        let handler = try analyzer().videoAnalysis(forFileAt: url.path)
        let seen = Locked<[VideoProgress]>([]), listening = Locked(false)
        let watcher = Task {
            listening.withLock { $0 = true }
            for await p in handler.progressUpdates { seen.withLock { $0.append(p) } }
        }
        // The stream keeps only the newest value for a reader that lags (bufferingNewest(1)): a
        // reader not yet waiting when the analysis ends (the pool busy with other tests) would see
        // the last one alone. So the analysis starts once the reader waits for its first value.
        while !listening.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(20))
        _ = try await handler.hasSensitiveContent()
        await watcher.value
        let updates = seen.withLock { $0 }
        #expect(updates.count >= 2)
        let fractions = updates.compactMap(\.fraction)
        #expect(fractions == fractions.sorted(), "progress went backwards: \(fractions)")
        #expect(fractions.last == 1.0)
        #expect(handler.progress.fraction == 1.0)
        #expect(updates.map(\.samples) == updates.map(\.samples).sorted())
    }

    /// What cancellation promises is counted in the analysis's own work, not in wall time: no
    /// sample is started after it; those under way may finish (each of the 2 decoders' frame
    /// being judged and the one being decoded, and the progress read before the cancel may lag
    /// by one: 3 were seen; the clip has 480 to judge). The time is
    /// bounded too, loosely: 0.1-0.3 s here on a quiet machine, 1.45 s was seen with six tests
    /// at once on 2 cores, and only a hang goes past 5 s.
    @Test("cancellation stops decoding: at most the samples under way are judged after it (4 of the clip's 480), and it ends within 5 s even under load")
    func cancellation() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("long.mp4")
        try VideoFixtures.make(url, seconds: 240, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50"], rate: 5)
        let handler = try analyzer(gap: 0.5).videoAnalysis(forFileAt: url.path)
        let task = Task { try await handler.hasSensitiveContent() }
        while handler.progress.samples < 2 { try await Task.sleep(for: .milliseconds(20)) }
        let asked = ContinuousClock.now
        let samplesAtCancel = handler.progress.samples
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled analysis finished normally")
        } catch let error as MediaError {
            #expect(error.code == .cancelled)
        }
        let took = ContinuousClock.now - asked
        let after = handler.progress.samples - samplesAtCancel
        #expect(after <= 4, "\(after) samples judged after the cancellation (at most the 2 decoders' under way)")
        #expect(took < .seconds(5), "cancellation took \(took)")
        #expect((handler.progress.fraction ?? 1) < 0.9)
    }

    @Test("a truncated video gives a partial-coverage verdict that says how much was covered")
    func truncated() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("whole.mp4")
        try VideoFixtures.make(url, seconds: 20, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-movflags", "+faststart"])
        let bytes = try Data(contentsOf: url)
        let cut = dir.appendingPathComponent("cut.mp4")
        try bytes.prefix(bytes.count / 2).write(to: cut)
        let result = try await analyzer().videoAnalysis(forFileAt: cut.path).hasSensitiveContent()
        let coverage = try #require(result.coverage)
        #expect(coverage > 0.2 && coverage < 0.8, "coverage \(coverage)")
        #expect(result.samples >= 2)
        // Without the index at the front, a cut MP4 cannot be opened at all: a clear error.
        let late = dir.appendingPathComponent("late.mp4")
        try VideoFixtures.make(late, seconds: 8, encoder: ["-c:v", "libx264", "-preset", "ultrafast"])
        let lateBytes = try Data(contentsOf: late)
        try lateBytes.prefix(lateBytes.count / 2).write(to: late)
        await #expect(throws: MediaError.self) { _ = try await analyzer().videoAnalysis(forFileAt: late.path).hasSensitiveContent() }
    }

    @Test("audio only: no video stream")
    func audioOnly() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("song.mp4")
        try VideoFixtures.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "aac", url.path])
        do {
            _ = try await analyzer().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
            Issue.record("audio-only file analysed as video")
        } catch let error as MediaError {
            #expect(error.code == .noVideoStream)
            #expect(error.description.contains(url.path))
        }
    }

    @Test("unknown duration and no index: still sampled, with no fraction to report")
    func unknownDuration() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("stream.ts")
        try VideoFixtures.make(url, seconds: 8, cardFrom: 5, cardTo: 7.5, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-f", "mpegts"])
        let result = try await analyzer().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.isSensitive)
        #expect(result.frameTime.map { $0 >= 4.9 && $0 <= 7.6 } == true)
        let mkv = dir.appendingPathComponent("live.mkv")
        try VideoFixtures.make(mkv, seconds: 6, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-f", "matroska", "-live", "1"])
        let live = try await analyzer().videoAnalysis(forFileAt: mkv.path).hasSensitiveContent()
        #expect(!live.isSensitive)
        #expect(live.samples >= 3)
    }

    @Test("absurd dimensions are refused before decoding")
    func hugeDimensions() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("wide.mp4")
        try VideoFixtures.make(url, seconds: 2, encoder: ["-c:v", "libx264", "-preset", "ultrafast"])
        do {
            _ = try await analyzer(limits: MediaLimits(maxDimension: 200)).videoAnalysis(forFileAt: url.path).hasSensitiveContent()
            Issue.record("over-limit video decoded")
        } catch let error as MediaError {
            #expect(error.code == .dimensionsTooLarge)
        }
    }

    @Test("a file that grows while it is analysed is reported, not judged")
    func growing() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("growing.mp4")
        // 180 samples at the 0.5-s gap: the change comes after the first, long before the last,
        // however starved this test's task is (with 40, a loaded run once finished the analysis
        // before the test could append). The analysis stops at the change, so the length costs
        // nothing (a 60-s clip made this the longest test of its suite, 19 s alone, when the
        // change was only found after the last sample).
        try VideoFixtures.make(url, seconds: 90, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50"], rate: 5)
        let handler = try analyzer(gap: 0.5).videoAnalysis(forFileAt: url.path)
        let task = Task { try await handler.hasSensitiveContent() }
        while handler.progress.samples < 1 { try await Task.sleep(for: .milliseconds(10)) }
        let append = try FileHandle(forWritingTo: url)
        try append.seekToEnd()
        try append.write(contentsOf: Data(repeating: 0, count: 4096))
        try append.close()
        let atChange = handler.progress.samples
        do {
            _ = try await task.value
            Issue.record("a file that changed during analysis was judged")
        } catch let error as MediaError {
            #expect(error.code == .changedDuringRead)
        }
        // Stopped at the change, not after the last of its 40 samples (each sample checks the
        // file before the models): at most those decoded ahead of the models (3) and a few more
        // before the decoder sees the failure come after it.
        #expect(handler.progress.samples <= atChange + 8, "\(atChange) samples at the change, \(handler.progress.samples) at the end")
    }

    @Test("an animated GIF goes through the video path")
    func animatedGIF() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("anim.gif")
        try VideoFixtures.make(url, seconds: 8, cardFrom: 4, cardTo: 6.5, encoder: ["-r", "5"])
        let report = try await analyzer().report(forFileAt: url.path)
        #expect(report.kind == .video)
        #expect(report.isSensitive, "\(String(describing: report.failure))")
        #expect(report.analysis?.frameTime.map { $0 >= 3.9 && $0 <= 6.6 } == true)
    }
}
