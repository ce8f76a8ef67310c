/// The decision rules applied to one picture's raw output (``DecisionRules``).
extension SensitivityPolicy {
    /// Labels that are a body part of their own: the ones a policy can count, which need a body
    /// around them when they score low (the covered intimate labels of child mode too).
    static let partLabels: Set<String> = [
        "FEMALE_GENITALIA_EXPOSED", "MALE_GENITALIA_EXPOSED", "ANUS_EXPOSED", "FEMALE_BREAST_EXPOSED", "BUTTOCKS_EXPOSED",
        "FEMALE_GENITALIA_COVERED", "ANUS_COVERED",
    ]

    /// Two boxes overlapping more than this are the same region (a part and its covered twin).
    static let sameRegionIoU = 0.5
    /// A re-check copy's detection of the same label overlapping the mapped box at least this much is the same part.
    static let recheckIoU = 0.2

    /// Judges a picture's raw output: the thresholds, then the decision rules.
    ///
    /// `recheck` judges a detection again on the mirrored and the re-framed copy of the picture
    /// and returns the best score of the same label over the same region in each (0 where there
    /// is none); it is called only for a lone part below ``DecisionRules/lonePartBelow``.
    /// `colour` gives the skin rules their statistics (nil: they do not apply);
    /// `longSide` and `shortSide` are the picture's sides in pixels, for the size rules (nil: unknown).
    public func judge(detections: [Detection], nsfw rawNSFW: Double?, longSide: Int? = nil, shortSide: Int? = nil,
                      colour: ColourEvidence? = nil, recheck: ((Detection) -> [Double])? = nil) -> Judgement {
        var counted: [Detection] = []
        var rulings: [Ruling] = []
        // open_nsfw on a small picture with no person and little skin: neither a verdict nor evidence.
        var nsfw = rawNSFW
        if let ruling = upscaledNSFW(detections: detections, nsfw: rawNSFW, longSide: longSide, shortSide: shortSide, colour: colour) {
            rulings.append(ruling)
            nsfw = nil
        }
        let nsfwWords = nsfw == nil && rawNSFW != nil ? "open_nsfw \(Self.format(rawNSFW ?? 0)) set aside by upscaled_nsfw"
            : "open_nsfw \(nsfw.map(Self.format) ?? "-") < \(Self.format(rules.personNSFW))"
        for d in detections {
            if d.label == TestCard.label { counted.append(d); continue }
            guard let threshold = labelThresholds[d.label], d.score >= threshold else { continue }
            guard let below = rules.lonePartBelow, d.score < below, Self.partLabels.contains(d.label),
                  personEvidence(besides: d, in: detections, nsfw: nsfw) == nil else {
                counted.append(d)
                continue
            }
            let lone = "no face, body or suggestive picture around it (nothing else \(Self.format(rules.personEvidence))+, \(nsfwWords))"
            if let tiny = rules.tinySide, let longSide, longSide < tiny {
                rulings.append(Ruling(rule: "tiny", outcome: .letThrough, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                      detail: "\(lone); the picture is \(longSide) px on its long side (under \(tiny)): a lone part needs \(Self.format(below))"))
                continue
            }
            if let minimum = rules.skinMinimum, let colour, colour.inColour {
                let skin = colour.skinFraction(in: d.box)
                if skin < minimum {
                    rulings.append(Ruling(rule: "skin", outcome: .letThrough, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                          skinFraction: skin,
                                          detail: "\(lone); \(Int((skin * 100).rounded()))% of its box is skin-coloured (needs \(Int((minimum * 100).rounded()))%) in a picture in colour (spread \(Int(colour.spread.rounded())), tint \(Int(colour.tint.rounded())))"))
                    continue
                }
            }
            // Only where the skin rule cannot judge (greyscale, tinted, or the skin rule off): a colour
            // picture's part with a skin-coloured box goes to the re-check whatever open_nsfw says.
            if let quiet = rules.quietNSFW, let rawNSFW, rawNSFW < quiet, !(rules.skinMinimum != nil && colour?.inColour == true) {
                rulings.append(Ruling(rule: "quiet_nsfw", outcome: .letThrough, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                      detail: "\(lone); open_nsfw finds nothing suggestive in the picture (\(Self.formatSmall(rawNSFW)) < \(Self.formatSmall(quiet))), "
                                          + "which the skin rule cannot judge (\(colour == nil ? "no colour statistics" : "not in colour"))"))
                continue
            }
            if rules.recheck, let recheck {
                let scores = recheck(d)
                let words = "mirrored \(Self.format(scores.first ?? 0)), re-framed \(Self.format(scores.dropFirst().first ?? 0)); needs \(Self.format(threshold)) in both"
                if !scores.isEmpty, scores.allSatisfy({ $0 >= threshold }) {
                    counted.append(d)
                    rulings.append(Ruling(rule: "recheck", outcome: .kept, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                          recheckScores: scores, detail: "\(lone); confirmed: \(words)"))
                } else {
                    rulings.append(Ruling(rule: "recheck", outcome: .letThrough, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                          recheckScores: scores, detail: "\(lone); not confirmed: \(words)"))
                }
            } else {
                rulings.append(Ruling(rule: "lone_part", outcome: .letThrough, label: d.label, score: d.score, box: d.box, threshold: threshold,
                                      detail: "\(lone); a lone part needs \(Self.format(below))"))
            }
        }
        return Judgement(reasons: reasons(counted: counted, nsfw: nsfw), rulings: rulings)
    }

    /// The `upscaled_nsfw` rule: open_nsfw's score of a small picture (short side under
    /// ``DecisionRules/upscaledSide``: stretched more than 2x to its 256-px input) is set aside,
    /// neither flagging the picture nor vouching for a part, when NudeNet points at something
    /// and it is not skin: the picture is in colour, has under ``DecisionRules/upscaledSkin`` of
    /// its pixels skin-coloured, NudeNet finds nothing that shows a person, and every counted part
    /// it finds scores under ``DecisionRules/keptWithEvidence`` with under ``DecisionRules/skinMinimum``
    /// of its box skin-coloured. A small picture open_nsfw flags with no NudeNet part at all stays
    /// flagged. nil when the rule does not apply (or the score would not matter anyway).
    func upscaledNSFW(detections: [Detection], nsfw: Double?, longSide: Int?, shortSide: Int?, colour: ColourEvidence?) -> Ruling? {
        guard rules.lonePartBelow != nil, let side = rules.upscaledSide, let boxSkin = rules.skinMinimum, let nsfw, let shortSide, shortSide < side,
              let colour, colour.inColour, colour.skinShare < rules.upscaledSkin,
              nsfw >= min(rules.personNSFW, nsfwThreshold ?? 1) else { return nil }
        let parts = detections.filter { Self.partLabels.contains($0.label) && $0.score >= (labelThresholds[$0.label] ?? 2) }
        guard !parts.isEmpty, !detections.contains(where: { $0.label == TestCard.label }),
              parts.allSatisfy({ $0.score < DecisionRules.keptWithEvidence && colour.skinFraction(in: $0.box) < boxSkin }),
              personEvidence(besides: nil, in: detections, nsfw: nil) == nil else { return nil }
        let longSide = longSide ?? shortSide
        let boxes = parts.map { "\($0.label) \(Self.format($0.score)) \(Int((colour.skinFraction(in: $0.box) * 100).rounded()))%" }.joined(separator: ", ")
        return Ruling(rule: "upscaled_nsfw", outcome: .letThrough, label: "open_nsfw", score: nsfw,
                      box: Box(x: 0, y: 0, width: Double(longSide), height: Double(shortSide)), threshold: nsfwThreshold ?? rules.personNSFW,
                      skinFraction: colour.skinShare,
                      detail: "a picture \(shortSide) px on its short side (under \(side): open_nsfw sees it stretched \(Self.format(256 / Double(shortSide)))x), "
                          + "in colour, \(Int((colour.skinShare * 100).rounded()))% skin-coloured (under \(Int((rules.upscaledSkin * 100).rounded()))%); "
                          + "no face or body, and what NudeNet points at is not skin (\(boxes) skin-coloured; needs \(Int((boxSkin * 100).rounded()))%): "
                          + "open_nsfw is neither a verdict nor human evidence here")
    }

    /// What shows a person in the picture besides `part`: a face, feet, armpits, a belly or a
    /// covered part of at least ``DecisionRules/personEvidence`` elsewhere, another part that
    /// stands on its own (``DecisionRules/lonePartBelow`` or more), or open_nsfw of at least
    /// ``DecisionRules/personNSFW``. (Two doubtful parts do not vouch for each other: a sprite
    /// with four "breasts" of 0.3 to 0.6 is not a person.)
    /// (`part` nil: anywhere in the picture.)
    func personEvidence(besides part: Detection?, in detections: [Detection], nsfw: Double?) -> String? {
        if let nsfw, nsfw >= rules.personNSFW { return "open_nsfw \(Self.format(nsfw))" }
        let standsAlone = rules.lonePartBelow ?? 0
        let other = detections.first { d in
            d != part && d.label != TestCard.label && (part.map { d.box.iou($0.box) <= Self.sameRegionIoU } ?? true)
                && d.score >= (Self.partLabels.contains(d.label) ? max(standsAlone, rules.personEvidence) : rules.personEvidence)
        }
        return other.map { "\($0.label) \(Self.format($0.score))" }
    }

    /// A small probability with enough digits to read (0.0013).
    static func formatSmall(_ p: Double) -> String {
        guard p < 0.1 else { return format(p) }
        let digits = String(Int((max(0, p) * 10_000).rounded()))
        return "0." + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
