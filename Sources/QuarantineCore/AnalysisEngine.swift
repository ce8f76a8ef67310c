import MediaDecoding
import SensitivityAnalysis

/// Who judges files for the core: the models in this process (``SensitivityAnalyzer``: `scan`,
/// tests), or a confined worker process (the agent and the guardian service).
public protocol AnalysisEngine: Sendable {
    /// Files judged at once.
    var workers: Int { get }
    /// Why nothing can be judged at the moment, if so (a worker could not start).
    var problem: String? { get }
    /// Blocking work for a file (reading and hashing it), off Swift's cooperative threads.
    func runBlocking<T: Sendable>(video: Bool, _ work: @escaping @Sendable () throws -> T) async throws -> T
    /// The report on the file at `path` under `settings`, with a video's progress.
    func report(forFileAt path: String, settings: Settings, progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport
    /// A picture of the file at `path` to blur for its preview when no analysis gave one (a file
    /// hidden on sight because it is blocked); nil when none can be decoded.
    func previewFrame(forFileAt path: String) async -> RGBImage?
}

extension SensitivityAnalyzer: AnalysisEngine {
    public var workers: Int { configuration.workers }
    public var problem: String? { nil }

    public func report(forFileAt path: String, settings: Settings, progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
        await report(forFileAt: path, policy: settings.policy, videoOptions: settings.video, progress: progress)
    }
}
