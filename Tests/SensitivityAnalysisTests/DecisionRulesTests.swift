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

    @Test("quiet_nsfw: a lone part of a greyscale picture open_nsfw finds nothing in is let through without a re-check; in colour the re-check decides")
    func quietNSFW() {
        // Adwaita's camera-web icon: grey, BUTTOCKS_EXPOSED 0.81 confirmed by the re-check, open_nsfw 0.0013.
        let icon = Detection(label: "BUTTOCKS_EXPOSED", score: 0.81, box: Box(x: 71, y: 54, width: 388, height: 396))
        let grey = ColourEvidence(spread: 2, tint: 1) { _ in 0 }
        for mode in AnalysisMode.allCases {
            let recheck = Recheck([0.80, 0.76])
            let policy = SensitivityPolicy.defaults(for: mode)
            let judgement = policy.judge(detections: [icon], nsfw: 0.0013, longSide: 512, shortSide: 512, colour: grey, recheck: recheck.callAsFunction)
            #expect(judgement.reasons.isEmpty && recheck.calls == 0, "\(mode)")
            #expect(judgement.rulings.map(\.rule) == ["quiet_nsfw"] && judgement.rulings.first?.outcome == .letThrough)
            #expect(judgement.rulings.first?.summary.contains("open_nsfw finds nothing suggestive in the picture (0.0013 < 0.0100), which the skin rule cannot judge (not in colour)") == true)
            // Without the rule the re-check confirms it: the rule is what lets it through.
            var off = policy
            off.rules.quietNSFW = nil
            #expect(off.judge(detections: [icon], nsfw: 0.0013, colour: grey, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.81"])
            // open_nsfw at the level or more: the re-check decides.
            #expect(policy.judge(detections: [icon], nsfw: 0.01, colour: grey, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.81"])
            // Beside a face, or of lone_part (0.9) or more, it stands whatever open_nsfw says.
            #expect(policy.judge(detections: [icon, Self.face], nsfw: 0.0013, colour: grey, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.81"])
            let high = Detection(label: "BUTTOCKS_EXPOSED", score: 0.91, box: icon.box)
            #expect(policy.judge(detections: [high], nsfw: 0.0013, colour: grey, recheck: recheck.callAsFunction).reasons == ["BUTTOCKS_EXPOSED 0.91"])
            // In colour with a skin-coloured box the skin rule has judged it: the re-check decides, not open_nsfw.
            let skin = ColourEvidence(spread: 30) { _ in 0.6 }
            let coloured = policy.judge(detections: [icon], nsfw: 0.0013, colour: skin, recheck: recheck.callAsFunction)
            #expect(coloured.reasons == ["BUTTOCKS_EXPOSED 0.81"] && coloured.rulings.map(\.rule) == ["recheck"])
        }
    }

    /// The yam stamp of Tux Paint (100x61, in colour, 10% skin): MALE_GENITALIA_EXPOSED 0.71 over all of it, open_nsfw 0.98.
    static let yam = Detection(label: "MALE_GENITALIA_EXPOSED", score: 0.71, box: Box(x: 0, y: 0, width: 100, height: 61))
    static let yamColour = ColourEvidence(spread: 12, tint: 9, skinShare: 0.10) { _ in 0.10 }

    @Test("upscaled_nsfw (adult mode): open_nsfw on a small colour picture with little skin and no person is neither a verdict nor evidence")
    func upscaledNSFW() {
        let policy = SensitivityPolicy.defaults(for: .adult)
        let recheck = Recheck([0.7, 0.7])
        let judgement = policy.judge(detections: [Self.yam], nsfw: 0.98, longSide: 100, shortSide: 61, colour: Self.yamColour, recheck: recheck.callAsFunction)
        #expect(judgement.reasons.isEmpty && recheck.calls == 0)
        #expect(judgement.rulings.map(\.rule) == ["upscaled_nsfw", "skin"])
        let ruling = judgement.rulings.first
        #expect(ruling?.label == "open_nsfw" && ruling?.score == 0.98 && ruling?.outcome == .letThrough && ruling?.skinFraction == 0.10)
        #expect(ruling?.summary.hasPrefix("open_nsfw 0.98 let through (upscaled_nsfw: a picture 61 px on its short side (under 128") == true)
        // Without the rule open_nsfw flags it and vouches for the part.
        var off = policy
        off.rules.upscaledSide = nil
        #expect(off.judge(detections: [Self.yam], nsfw: 0.98, longSide: 100, shortSide: 61, colour: Self.yamColour, recheck: recheck.callAsFunction).reasons
                == ["MALE_GENITALIA_EXPOSED 0.71", "open_nsfw 0.98"])
        // open_nsfw alone (no NudeNet part to judge) on such a picture still flags it.
        #expect(policy.judge(detections: [], nsfw: 0.98, longSide: 100, shortSide: 61, colour: Self.yamColour).reasons == ["open_nsfw 0.98"])
        // The yellow pepper (65x70): BUTTOCKS_EXPOSED 0.51 with open_nsfw 0.52 becomes a lone part of a tiny picture.
        let pepper = Detection(label: "BUTTOCKS_EXPOSED", score: 0.51, box: Box(x: 2, y: 16, width: 59, height: 48))
        let pepperColour = ColourEvidence(spread: 34, tint: 61, skinShare: 0.07) { _ in 0.04 }
        let p = policy.judge(detections: [pepper], nsfw: 0.52, longSide: 70, shortSide: 65, colour: pepperColour, recheck: recheck.callAsFunction)
        #expect(p.reasons.isEmpty && p.rulings.map(\.rule) == ["upscaled_nsfw", "tiny"])
        // Child mode keeps open_nsfw's verdict on small pictures by default.
        #expect(SensitivityPolicy.defaults(for: .child).rules.upscaledSide == nil)
        #expect(SensitivityPolicy.defaults(for: .child).judge(detections: [Self.yam], nsfw: 0.98, longSide: 100, shortSide: 61, colour: Self.yamColour,
                                                               recheck: recheck.callAsFunction).reasons == ["MALE_GENITALIA_EXPOSED 0.71", "open_nsfw 0.98"])
    }

    @Test("upscaled_nsfw never applies beside a person, to a part of 0.8 or more or with a skin box, to greyscale, skin-rich or larger pictures, or to the test card")
    func upscaledNSFWLimits() {
        let policy = SensitivityPolicy.defaults(for: .adult)
        let both = ["MALE_GENITALIA_EXPOSED 0.71", "open_nsfw 0.98"]
        func judge(_ detections: [Detection], short: Int = 61, colour: ColourEvidence = Self.yamColour) -> Judgement {
            policy.judge(detections: detections, nsfw: 0.98, longSide: 100, shortSide: short, colour: colour) { _ in [0, 0] }
        }
        let face = Detection(label: "FACE_FEMALE", score: 0.35, box: Box(x: 80, y: 0, width: 20, height: 20))
        #expect(judge([Self.yam, face]).reasons == both)
        let high = Detection(label: "MALE_GENITALIA_EXPOSED", score: 0.8, box: Self.yam.box)
        #expect(judge([high]).reasons == ["MALE_GENITALIA_EXPOSED 0.80", "open_nsfw 0.98"])
        #expect(judge([Self.yam], colour: ColourEvidence(spread: 3, skinShare: 0) { _ in 0 }).reasons == both)
        #expect(judge([Self.yam], colour: ColourEvidence(spread: 12, tint: 9, skinShare: 0.2) { _ in 0.1 }).reasons == both)
        #expect(judge([Self.yam], short: 128).reasons == both)
        // What NudeNet points at is skin (a real part in a small thumbnail): open_nsfw stays.
        #expect(judge([Self.yam], colour: ColourEvidence(spread: 12, tint: 9, skinShare: 0.1) { _ in 0.35 }).reasons == both)
        #expect(policy.judge(detections: [Self.yam], nsfw: 0.98, longSide: 100, shortSide: 61, colour: nil) { _ in [0, 0] }.reasons == both)
        let card = Detection(label: TestCard.label, score: 1, box: Self.yam.box)
        #expect(judge([card]).reasons == ["TEST_CARD 1.00", "open_nsfw 0.98"])
        // An open_nsfw score that neither flags the picture nor vouches for a counted part is left alone (no ruling).
        #expect(policy.judge(detections: [], nsfw: 0.5, longSide: 100, shortSide: 61, colour: Self.yamColour).rulings.isEmpty)
    }

    @Test("colour evidence: the skin share of the whole picture")
    func skinShare() {
        let picture = RGBImage(width: 40, height: 20, pixels: (0..<(40 * 20)).flatMap { i -> [UInt8] in i % 40 < 10 ? [224, 172, 150] : [40, 80, 200] })
        #expect(abs(ColourEvidence(picture, originalWidth: 40, originalHeight: 20).skinShare - 0.25) < 0.01)
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
        // The grey full moon in child mode: let through by quiet_nsfw, named with its raw scores.
        let moon = Detection(label: "BUTTOCKS_EXPOSED", score: 0.46, box: Box(x: 10, y: 10, width: 100, height: 100))
        let quiet = SensitivityPolicy.defaults(for: .child).judge(detections: [moon], nsfw: 0.0039, longSide: 128, shortSide: 128,
                                                                   colour: ColourEvidence(spread: 1) { _ in 0 }) { _ in [0.51, 0.41] }
        analysis.rulings = quiet.rulings
        #expect(quiet.reasons.isEmpty)
        #expect(analysis.cleanDetail.hasPrefix("not sensitive; BUTTOCKS_EXPOSED 0.46 let through (quiet_nsfw: no face, body or suggestive picture around it"))
        #expect(analysis.cleanDetail.hasSuffix("open_nsfw finds nothing suggestive in the picture (0.0039 < 0.0100), which the skin rule cannot judge (not in colour))"))
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
