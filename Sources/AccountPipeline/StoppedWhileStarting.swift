extension AccountPipeline {
    /// A stop was asked while the pipeline's start waited (``Options/stopRequested``): nothing
    /// was started, and the process ends as on any stop on request.
    public struct StoppedWhileStarting: Error, Sendable, CustomStringConvertible {
        public init() {}
        public var description: String { "stopped on request while starting" }
    }
}
