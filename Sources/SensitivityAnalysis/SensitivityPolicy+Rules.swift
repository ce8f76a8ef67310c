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
    /// `colour` gives the skin rule its statistics (nil: the skin rule does not apply);
    /// `longSide` is the picture's long side in pixels, for the size rule (nil: unknown).
    public func judge(detections: [Detection], nsfw: Double?, longSide: Int? = nil, colour: ColourEvidence? = nil,
                      recheck: ((Detection) -> [Double])? = nil) -> Judgement {
        var counted: [Detection] = []
        var rulings: [Ruling] = []
        for d in detections {
            if d.label == TestCard.label { counted.append(d); continue }
            guard let threshold = labelThresholds[d.label], d.score >= threshold else { continue }
            guard let below = rules.lonePartBelow, d.score < below, Self.partLabels.contains(d.label),
                  personEvidence(besides: d, in: detections, nsfw: nsfw) == nil else {
                counted.append(d)
                continue
            }
            let lone = "no face, body or suggestive picture around it (nothing else \(Self.format(rules.personEvidence))+, open_nsfw \(nsfw.map(Self.format) ?? "-") < \(Self.format(rules.personNSFW)))"
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

    /// What shows a person in the picture besides `part`: a face, feet, armpits, a belly or a
    /// covered part of at least ``DecisionRules/personEvidence`` elsewhere, another part that
    /// stands on its own (``DecisionRules/lonePartBelow`` or more), or open_nsfw of at least
    /// ``DecisionRules/personNSFW``. (Two doubtful parts do not vouch for each other: a sprite
    /// with four "breasts" of 0.3 to 0.6 is not a person.)
    func personEvidence(besides part: Detection, in detections: [Detection], nsfw: Double?) -> String? {
        if let nsfw, nsfw >= rules.personNSFW { return "open_nsfw \(Self.format(nsfw))" }
        let standsAlone = rules.lonePartBelow ?? 0
        let other = detections.first {
            $0 != part && $0.label != TestCard.label && $0.box.iou(part.box) <= Self.sameRegionIoU
                && $0.score >= (Self.partLabels.contains($0.label) ? max(standsAlone, rules.personEvidence) : rules.personEvidence)
        }
        return other.map { "\($0.label) \(Self.format($0.score))" }
    }
}
