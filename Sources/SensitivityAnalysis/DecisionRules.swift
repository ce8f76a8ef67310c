/// The decision rules over the models' raw output (issue 28): when a counted NudeNet detection,
/// or open_nsfw's score of a small picture, is judged again before it makes a picture sensitive.
///
/// The models' raw detections and scores are never changed (parity with upstream stays
/// checkable); the rules only decide which of the counted ones stand. Each rule is a setting
/// of the policy (`[policy.MODE.rules]` in config.toml) and the numbers behind the defaults
/// are in docs/analysis.md, "Decision rules". What they never do:
/// - drop a detection of ``lonePartBelow`` (0.9) or more, with or without other human evidence,
///   or one of ``keptWithEvidence`` (0.8) or more that comes with any (open_nsfw's included);
/// - drop a detection in a picture that shows a person (a face, another body part, covered
///   parts) or that open_nsfw finds suggestive, except where ``upscaledSide`` sets open_nsfw's
///   score aside (adult mode: a small colour picture whose parts' boxes are not skin);
/// - set aside open_nsfw's verdict on a picture NudeNet finds no part in;
/// - touch the test card.
public struct DecisionRules: Sendable, Equatable, Codable {
    /// A body part needs a body: a counted exposed-part detection scoring below this, in a
    /// picture without other human evidence, is judged by the size, skin and quiet rules and the re-check
    /// before it stands (nil: all rules off).
    public var lonePartBelow: Double?
    /// Another NudeNet detection (a face, feet, a covered part, another exposed part) scoring at
    /// least this, elsewhere in the picture, is human evidence.
    public var personEvidence: Double
    /// open_nsfw's probability for the whole picture at least this is human evidence too.
    public var personNSFW: Double
    /// A lone part is judged again on a mirrored and a re-framed copy of the picture, and stands
    /// when it persists in both; false: a lone part below ``lonePartBelow`` never stands.
    public var recheck: Bool
    /// Evidence inside the box: a lone part whose box has less than this fraction of
    /// skin-coloured pixels, in a picture in colour, is let through (nil: off). Greyscale and
    /// strongly tinted pictures (not ``ColourEvidence/inColour``) are exempt: the re-check
    /// judges them.
    public var skinMinimum: Double?
    /// Size: in a picture whose long side is under this many pixels (a stamp, an icon, a sprite),
    /// a lone part below ``lonePartBelow`` is let through without a re-check: at a few dozen
    /// pixels the copies are the same blur, and the score persists on any round blob (nil: off).
    public var tinySide: Int?
    /// The models disagree: a lone part in a picture that open_nsfw scores below this is let
    /// through without a re-check (nil: off), where the skin rule cannot judge it: greyscale
    /// and strongly tinted pictures (open_nsfw reads no colour), or any picture with the skin
    /// rule off. A colour picture's lone part with a skin-coloured box still goes to the re-check.
    public var quietNSFW: Double?
    /// open_nsfw on a small picture: in a picture whose short side is under this many pixels
    /// (open_nsfw sees it stretched more than 2x to its 256-px input), in colour, with less than
    /// ``upscaledSkin`` of its pixels skin-coloured, no person found by NudeNet, and only counted
    /// parts under ``keptWithEvidence`` whose boxes are under ``skinMinimum`` skin-coloured,
    /// open_nsfw neither flags the picture nor counts as human evidence (nil: off). A small
    /// picture open_nsfw flags with no NudeNet part stays flagged.
    public var upscaledSide: Int?
    /// The skin-coloured share of the whole picture under which ``upscaledSide`` applies.
    public var upscaledSkin: Double
    /// No rule drops a part of this score or more that comes with other human evidence (issue 28).
    public static let keptWithEvidence = 0.8
    /// The colour spread (``ColourEvidence/spread``) under which a picture is greyscale or flat.
    public static let colourSpread = 8.0
    /// A picture whose colour spread is under this times its tint is strongly tinted.
    public static let tintRatio = 0.4

    public init(lonePartBelow: Double? = 0.9, personEvidence: Double = 0.3, personNSFW: Double = 0.3, recheck: Bool = true,
                skinMinimum: Double? = 0.35, tinySide: Int? = 100, quietNSFW: Double? = 0.01, upscaledSide: Int? = 128,
                upscaledSkin: Double = 0.15) {
        self.tinySide = tinySide
        self.quietNSFW = quietNSFW
        self.upscaledSide = upscaledSide
        self.upscaledSkin = upscaledSkin
        self.lonePartBelow = lonePartBelow
        self.personEvidence = personEvidence
        self.personNSFW = personNSFW
        self.recheck = recheck
        self.skinMinimum = skinMinimum
    }

    /// No rule: the models' raw output decides, as before issue 28.
    public static let off = DecisionRules(lonePartBelow: nil, recheck: false, skinMinimum: nil, tinySide: nil, quietNSFW: nil, upscaledSide: nil)

    /// The built-in defaults of `mode` (config.toml documents the same; docs/analysis.md, "Decision rules",
    /// has the numbers behind them). The same in both modes (child mode's lower thresholds
    /// already count more, and the rules only look at parts with no person around them), except
    /// ``upscaledSide``: only adult mode sets aside open_nsfw's score of a small picture, because
    /// that is the one rule that can unflag a picture NudeNet finds no part of 0.8 in, and a
    /// child's thumbnails keep every signal (child mode meets its target without it).
    public static func defaults(for mode: AnalysisMode) -> DecisionRules {
        DecisionRules(lonePartBelow: 0.9, personEvidence: 0.3, personNSFW: 0.3, recheck: true, skinMinimum: 0.35, tinySide: 100,
                      quietNSFW: 0.01, upscaledSide: mode == .adult ? 128 : nil, upscaledSkin: 0.15)
    }
}

/// What a decision rule decided about one of the models' detections.
public struct Ruling: Sendable, Codable, Equatable {
    /// What became of the detection.
    public enum Outcome: String, Sendable, Codable {
        /// It stands: the picture is sensitive because of it.
        case kept
        /// It was let through: it does not make the picture sensitive.
        case letThrough = "let_through"
    }

    /// The rule that decided: `tiny`, `skin`, `quiet_nsfw`, `recheck`, `lone_part`, or
    /// `upscaled_nsfw` (then `label` is `open_nsfw` and `score` its probability).
    public var rule: String
    public var outcome: Outcome
    /// The raw detection, as the model gave it.
    public var label: String
    public var score: Double
    public var box: Box
    /// The threshold the detection had passed.
    public var threshold: Double
    /// The re-check's scores for the same label on the mirrored and the re-framed copy (0: not found).
    public var recheckScores: [Double]?
    /// The fraction of skin-coloured pixels in the box, when the skin rule measured it.
    public var skinFraction: Double?
    /// Why, in words: "no face, body or suggestive picture around it; mirrored 0.27, re-framed 0.58 (needs 0.50 in both)".
    public var detail: String

    public init(rule: String, outcome: Outcome, label: String, score: Double, box: Box, threshold: Double,
                recheckScores: [Double]? = nil, skinFraction: Double? = nil, detail: String) {
        self.rule = rule
        self.outcome = outcome
        self.label = label
        self.score = score
        self.box = box
        self.threshold = threshold
        self.recheckScores = recheckScores
        self.skinFraction = skinFraction
        self.detail = detail
    }

    /// One line for the history and the scan report: "BUTTOCKS_EXPOSED 0.41 let through (recheck: ...)".
    public var summary: String {
        "\(label) \(SensitivityPolicy.format(score)) \(outcome == .kept ? "kept" : "let through") (\(rule): \(detail))"
    }
}

/// The policy's verdict on one picture's raw output, with what the rules decided.
public struct Judgement: Sendable, Equatable {
    /// Why the picture is sensitive, strongest first; empty when it is not.
    public var reasons: [String]
    /// Every detection a rule looked at: kept or let through, with its raw scores.
    public var rulings: [Ruling]
}
