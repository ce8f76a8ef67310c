import Foundation
import MediaDecoding
import Testing
@testable import SensitivityAnalysis

/// The decision rules of issue 28 on hand-made detection sets: a lone borderline body part
/// without a person around it is let through unless the re-check confirms it; a part beside a
/// face, a high one, one in a suggestive picture and the test card always stand.
@Suite("Decision rules over the models' raw output")
struct DecisionRulesTests {
    static let whole = Box(x: 0, y: 0, width: 100, height: 100)
    static let lone = Detection(label: "BUTTOCKS_EXPOSED", score: 0.55, box: whole)
    static let face = Detection(label: "FACE_FEMALE", score: 0.7, box: Box(x: 200, y: 0, width: 40, height: 40))

    /// A re-check that answers `scores` and counts its calls.
    final class Recheck: @unchecked Sendable {
        let scores: [Double]
        var calls = 0
        init(_ scores: [Double]) { self.scores = scores }
        func callAsFunction(_ part: Detection) -> [Double] { calls += 1; return scores }
    }

    @Test("a lone low part with no person evidence is let through when the re-check does not confirm it", arguments: AnalysisMode.allCases)
    func loneLowLetThrough(mode: AnalysisMode) {
        let policy = SensitivityPolicy.defaults(for: mode)
        let recheck = Recheck([0.3, 0.58])
        let judgement = policy.judge(detections: [Self.lone], nsfw: 0.05, recheck: recheck.callAsFunction)
        #expect(judgement.reasons.isEmpty)
        #expect(recheck.calls == 1)
        let ruling = try? #require(judgement.rulings.first)
        #expect(ruling?.rule == "recheck" && ruling?.outcome == .letThrough && ruling?.score == 0.55 && ruling?.recheckScores == [0.3, 0.58])
        // Without the rules the thresholds alone flag it: the rule is what lets it through.
        var off = policy
        off.rules = .off
        #expect(off.judge(detections: [Self.lone], nsfw: 0.05, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.55"])
        #expect(policy.reasons(detections: [Self.lone], nsfw: 0.05) == ["BUTTOCKS_EXPOSED 0.55"])
    }

    @Test("the same part beside a face stands, without a re-check")
    func besideAFace() {
        let recheck = Recheck([0, 0])
        let judgement = SensitivityPolicy.defaults(for: .adult).judge(detections: [Self.lone, Self.face], nsfw: 0.05, recheck: recheck.callAsFunction)
        #expect(judgement.reasons == ["BUTTOCKS_EXPOSED 0.55"])
        #expect(judgement.rulings.isEmpty && recheck.calls == 0)
    }

    @Test("a face on the part itself (the same region) is not a person around it")
    func faceOnThePartIsNotEvidence() {
        let onIt = Detection(label: "FACE_MALE", score: 0.7, box: Box(x: 5, y: 5, width: 90, height: 90))
        let judgement = SensitivityPolicy.defaults(for: .child).judge(detections: [Self.lone, onIt], nsfw: 0.05) { _ in [0, 0] }
        #expect(judgement.reasons.isEmpty)
    }

    @Test("a part of 0.8 or more beside a person, and a lone one of lone_part (0.9) or more, stand and are never re-checked")
    func highStands() {
        let recheck = Recheck([0, 0])
        let grey = ColourEvidence(spread: 30) { _ in 0 }
        for score in [0.8, 0.93] {
            let high = Detection(label: "FEMALE_GENITALIA_EXPOSED", score: score, box: Self.whole)
            for mode in AnalysisMode.allCases {
                let policy = SensitivityPolicy.defaults(for: mode)
                let reason = ["FEMALE_GENITALIA_EXPOSED \(SensitivityPolicy.format(score))"]
                #expect(policy.judge(detections: [high, Self.face], nsfw: 0.01, colour: grey, recheck: recheck.callAsFunction).reasons == reason)
                if score >= 0.9 {
                    #expect(policy.judge(detections: [high], nsfw: 0.01, colour: grey, recheck: recheck.callAsFunction).reasons == reason)
                }
            }
        }
        #expect(recheck.calls == 0)
    }

    @Test("skin: a lone part with little skin in its box, in a colour picture, is let through without a re-check")
    func skinLetsThrough() {
        let recheck = Recheck([0.9, 0.9])
        let colourful = ColourEvidence(spread: 40) { _ in 0.05 }
        let judgement = SensitivityPolicy.defaults(for: .child).judge(detections: [Self.lone], nsfw: 0.01, colour: colourful, recheck: recheck.callAsFunction)
        #expect(judgement.reasons.isEmpty && recheck.calls == 0)
        #expect(judgement.rulings.map(\.rule) == ["skin"] && judgement.rulings.first?.skinFraction == 0.05)
        // Enough skin: the re-check decides (here it confirms).
        let skin = ColourEvidence(spread: 40) { _ in 0.6 }
        #expect(SensitivityPolicy.defaults(for: .child).judge(detections: [Self.lone], nsfw: 0.01, colour: skin, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.55"])
        // Beside a face the skin rule does not apply either.
        #expect(SensitivityPolicy.defaults(for: .child).judge(detections: [Self.lone, Self.face], nsfw: 0.01, colour: colourful).reasons == ["BUTTOCKS_EXPOSED 0.55"])
    }

    @Test("size: in a picture under tiny_side a lone part is let through without a re-check; beside a face, or 0.9 and more, it stands")
    func tinyPicture() {
        let recheck = Recheck([0.9, 0.9])
        let policy = SensitivityPolicy.defaults(for: .child)
        let tiny = policy.judge(detections: [Self.lone], nsfw: 0.01, longSide: 64, recheck: recheck.callAsFunction)
        #expect(tiny.reasons.isEmpty && tiny.rulings.map(\.rule) == ["tiny"] && recheck.calls == 0)
        #expect(policy.judge(detections: [Self.lone], nsfw: 0.01, longSide: 100, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.55"])
        #expect(policy.judge(detections: [Self.lone, Self.face], nsfw: 0.01, longSide: 64).reasons == ["BUTTOCKS_EXPOSED 0.55"])
        #expect(policy.judge(detections: [Self.lone], nsfw: 0.5, longSide: 64).reasons == ["BUTTOCKS_EXPOSED 0.55", ])
        let high = Detection(label: "BUTTOCKS_EXPOSED", score: 0.92, box: Self.whole)
        #expect(policy.judge(detections: [high], nsfw: 0.01, longSide: 64).reasons == ["BUTTOCKS_EXPOSED 0.92"])
    }

    @Test("skin: greyscale and strongly tinted pictures are exempt (the re-check judges them)")
    func greyscaleExempt() {
        let recheck = Recheck([0.6, 0.6])
        let grey = ColourEvidence(spread: 2) { _ in 0 }
        let tinted = ColourEvidence(spread: 15, tint: 60) { _ in 0 }
        #expect(SensitivityPolicy.defaults(for: .adult).judge(detections: [Self.lone], nsfw: 0.01, colour: tinted, recheck: recheck.callAsFunction).reasons
                == ["BUTTOCKS_EXPOSED 0.55"])
        let judgement = SensitivityPolicy.defaults(for: .adult).judge(detections: [Self.lone], nsfw: 0.01, colour: grey, recheck: recheck.callAsFunction)
        #expect(judgement.reasons == ["BUTTOCKS_EXPOSED 0.55"] && recheck.calls == 2)
        #expect(judgement.rulings.map(\.rule) == ["recheck"])
    }

    @Test("colour evidence: greyscale and one tint have no spread; skin is counted in the box, for light and dark skin")
    func colourEvidence() {
        let greyPixels = RGBImage(width: 40, height: 40, pixels: (0..<(40 * 40)).flatMap { i -> [UInt8] in let v = UInt8(i % 251); return [v, v, v] })
        #expect(ColourEvidence(greyPixels, originalWidth: 40, originalHeight: 40).spread < 0.01)
        #expect(!ColourEvidence(greyPixels, originalWidth: 40, originalHeight: 40).inColour)
        let sepia = RGBImage(width: 40, height: 40, pixels: (0..<(40 * 40)).flatMap { i -> [UInt8] in
            let v = Double(i % 200) + 30; return [UInt8(v), UInt8(v * 0.8), UInt8(v * 0.6)] })
        #expect(!ColourEvidence(sepia, originalWidth: 40, originalHeight: 40).inColour)
        // The same tint on a red-lit scene: strong, all along one direction.
        let red = RGBImage(width: 40, height: 40, pixels: (0..<(40 * 40)).flatMap { i -> [UInt8] in
            let v = Double(i % 200) + 30; return [UInt8(v), UInt8(v * 0.3), UInt8(v * 0.25)] })
        #expect(!ColourEvidence(red, originalWidth: 40, originalHeight: 40).inColour)
        // Left half light skin, right half blue; then dark skin.
        for skin: [UInt8] in [[224, 172, 150], [90, 56, 37]] {
            let picture = RGBImage(width: 40, height: 20, pixels: (0..<(40 * 20)).flatMap { i -> [UInt8] in i % 40 < 20 ? skin : [40, 80, 200] })
            let evidence = ColourEvidence(picture, originalWidth: 80, originalHeight: 40)  // analysed at half size
            #expect(evidence.inColour)
            #expect(evidence.skinFraction(in: Box(x: 0, y: 0, width: 40, height: 40)) == 1, "\(skin)")
            #expect(evidence.skinFraction(in: Box(x: 40, y: 0, width: 40, height: 40)) == 0)
            #expect(abs(evidence.skinFraction(in: Box(x: 0, y: 0, width: 80, height: 40)) - 0.5) < 0.01)
        }
    }

    @Test("a suggestive picture (open_nsfw at person_nsfw or more) is human evidence")
    func nsfwIsEvidence() {
        let judgement = SensitivityPolicy.defaults(for: .adult).judge(detections: [Self.lone], nsfw: 0.3) { _ in [0, 0] }
        #expect(judgement.reasons == ["BUTTOCKS_EXPOSED 0.55"])
    }

    @Test("a lone part the re-check confirms on both copies stands, recorded as kept")
    func confirmedStands() {
        let judgement = SensitivityPolicy.defaults(for: .adult).judge(detections: [Self.lone], nsfw: 0.01) { _ in [0.52, 0.61] }
        #expect(judgement.reasons == ["BUTTOCKS_EXPOSED 0.55"])
        #expect(judgement.rulings.map(\.outcome) == [.kept])
    }

    @Test("without the re-check a lone part needs lone_part (0.9)")
    func withoutRecheck() {
        var policy = SensitivityPolicy.defaults(for: .child)
        policy.rules.recheck = false
        let judgement = policy.judge(detections: [Self.lone], nsfw: 0.01) { _ in [1, 1] }
        #expect(judgement.reasons.isEmpty)
        #expect(judgement.rulings.map(\.rule) == ["lone_part"])
        #expect(judgement.rulings.first?.summary.hasPrefix("BUTTOCKS_EXPOSED 0.55 let through (lone_part:") == true)
    }

    @Test("the test card stands whatever the rules")
    func testCardUnaffected() {
        let card = Detection(label: TestCard.label, score: 1, box: Self.whole)
        let judgement = SensitivityPolicy.defaults(for: .adult).judge(detections: [card], nsfw: nil) { _ in [0, 0] }
        #expect(judgement.reasons == ["TEST_CARD 1.00"] && judgement.rulings.isEmpty)
    }

    @Test("the rendered test card is flagged by the analyzer under the default rules, with no ruling")
    func renderedTestCard() async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("card.png").path
        try Data(PNGEncoder.encode(TestCard.render(width: 640, height: 480))).write(to: URL(fileURLWithPath: path))
        let analysis = try await TestEnvironment.sharedAnalyzer().analyzeImage(at: path)
        #expect(analysis.isSensitive && analysis.rulings == nil)
    }

    @Test("the history's words for a clean verdict name what was let through, with its raw score and the rule")
    func historyDetail() throws {
        let judgement = SensitivityPolicy.defaults(for: .child).judge(detections: [Self.lone], nsfw: 0.01, longSide: 64)
        var analysis = SensitivityAnalysis(path: "/x.png", kind: .image, type: .png, isSensitive: false, detections: [Self.lone], nsfwScore: 0.01,
                                           reasons: judgement.reasons, mode: .child, width: 64, height: 60,
                                           identity: FileIdentity(device: 1, inode: 2, size: 3, modificationNanoseconds: 4), elapsedMilliseconds: 1)
        #expect(analysis.cleanDetail == "not sensitive")
        analysis.rulings = judgement.rulings
        #expect(analysis.cleanDetail.hasPrefix("not sensitive; BUTTOCKS_EXPOSED 0.55 let through (tiny: no face, body or suggestive picture around it"))
        #expect(analysis.detections == [Self.lone])
    }

    @Test("the mirrored and re-framed copies hold the picture where the re-check looks for it")
    func copies() {
        let image = RGBImage(width: 3, height: 2, pixels: [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6])
        #expect(image.mirrored().pixels == [3, 3, 3, 2, 2, 2, 1, 1, 1, 6, 6, 6, 5, 5, 5, 4, 4, 4])
        let framed = image.framed(margin: 1, grey: 9)
        #expect(framed.width == 5 && framed.height == 4)
        #expect(framed.cropped(x: 1, y: 1, width: 3, height: 2) == image)
        #expect(framed.pixels.prefix(15).allSatisfy { $0 == 9 })
    }
}
