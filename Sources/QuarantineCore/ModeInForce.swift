import QuarantineStore
import SensitivityAnalysis

/// The mode in force, and why.
///
/// It is the strictest of: the configuration file's `mode`, the mode a guardian last set with
/// `quarantine mode` (kept in the audit database), and the mode a running agent works in. A
/// configuration that cannot be read or parsed counts as child mode until it is fixed: a file
/// the CLI cannot read must never let a release through without the PIN while the agent
/// protects a child.
public struct ModeInForce: Sendable, Equatable {
    public var mode: AnalysisMode
    /// Why the mode is stricter than the configuration file says, when it is.
    public var note: String?

    public init(mode: AnalysisMode, note: String? = nil) {
        self.mode = mode
        self.note = note
    }

    /// Decides from what each source says (nil where a source says nothing).
    public static func resolve(configuration: Result<AnalysisMode, Settings.ConfigurationError>,
                               recorded: AnalysisMode?, runningAgent: AnalysisMode?) -> ModeInForce {
        switch configuration {
        case .failure(let error):
            return ModeInForce(mode: .child, note: "the configuration cannot be used (\(error)); child mode's rules apply until it is fixed")
        case .success(.child):
            return ModeInForce(mode: .child)
        case .success(.adult):
            if recorded == .child {
                return ModeInForce(mode: .child, note: "a guardian set child mode with 'quarantine mode child'; leaving it needs 'quarantine mode adult' and the guardian PIN")
            }
            if runningAgent == .child {
                return ModeInForce(mode: .child, note: "the running agent works in child mode")
            }
            return ModeInForce(mode: .adult)
        }
    }

    /// The mode in force for the user whose configuration is at `configurationPath` and whose
    /// audit database is `store`.
    public static func current(configurationPath: String? = nil, store: AuditStore?,
                               environment: [String: String] = ProcessEnvironment.current) -> ModeInForce {
        let configuration = Result { () throws(Settings.ConfigurationError) -> AnalysisMode in
            try ConfigurationFile.load(configurationPath, environment: environment).settings.mode
        }
        var recorded: AnalysisMode? = nil
        var agent: AnalysisMode? = nil
        if let store {
            recorded = (try? store.recordedMode())??.mode
            if AgentLock.runningAgent(environment: environment) != nil, let status = try? store.agentStatus() {
                agent = AnalysisMode(rawValue: status.mode)
            }
        }
        return resolve(configuration: configuration, recorded: recorded, runningAgent: agent)
    }
}
