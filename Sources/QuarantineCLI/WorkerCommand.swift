import AnalysisWorker
import ArgumentParser
import Foundation
import SensitivityAnalysis
import ServiceSupport

/// `quarantine analysis-worker`: the confined process that judges files for the agent and the
/// guardian service. Started by them with its socket as descriptor 3; not for people.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analysis-worker",
        abstract: "The confined analysis process the agent starts (not run by hand).",
        shouldDisplay: false)

    /// Set by `main` before anything else runs (see ``AnalysisWorkerProcess/confine()``).
    nonisolated(unsafe) static var confined: Result<Void, ServiceError>?

    func run() async throws {
        let confined = Self.confined ?? AnalysisWorkerProcess.confine()
        let status = await AnalysisWorkerProcess.run(environment: ProcessInfo.processInfo.environment, confined: confined)
        if status != 0 { throw ExitCode(status) }
    }
}
