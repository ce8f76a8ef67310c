import MediaDecoding
import SensitivityAnalysis

/// What a configuration file decides for analysis: the mode, each mode's policy, and tuning.
///
/// Built-in defaults (documented, with reasons, in `etc/quarantine/config.toml`) are overridden
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
    public static let systemConfigurationPath = "/etc/quarantine/config.toml"

    /// The user's configuration file.
    public static func userConfigurationPath(environment: [String: String] = ProcessEnvironment.current) -> String {
        XDG.configHome(environment) + "/quarantine/config.toml"
    }

    /// A problem in a configuration file, with the file and the key.
    public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path): \(message)" }
        public init(path: String, message: String) {
            self.path = path
            self.message = message
        }
    }

    /// These settings with the values of the TOML text `text` (from `path`) applied over them.
    public func applying(toml text: String, from path: String) throws(ConfigurationError) -> Settings {
        func fail(_ message: String) -> ConfigurationError { ConfigurationError(path: path, message: message) }
        let table: ConfigTable
        do { table = try ConfigDocument.parse(text) } catch { throw fail("not valid TOML: \(error)") }
        var result = self
        if let value = table["mode"] {
            guard let text = value.string, let mode = AnalysisMode(rawValue: text) else {
                throw fail("mode must be \"adult\" or \"child\"")
            }
            result.mode = mode
        }
        if let analysis = table["analysis"]?.table {
            func positiveInt(_ key: String) throws(ConfigurationError) -> Int? {
                guard let value = analysis[key] else { return nil }
                guard let n = value.int, n >= 0 else { throw fail("analysis.\(key) must be a whole number ≥ 0") }
                return n
            }
            if let n = try positiveInt("workers") { result.analyzer.workers = n == 0 ? SensitivityAnalyzer.Configuration().workers : n }
            if let n = try positiveInt("intra_op_threads") { result.analyzer.intraOpThreads = n }
            if let n = try positiveInt("max_dimension") { result.analyzer.limits.maxDimension = n }
            if let n = try positiveInt("max_megapixels") { result.analyzer.limits.maxPixels = n * 1_000_000 }
            if let n = try positiveInt("max_image_file_mib") { result.analyzer.limits.maxImageFileBytes = n << 20 }
            if let n = try positiveInt("decode_memory_mib") {
                guard n >= 16 else { throw fail("analysis.decode_memory_mib must be at least 16") }
                result.analyzer.limits.decodeMemoryBytes = n << 20
            }
        }
        if let containers = table["containers"]?.table {
            try result.analyzer.limits.containers.apply(containers, fail: fail)
        }
        if let video = table["video"]?.table {
            if let value = video["max_gap"] {
                guard let gap = value.double ?? value.int.map(Double.init), gap >= 0.1, gap <= 60 else {
                    throw fail("video.max_gap must be a number of seconds from 0.1 to 60")
                }
                result.video.maxGap = gap
            }
            if let value = video["decoders"] {
                guard let count = value.int, (0...2).contains(count) else {
                    throw fail("video.decoders must be 0 (automatic), 1 or 2")
                }
                result.video.decoders = count == 0 ? nil : count
            }
        }
        if let watch = table["watch"]?.table { try result.watch.apply(watch, fail: fail) }
        if let agent = table["agent"]?.table { try result.agent.apply(agent, fail: fail) }
        if let policyTable = table["policy"]?.table {
            for key in policyTable.keys {
                guard let mode = AnalysisMode(rawValue: key), let modeTable = policyTable[key]?.table else {
                    throw fail("[policy.\(key)]: unknown mode (use adult or child)")
                }
                var policy = result.policies[mode] ?? .defaults(for: mode)
                if let value = modeTable["nsfw_threshold"] {
                    if value.bool == false { policy.nsfwThreshold = nil }
                    else if let t = value.double ?? value.int.map(Double.init), (0...1).contains(t) { policy.nsfwThreshold = t }
                    else { throw fail("policy.\(key).nsfw_threshold must be a number in 0...1, or false") }
                }
                if let value = modeTable["on_error"] {
                    guard let text = value.string, let action = ErrorAction(rawValue: text) else {
                        throw fail("policy.\(key).on_error must be \"leave\" (leave the file and tell) or \"hold\" (hold it in the vault as unverified)")
                    }
                    policy.onError = action
                }
                if let labels = modeTable["labels"]?.table {
                    for label in labels.keys {
                        guard NudeDetector.labels.contains(label) else {
                            throw fail("policy.\(key).labels: unknown NudeNet label \(label); known: \(NudeDetector.labels.joined(separator: ", "))")
                        }
                        let value = labels[label]!
                        if value.bool == false { policy.labelThresholds[label] = nil }
                        else if let t = value.double ?? value.int.map(Double.init), (0.2...1).contains(t) { policy.labelThresholds[label] = t }
                        else { throw fail("policy.\(key).labels.\(label) must be a number in 0.2...1 (NudeNet reports nothing below 0.2), or false") }
                    }
                }
                if let rules = modeTable["rules"]?.table {
                    try policy.rules.apply(rules, at: "policy.\(key).rules", fail: fail)
                }
                result.policies[mode] = policy
            }
        }
        return result
    }
}
