import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// Short clips sampled densely (issue 27): a clip under a minute is sampled at least every
/// 0.25 s, so a scene of 0.5 s anywhere in it is flagged, at its time; a benign clip is not.
@Suite("Short clips")
struct ShortClipTests {
    static let encoder = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-pix_fmt", "yuv420p"]

    /// A `seconds`-long 320x240 clip over `background` (moving `testsrc2`, or still `smptebars`),
    /// with the card over a quarter of the frame (160x120, at `corner`) from `cardFrom` for 0.5 s.
    /// `cached: false` for a card at a random time (``FFmpegTool/run(_:cached:)``).
    static func clip(_ url: URL, seconds: Int, background: String = "testsrc2", cardFrom: Double?, corner: (Int, Int) = (80, 60),
                     cached: Bool = true) throws {
        let card = url.deletingLastPathComponent().appendingPathComponent("card-160x120.png")
        if !FileManager.default.fileExists(atPath: card.path) {
            try Data(try PNGEncoder.encode(TestCard.render(width: 160, height: 120))).write(to: card)
        }
        let graph = cardFrom.map { String(format: "[0][1]overlay=x=%d:y=%d:enable='between(t,%.2f,%.2f)'", corner.0, corner.1, $0, $0 + 0.5) } ?? "[0]null"
        try FFmpegTool.run(["-f", "lavfi", "-i", "\(background)=s=320x240:r=25:d=\(seconds)", "-i", card.path,
                            "-filter_complex", graph] + encoder + [url.path], cached: cached)
    }

    /// A moving picture (every sample judged by the models) for the 3- and 10-s clips; a still
    /// one for the 45-s clip, where the skip of practically identical frames is at work and keeps
    /// the test short (sampling is never skipped: every gap is still checked).
    static func background(_ seconds: Int) -> String { seconds < 30 ? "testsrc2" : "smptebars" }

    static let analyzer = Result { try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2),
                                                           videoOptions: VideoOptions(maxGap: 2)) }
    /// The models' stand-in (the test card found as always, every other frame clean, no model
    /// run) for the brief card's clips: what they test is the plan, which sample lands on the
    /// card. The benign clips below are judged by the real models.
    static let standIn = Result { try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2),
                                                          videoOptions: VideoOptions(maxGap: 2), modelsStandIn: true) }

    @Test("the card shown for 0.5 s at a random time is flagged within its interval (the models' stand-in)", arguments: [3, 10, 45])
    func briefCard(seconds: Int) async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A random start on the frame grid (25 fps), so the card's place differs run to run
        // (made afresh each time: the fixture cache would keep every one, never asked for again).
        let frames = Int.random(in: 2...(seconds * 25 - 16))
        let start = Double(frames) / 25
        let url = dir.appendingPathComponent("brief.mp4")
        try Self.clip(url, seconds: seconds, background: Self.background(seconds), cardFrom: start,
                      corner: ([0, 160].randomElement()!, [0, 120].randomElement()!), cached: false)
        let result = try await Self.standIn.get().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.samplingRule == .shortClip && result.plannedGap == 0.25)
        #expect(result.isSensitive, "\(seconds) s: the card at \(start) s for 0.5 s was missed (\(result.samples) samples, \(result.skippedSamples) skipped, largest gap \(result.largestGap))")
        let time = try #require(result.frameTime)
        #expect(time >= start - 0.001 && time <= start + 0.5 + 0.041, "\(seconds) s: card at \(start)...\(start + 0.5) flagged at \(time)")
        #expect(result.reasons == ["TEST_CARD 1.00"])
    }

    /// The real models judge the 3-s clip (every sample of a moving picture) and the 45-s one (a
    /// still picture, most samples skipped); the stand-in the 10-s moving clip, where what is
    /// checked is the plan (its 48 samples by the models cost about 2.5 s of the suite's CPU,
    /// judging again the same moving pattern as the 3-s clip).
    @Test("a benign clip is not flagged, and every gap is within 0.25 s (the real models for 3 and 45 s, their stand-in for 10 s)", arguments: [3, 10, 45])
    func benign(seconds: Int) async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plain.mp4")
        try Self.clip(url, seconds: seconds, background: Self.background(seconds), cardFrom: nil)
        let analyzer = seconds == 10 ? Self.standIn : Self.analyzer
        let result = try await analyzer.get().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(!result.isSensitive)
        #expect(result.coverage == 1)
        #expect(result.largestGap <= 0.25 + 1e-6, "\(seconds) s: largest gap \(result.largestGap)")
        #expect(result.samples >= seconds * 4, "\(seconds) s: \(result.samples) samples")
        // No denser than the gap needs: each sample the latest frame within 0.25 s of the one
        // before, so at most one per 0.21 s (the gap less a frame), besides the keyframes (every
        // 2 s, analysed first) and the ends. Aimed a margin short of the gap, as before, the
        // clips took 18, 60 and 270 samples.
        let most = Double(seconds) / (0.25 - 1.0 / 25) + Double(seconds) / 2 + 2
        #expect(Double(result.samples) <= most, "\(seconds) s: \(result.samples) samples, at most \(Int(most)) needed")
    }

    @Test("over a still picture, where most samples skip the models, the brief card is still flagged")
    func stillBackground() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("still.mp4")
        let start = Double(Int.random(in: 2...(10 * 25 - 16))) / 25
        try Self.clip(url, seconds: 10, background: "smptebars", cardFrom: start, cached: false)
        let result = try await Self.analyzer.get().videoAnalysis(forFileAt: url.path).hasSensitiveContent()
        #expect(result.isSensitive, "the card at \(start) s over a still picture was missed (\(result.samples) samples, \(result.skippedSamples) skipped)")
        let time = try #require(result.frameTime)
        #expect(time >= start - 0.001 && time <= start + 0.5 + 0.041, "card at \(start) flagged at \(time)")
        let plain = dir.appendingPathComponent("still-plain.mp4")
        try Self.clip(plain, seconds: 10, background: "smptebars", cardFrom: nil)
        let clean = try await Self.analyzer.get().videoAnalysis(forFileAt: plain.path).hasSensitiveContent()
        #expect(!clean.isSensitive)
        #expect(clean.skippedSamples > clean.samples / 2, "the still clip's samples were not skipped: \(clean.skippedSamples) of \(clean.samples)")
    }

    @Test("the rule: animations every 0.1 s, under a minute every 0.25 s, longer every max_gap, never coarser than max_gap")
    func rule() {
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: 3, maxGap: 2) == (.shortClip, 0.25))
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: 59.9, maxGap: 2) == (.shortClip, 0.25))
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: 60, maxGap: 2) == (.standard, 2))
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: 3600, maxGap: 2) == (.standard, 2))
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: nil, maxGap: 2) == (.standard, 2))
        #expect(VideoAnalysisHandler.sampling(animation: false, duration: 30, maxGap: 0.2) == (.shortClip, 0.2))
        #expect(VideoAnalysisHandler.sampling(animation: true, duration: 5, maxGap: 2) == (.animation, 0.1))
    }
}
