import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis
import Locking

/// The plan (which keyframes first, in which order), covered stretches, the near-identical
/// test, the picture lane, and on real videos: the early verdict, resuming, and skipping.
@Suite("Coarse to fine")
struct CoarseToFinePlanTests {
    @Test("keyframes closer than the gap are thinned; farther ones are all kept")
    func picks() {
        let everySecond = (0..<11).map(Double.init)
        #expect(VideoPlan(keyframes: everySecond, maxGap: 2).times == [0, 2, 4, 6, 8, 10])
        let longGOP = stride(from: 0.0, through: 600, by: 8.333).map { $0 }
        #expect(VideoPlan(keyframes: longGOP, maxGap: 2).picks == Array(longGOP.indices))
        // A scene cut 1 s after a regular keyframe: both kept (each is the next one after a pick
        // with nothing within the gap); of keyframes within the gap of a pick, the last is kept.
        #expect(VideoPlan(keyframes: [0, 8, 9, 16], maxGap: 2).times == [0, 8, 9, 16])
        #expect(VideoPlan(keyframes: [0, 0.5, 1.5, 2.5, 9], maxGap: 2).times == [0, 1.5, 2.5, 9])
    }

    @Test("the coarse order visits every pick once, spread over the file")
    func coarseOrder() {
        let plan = VideoPlan(keyframes: (0..<72).map { Double($0) * 8.33 }, maxGap: 2)
        let order = plan.coarseOrder
        #expect(order.sorted() == Array(0..<72))
        // The first eight visits are spread: no two within a sixteenth of the file.
        let firstEight = order.prefix(8).sorted()
        #expect(zip(firstEight, firstEight.dropFirst()).allSatisfy { $1 - $0 >= 72 / 16 }, "\(order.prefix(8))")
    }

    @Test("covered stretches merge, measure, and answer containment")
    func coveredRanges() {
        var covered = CoveredRanges([0...2, 4...6])
        #expect(covered.measure == 4)
        covered.insert(2...4)
        #expect(covered.ranges == [0...6])
        covered.insert(10...12)
        #expect(covered.covers(1...5) && !covered.covers(5...11))
        #expect(covered.contains(11) && !covered.contains(8))
        #expect(covered.fraction(of: 12) == 8.0 / 12)
        #expect(CoveredRanges(pairs: covered.pairs) == covered)
        #expect(CoveredRanges(pairs: [[3, 1], [.nan, 2], [1]]).isEmpty)
    }

    @Test("the largest gap of a resumed analysis counts what the earlier run covered as analysed: a covered stretch between two new samples is no gap (was: 10.24 s reported where 2 s was kept)")
    func resumedLargestGap() {
        // Keyframes every 8 s, 2-s gap: this run filled 8-16 (last sample 15.68) and 24-32; the
        // earlier run had covered 0-8 and 16-24, their keyframes judged.
        let samples = [9.92, 11.84, 13.76, 15.68, 25.92, 27.84, 29.76, 31.68]
        let resumed = CoveredRanges([0...8, 16...24])
        #expect(abs(VideoRun.largestGap(samples: samples, resumed: resumed, end: 31.96) - 1.92) < 1e-9)
        // Without the earlier stretches, the holes are gaps; and what the earlier run did not
        // cover still counts: from the start to a first sample, and from the last to the end.
        #expect(abs(VideoRun.largestGap(samples: samples, resumed: CoveredRanges(), end: 31.96) - 10.24) < 1e-9)
        #expect(abs(VideoRun.largestGap(samples: [5, 6], resumed: CoveredRanges([0...1]), end: nil) - 4) < 1e-9)
        #expect(abs(VideoRun.largestGap(samples: [1, 2], resumed: CoveredRanges(), end: 9) - 7) < 1e-9)
        #expect(VideoRun.largestGap(samples: [], resumed: CoveredRanges([0...10]), end: 9.96) == 0)
    }

    /// A photo-like frame: a smooth gradient with texture.
    static func scene(_ width: Int = 640, _ height: Int = 360, seed: Int = 0) -> RGBImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let p = (y * width + x) * 3
                let texture = ((x * 7 + y * 13 + seed) % 17) * 3
                pixels[p] = UInt8(min(255, 60 + x * 120 / width + texture))
                pixels[p + 1] = UInt8(min(255, 90 + y * 100 / height + texture / 2))
                pixels[p + 2] = UInt8(min(255, 140 - x * 60 / width + texture / 3))
            }
        }
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    static func painting(_ image: RGBImage, x: Int, y: Int, width: Int, height: Int, _ rgb: (UInt8, UInt8, UInt8)) -> RGBImage {
        var pixels = image.pixels
        for row in y..<min(image.height, y + height) {
            for col in x..<min(image.width, x + width) {
                let p = (row * image.width + col) * 3
                pixels[p] = rgb.0; pixels[p + 1] = rgb.1; pixels[p + 2] = rgb.2
            }
        }
        return RGBImage(width: image.width, height: image.height, pixels: pixels)
    }

    @Test("a repeated frame may skip the models; a changed one never does")
    func nearIdentical() throws {
        let base = Self.scene()
        let thumbnail = GreyThumbnail(base)
        #expect(GreyThumbnail(base).isPracticallyIdentical(to: thumbnail))
        // Compression noise: every pixel off by one level.
        let noisy = RGBImage(width: base.width, height: base.height, pixels: base.pixels.enumerated().map { $0.offset % 2 == 0 ? min(255, $0.element &+ 1) : $0.element })
        #expect(GreyThumbnail(noisy).isPracticallyIdentical(to: thumbnail))
        // Changes that must be analysed: the test card over a quarter of the frame, in every
        // corner; a skin-toned patch of one thumbnail cell (20x11 px); a whole frame a little
        // brighter; the next scene.
        let card = TestCard.render(width: 320, height: 180)
        for (x, y) in [(0, 0), (320, 0), (0, 180), (320, 180)] {
            var pixels = base.pixels
            for row in 0..<180 { for col in 0..<320 { for c in 0..<3 { pixels[((y + row) * 640 + x + col) * 3 + c] = card.pixels[(row * 320 + col) * 3 + c] } } }
            #expect(!GreyThumbnail(RGBImage(width: 640, height: 360, pixels: pixels)).isPracticallyIdentical(to: thumbnail), "card at \(x),\(y) skipped")
        }
        let patch = Self.painting(base, x: 300, y: 170, width: 20, height: 11, (224, 172, 150))
        #expect(!GreyThumbnail(patch).isPracticallyIdentical(to: thumbnail), "a one-cell change was skipped")
        let brighter = RGBImage(width: base.width, height: base.height, pixels: base.pixels.map { min(255, $0 &+ 6) })
        #expect(!GreyThumbnail(brighter).isPracticallyIdentical(to: thumbnail))
        var flipped = base.pixels
        for y in 0..<base.height {
            for x in 0..<base.width {
                for c in 0..<3 { flipped[(y * base.width + x) * 3 + c] = base.pixels[(y * base.width + base.width - 1 - x) * 3 + c] }
            }
        }
        let mirrored = RGBImage(width: base.width, height: base.height, pixels: flipped)
        #expect(!GreyThumbnail(mirrored).isPracticallyIdentical(to: thumbnail))
    }

    @Test("a picture's job goes ahead of video frames already waiting")
    func pictureLane() async throws {
        let pool = WorkerPool(threads: 1, name: "lanetest")
        let gate = DispatchSemaphore(value: 0)
        let order = Locked<[String]>([])
        pool.enqueue { gate.wait() }
        for i in 0..<3 { pool.enqueue(background: true) { order.withLock { $0.append("frame \(i)") } } }
        pool.enqueue { order.withLock { $0.append("picture") } }
        gate.signal()
        while order.withLock({ $0.count }) < 4 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(order.withLock { $0 } == ["picture", "frame 0", "frame 1", "frame 2"])
        pool.shutdown()
    }
}

/// The plan on real videos: which samples are taken, gaps, coverage, resuming, where the card is
/// found. The models' stand-in judges (the test card is found as always, every other frame is
/// clean, no model runs): the models cost about 50 ms a sample here, and these clips take hundreds
/// of samples (the late card and the resumed analysis: 11.5 s of CPU with them, 1.2 s without). The real models judge video frames beside it: the picture
/// beside two videos below, `ShortClipTests`' benign clips, the H.264 clip of `VideoAnalysisTests`,
/// the container, agent and D-Bus video tests.
@Suite("Coarse to fine, real videos (the models' stand-in, but for the picture beside two videos)", .serialized)
struct CoarseToFineVideoTests {
    static let analyzer = Result { try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2), videoOptions: VideoOptions(maxGap: 2),
                                                           modelsStandIn: true) }

    /// 120 s of moving test pattern (320x240, 5 frames a second), keyframes every 8 s and no scene
    /// cuts (so nothing but the plan finds the card), the card from `from` to `to`.
    static func clip(_ url: URL, cardFrom from: Double? = nil, to: Double? = nil, seconds: Int = 120) throws {
        try VideoFixtures.make(url, seconds: seconds, cardFrom: from, cardTo: to,
                               encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "40", "-keyint_min", "40", "-sc_threshold", "0"], rate: 5)
    }

    /// The whole scan of the clean 120-s clip with the default options, which two tests compare
    /// against: made once per process (the first test to ask starts it, the other awaits it).
    static let cleanScan = Task<VideoSensitivityAnalysis, any Error> {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clean = dir.appendingPathComponent("clean.mp4")
        try clip(clean)
        return try await analyzer.get().videoAnalysis(forFileAt: clean.path).hasSensitiveContent()
    }

    @Test("a card 10 s long late in the video is found within the gap of its start, long before a clean scan's samples are spent")
    func earlyVerdict() async throws {
        let analyzer = try Self.analyzer.get()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let flagged = dir.appendingPathComponent("late-card.mp4")
        try Self.clip(flagged, cardFrom: 85, to: 95)
        let found = try await analyzer.videoAnalysis(forFileAt: flagged.path).hasSensitiveContent()
        let whole = try await Self.cleanScan.value
        let time = try #require(found.frameTime)
        #expect(time >= 85 && time <= 87.1, "found at \(time)")
        #expect(whole.coverage == 1 && whole.largestGap <= 2 + 1e-6)
        // Keyframes first: 15 of them, then the search before the first flagged one.
        #expect(found.samples * 3 <= whole.samples, "\(found.samples) samples to the verdict, \(whole.samples) for a clean scan")
    }

    /// Cancels `task` once `handler` has covered `seconds` (or it ended: a failed wait then shows
    /// in the test). The watch runs on a thread of its own: a task on Swift's shared pool (2
    /// threads here, the whole suite beside it) was held off while the analysis, on threads of
    /// its own, ran to the end (seen in CI: all 120 s covered before the cancel).
    static func cancelWhenCovered(_ handler: VideoAnalysisHandler, _ seconds: Double, task: Task<VideoSensitivityAnalysis, any Error>) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let watch = Thread {
                let deadline = ContinuousClock.now + .seconds(60)
                while handler.progress.covered.measure < seconds && handler.progress.fraction != 1 && ContinuousClock.now < deadline {
                    usleep(2_000)
                }
                task.cancel()
                done.resume()
            }
            watch.start()
        }
    }

    @Test("an analysis given the stretches an interrupted one covered skips them and reaches the same verdict")
    func resumes() async throws {
        let analyzer = try Self.analyzer.get()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clean = dir.appendingPathComponent("clean.mp4")
        try Self.clip(clean, seconds: 120)
        // The first run, cancelled part-way: the stretches it covered, as its progress says.
        let first = analyzer.videoAnalysis(forFileAt: clean.path, options: VideoOptions(maxGap: 2, decoders: 1))
        let task = Task { try await first.hasSensitiveContent() }
        await Self.cancelWhenCovered(first, 40, task: task)
        _ = try? await task.value
        let covered = first.progress.covered
        #expect(covered.measure >= 40 && covered.measure < 120, "\(covered)")
        let resumed = try await analyzer.videoAnalysis(forFileAt: clean.path, options: VideoOptions(maxGap: 2, alreadyCovered: covered)).hasSensitiveContent()
        let whole = try await Self.cleanScan.value
        #expect(!resumed.isSensitive && resumed.coverage == 1)
        #expect(resumed.largestGap <= 2 + 1e-6)
        #expect(resumed.samples < whole.samples * 3 / 4, "resumed: \(resumed.samples) samples, from scratch: \(whole.samples)")
        // What was not covered is still analysed: the card after the covered part is found.
        let card = dir.appendingPathComponent("card.mp4")
        try Self.clip(card, cardFrom: 100, to: 104, seconds: 120)
        let found = try await analyzer.videoAnalysis(forFileAt: card.path, options: VideoOptions(maxGap: 2, alreadyCovered: CoveredRanges([0...64]))).hasSensitiveContent()
        #expect(found.isSensitive && found.frameTime.map { $0 >= 100 && $0 <= 102.1 } == true, "\(String(describing: found.frameTime))")
    }

    @Test("a resumed analysis keeps the promised gap across a stretch an earlier run covered between two it fills (was: 10.24 s)")
    func resumedAroundCoveredStretch() async throws {
        let analyzer = try Self.analyzer.get()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = dir.appendingPathComponent("clip.mp4")
        try VideoFixtures.make(clip, seconds: 32, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "200", "-keyint_min", "200", "-sc_threshold", "0"],
                               size: "160x120")
        // What an interrupted run (two decoders, or judging out of order under load) leaves:
        // 0-8 and 16-24 covered, 8-16 not.
        let options = VideoOptions(maxGap: 2, alreadyCovered: CoveredRanges([0...8, 16...24]), decoders: 1, denseShortClips: false)
        let resumed = try await analyzer.videoAnalysis(forFileAt: clip.path, options: options).hasSensitiveContent()
        #expect(!resumed.isSensitive && resumed.coverage == 1)
        #expect(resumed.largestGap <= 2 + 1e-6, "largest gap \(resumed.largestGap) s")
        #expect(resumed.samples <= 10, "only 8-16 and 24-32 are sampled: \(resumed.samples)")
    }

    @Test("a slideshow skips the models for repeated frames, never the card when it appears")
    func slideshow() async throws {
        let analyzer = try Self.analyzer.get()
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let still = dir.appendingPathComponent("still.png"), card = dir.appendingPathComponent("card.png")
        try Data(try PNGEncoder.encode(CoarseToFinePlanTests.scene(320, 240))).write(to: still)
        try Data(try PNGEncoder.encode(TestCard.render(width: 160, height: 120))).write(to: card)
        let url = dir.appendingPathComponent("slides.mp4")
        // One still picture for 60 s; the card over a quarter of it from 41 s to 44 s, between keyframes.
        // (5 frames a second, keyframes every 10 s: VideoFixtures.make says why.)
        try VideoFixtures.ffmpeg(["-loop", "1", "-framerate", "5", "-t", "60", "-i", still.path, "-i", card.path, "-filter_complex",
                                  "[0][1]overlay=x=160:y=120:enable='between(t,41,44)',format=yuv420p", "-c:v", "libx264", "-preset", "ultrafast",
                                  "-g", "50", "-keyint_min", "50", "-sc_threshold", "0", url.path])
        let result = try await analyzer.videoAnalysis(forFileAt: url.path, options: VideoOptions(maxGap: 2, allFlaggedRanges: true)).hasSensitiveContent()
        #expect(result.skippedSamples > result.samples / 2, "\(result.skippedSamples) of \(result.samples) skipped")
        #expect(result.isSensitive && result.flaggedRanges.count == 1, "\(result.flaggedRanges)")
        if let range = result.flaggedRanges.first { #expect(range.lowerBound >= 41 && range.lowerBound <= 43.1 && range.upperBound <= 44.1) }
        let unskipped = try await analyzer.videoAnalysis(forFileAt: url.path, options: VideoOptions(maxGap: 2, allFlaggedRanges: true, skipIdenticalFrames: false)).hasSensitiveContent()
        #expect(unskipped.samples == result.samples && unskipped.skippedSamples == 0)
        #expect(unskipped.flaggedRanges == result.flaggedRanges)
    }

    @Test("a picture is judged while two long videos are analysed, not after them (the real models, for the videos' frames too)")
    func pictureNotStarved() async throws {
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2), videoOptions: VideoOptions(maxGap: 2))
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let one = dir.appendingPathComponent("one.mp4"), two = dir.appendingPathComponent("two.mp4")
        try Self.clip(one, seconds: 300)
        try FileManager.default.copyItem(at: one, to: two)
        // A photo both models judge (the test card would be recognised without them).
        let picture = TestEnvironment.photos.appendingPathComponent("astronaut.png")
        // Videos take turns (half the workers decode them); their frames' inference shares the
        // workers with pictures.
        let first = analyzer.videoAnalysis(forFileAt: one.path), second = analyzer.videoAnalysis(forFileAt: two.path)
        let videos = Task {
            async let a = first.hasSensitiveContent()
            async let b = second.hasSensitiveContent()
            _ = try await (a, b)
        }
        defer { videos.cancel() }
        let deadline = ContinuousClock.now + .seconds(60)
        while first.progress.samples + second.progress.samples < 10 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let asked = ContinuousClock.now
        let report = await analyzer.report(forFileAt: picture.path)
        let took = ContinuousClock.now - asked
        #expect(report.failure == nil && report.analysis?.nsfwScore != nil)
        // The videos were still being analysed when the picture's verdict came.
        let fractions = [first.progress.fraction ?? 0, second.progress.fraction ?? 0]
        #expect(fractions.contains { $0 < 1 } && fractions.contains { $0 > 0 }, "picture judged in \(took), videos at \(fractions)")
        print("picture judged in \(took) beside two videos (at \(fractions))")
        videos.cancel()
    }
}
