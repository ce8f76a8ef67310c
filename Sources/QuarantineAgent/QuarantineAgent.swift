import AccountPipeline
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// A person's agent (`quarantine agent`): their account's pipeline (``AccountPipeline``: watch,
/// backlog, analysis, vault, notices) with the analysis bus for their applications
/// (``AnalysisBusService``) as one more service of its group.
public final class QuarantineAgent: Service, Sendable {
    /// The pipeline's options; the agent adds the analysis bus to its companions.
    public typealias Options = AccountPipeline.Options
    /// A stop asked while the start waited (``AccountPipeline/Options/stopRequested``).
    public typealias StoppedWhileStarting = AccountPipeline.StoppedWhileStarting

    /// The account's pipeline, which the agent runs.
    public let pipeline: AccountPipeline

    /// Takes the per-user lock and opens the vault (``AccountPipeline/init(options:logger:hangups:)``);
    /// nothing is watched until ``run()``.
    public init(options: Options, logger: Logger, hangups: UnixSignalsSequence? = nil) throws {
        var options = options
        options.companions.append { AnalysisBusService(pipeline: $0) }
        pipeline = try AccountPipeline(options: options, logger: logger, hangups: hangups)
    }

    public func run() async throws { try await pipeline.run() }
}
