import QuarantineCore
import SensitivityAnalysis

extension AnalysisPolicy {
    /// The policy applications are given under `settings` (the bus's `AnalysisPolicy`): a child
    /// always gets descriptive interventions, whatever the file says; an adult gets simple
    /// interventions, or none when `agent.app_analysis = false`.
    public init(_ settings: Settings) {
        if settings.mode == .child {
            self = .descriptiveInterventions
        } else {
            self = settings.agent.appAnalysis ? .simpleInterventions : .disabled
        }
    }
}
