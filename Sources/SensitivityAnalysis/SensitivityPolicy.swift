/// What the agent does with media it cannot analyse.
public enum ErrorAction: String, Sendable, Codable, CaseIterable {
    /// Leave the file where it is and tell the person (adult default).
    case leave
    /// Hold it in the vault as "unverified" until someone releases it (child default).
    case hold
}

/// Which signals make a picture sensitive in one mode: NudeNet labels with a minimum score
/// each, and a minimum open_nsfw probability.
public struct SensitivityPolicy: Sendable, Equatable, Codable {
    public var mode: AnalysisMode
    /// A NudeNet label counts when its score is at least this.
    public var labelThresholds: [String: Double]
    /// The whole picture counts when open_nsfw's probability is at least this (nil: ignored).
    public var nsfwThreshold: Double?
    /// What the agent does with media it cannot analyse (corrupt, too large, unsupported codec).
    public var onError: ErrorAction
    /// When a counted detection is judged again before it counts (issue 28): ``DecisionRules``.
    public var rules: DecisionRules

    public init(mode: AnalysisMode, labelThresholds: [String: Double], nsfwThreshold: Double?, onError: ErrorAction? = nil,
                rules: DecisionRules? = nil) {
        self.mode = mode
        self.labelThresholds = labelThresholds
        self.nsfwThreshold = nsfwThreshold
        self.onError = onError ?? (mode == .child ? .hold : .leave)
        self.rules = rules ?? .defaults(for: mode)
    }

    /// The built-in defaults; `etc/quarantine/config.toml` documents the same numbers and why.
    public static func defaults(for mode: AnalysisMode) -> SensitivityPolicy {
        switch mode {
        case .adult:
            return SensitivityPolicy(mode: .adult, labelThresholds: [
                "FEMALE_GENITALIA_EXPOSED": 0.45, "MALE_GENITALIA_EXPOSED": 0.45, "ANUS_EXPOSED": 0.45,
                "FEMALE_BREAST_EXPOSED": 0.5, "BUTTOCKS_EXPOSED": 0.5,
            ], nsfwThreshold: 0.85)
        case .child:
            return SensitivityPolicy(mode: .child, labelThresholds: [
                "FEMALE_GENITALIA_EXPOSED": 0.3, "MALE_GENITALIA_EXPOSED": 0.3, "ANUS_EXPOSED": 0.3,
                "FEMALE_BREAST_EXPOSED": 0.35, "BUTTOCKS_EXPOSED": 0.35,
                "FEMALE_GENITALIA_COVERED": 0.5, "ANUS_COVERED": 0.5,
            ], nsfwThreshold: 0.6)
        }
    }

    /// The reasons a picture is sensitive by the thresholds alone (no decision rule), strongest
    /// first; empty when it is not.
    public func reasons(detections: [Detection], nsfw: Double?) -> [String] {
        reasons(counted: detections.filter { d in d.label == TestCard.label || labelThresholds[d.label].map { d.score >= $0 } ?? false }, nsfw: nsfw)
    }

    /// The reasons given by `counted` detections and the open_nsfw score.
    func reasons(counted: [Detection], nsfw: Double?) -> [String] {
        let hits = counted.map { ($0.label, $0.score) }
        // One reason per label: its best score.
        var best: [String: Double] = [:]
        for (label, score) in hits { best[label] = max(best[label] ?? 0, score) }
        var reasons = best.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.key) \(Self.format($0.value))" }
        if let nsfw, let min = nsfwThreshold, nsfw >= min { reasons.append("open_nsfw \(Self.format(nsfw))") }
        return reasons
    }

    static func format(_ score: Double) -> String {
        let hundredths = Int((score * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }
}
