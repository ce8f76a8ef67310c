/// How strict the analyzer is, after Apple's SensitiveContentAnalysis policies.
public enum AnalysisMode: String, Sendable, Codable, CaseIterable {
    /// Simple interventions: brief, for adults who opted in.
    case adult
    /// Descriptive interventions: stricter thresholds, plain words, a guardian decides.
    case child
}
