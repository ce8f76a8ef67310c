import MediaDecoding
import SensitivityAnalysis
import QuarantineBase

/// What a configuration file decides for analysis: the mode, each mode's policy, and tuning.
///
/// Built-in defaults (documented, with reasons, in `etc/quarantine/config.toml`, generated from
/// ``ConfigurationSchema``) are overridden
/// key by key by the system-wide `/etc/quarantine/config.toml` (installed by the package with
/// the same values), then by the user's `${XDG_CONFIG_HOME:-~/.config}/quarantine/config.toml`.
public struct Settings: Sendable, Equatable {
    public var mode: AnalysisMode
    public var policies: [AnalysisMode: SensitivityPolicy]
    public var analyzer: SensitivityAnalyzer.Configuration
    public var video: VideoOptions
    /// The folders the agent watches.
    public var watch: WatchSettings
    /// How the agent runs: notifications, settling, rescans.
    public var agent: AgentSettings

    public init(mode: AnalysisMode = .adult,
                policies: [AnalysisMode: SensitivityPolicy] = [.adult: .defaults(for: .adult), .child: .defaults(for: .child)],
                analyzer: SensitivityAnalyzer.Configuration = .init(), video: VideoOptions = .init(),
                watch: WatchSettings = .init(), agent: AgentSettings = .init()) {
        self.mode = mode
        self.policies = policies
        self.analyzer = analyzer
        self.video = video
        self.watch = watch
        self.agent = agent
    }

    /// The policy of the mode in force.
    public var policy: SensitivityPolicy { policies[mode] ?? .defaults(for: mode) }

    /// Whether a settled file is held out of reach until its verdict: always in child mode,
    /// in adult mode with `agent.hold_while_checking`.
    public var holdsWhileChecking: Bool { mode == .child || agent.holdWhileChecking }

    /// The system-wide configuration file (the package's conffile), read under the user's.
    public static let systemConfigurationPath = Paths.systemConfiguration

    /// The user's configuration file.
    public static func userConfigurationPath(environment: [String: String] = ProcessEnvironment.current) -> String {
        Paths(environment: environment).userConfiguration
    }

    /// A problem in a configuration file: the file, the line (when one is at fault) and what is wrong.
    public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
        public var path: String
        /// The line (from 1) at fault; nil when the file as a whole is (cannot be read).
        public var line: Int?
        public var message: String
        /// `FILE:LINE: message`, as compilers write it.
        public var description: String { "\(path)\(line.map { ":\($0)" } ?? ""): \(message)" }
        public init(path: String, line: Int? = nil, message: String) {
            self.path = path
            self.line = line
            self.message = message
        }
    }

    /// These settings with the values of the TOML text `text` (from `path`) applied over them,
    /// through ``ConfigurationSchema``: a text that is not TOML, an unknown table or key, or a
    /// value its key does not take is an error naming the line.
    public func applying(toml text: String, from path: String) throws(ConfigurationError) -> Settings {
        let table: TOMLTable
        do { table = try TOMLParser.parse(text) } catch {
            throw ConfigurationError(path: path, line: error.line, message: "not valid TOML: \(error.message)")
        }
        return try ConfigurationSchema.settings(from: table, over: self, path: path)
    }
}
