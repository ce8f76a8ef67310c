import AnalysisWorker
import QuarantineCore
import SensitivityAnalysis

extension SandboxedAnalysis: AnalysisEngine {
    public func report(forFileAt path: String, settings: Settings, progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
        await report(forFileAt: path, policy: settings.policy, video: settings.video, progress: progress)
    }
}
