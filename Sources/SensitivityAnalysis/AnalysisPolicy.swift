/// What the person's setting asks of an application, after Apple's `SCSensitivityAnalysisPolicy`:
/// nothing, a brief warning (an adult who opted in), or a child's descriptive interventions.
public enum AnalysisPolicy: String, Sendable, Codable, CaseIterable {
    /// Analysis is off: an application shows media as it would without this agent.
    case disabled
    /// Sensitive Content Warning for an adult: brief interventions, lifted once the content is gone.
    case simpleInterventions = "simple"
    /// Communication Safety for a child: stricter thresholds, plain-words interventions, and an
    /// interrupted stream stays interrupted until the application acknowledges it.
    case descriptiveInterventions = "descriptive"

    /// The policy that follows a mode: adult -> simple, child -> descriptive.
    public init(mode: AnalysisMode) {
        self = mode == .child ? .descriptiveInterventions : .simpleInterventions
    }

    /// The mode whose thresholds apply (nil when analysis is off).
    public var mode: AnalysisMode? {
        switch self {
        case .disabled: return nil
        case .simpleInterventions: return .adult
        case .descriptiveInterventions: return .child
        }
    }
}
