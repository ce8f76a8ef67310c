import Foundation
import QuarantineCore

extension AccountPipeline {
    /// What judges an application's file now: the engine (nil while there is none, with the
    /// reason) and the settings in force (the mode's policy). The guardian service's `analyze`
    /// verb asks it at each request, so a reload or a new worker is picked up.
    public var applicationAnalysis: (engine: (any AnalysisEngine)?, settings: Settings, problem: String?) {
        state.withLock { ($0.engine, $0.settings, $0.problem) }
    }
}
