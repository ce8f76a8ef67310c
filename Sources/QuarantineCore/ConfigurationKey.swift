import SensitivityAnalysis

/// One key of the configuration file: what it takes, why (the conffile's comment), and how it
/// maps onto ``Settings`` both ways.
public struct ConfigurationKey: Sendable {
    public var name: String
    public var rule: ConfigurationRule
    /// The comment above the key in the conffile (lines without `# `); also the documentation.
    public var comment: [String]
    /// For a key with no value by default: the example the conffile shows, commented out.
    public var example: String?
    /// Sets the checked value on the settings.
    let apply: @Sendable (ConfigurationValue, inout Settings) -> Void
    /// The value that, written in a file, gives these settings (nil: the key is left out).
    let value: @Sendable (Settings) -> ConfigurationValue?
    /// For `config show`: the value in force when it differs from the file's form, and a note.
    let shown: (@Sendable (Settings, [String: String]) -> (value: ConfigurationValue?, note: String?))?

    public init(_ name: String, _ rule: ConfigurationRule, comment: [String] = [], example: String? = nil,
                apply: @escaping @Sendable (ConfigurationValue, inout Settings) -> Void,
                value: @escaping @Sendable (Settings) -> ConfigurationValue?,
                shown: (@Sendable (Settings, [String: String]) -> (value: ConfigurationValue?, note: String?))? = nil) {
        self.name = name
        self.rule = rule
        self.comment = comment
        self.example = example
        self.apply = apply
        self.value = value
        self.shown = shown
    }

    /// The comment as one paragraph (documentation).
    public var summary: String { comment.joined(separator: " ") }
}

/// One table of the configuration file (`""` for the top level) and its keys, in the conffile's order.
public struct ConfigurationSection: Sendable {
    /// `agent`, `policy.child.rules`; `""`: the top level.
    public var table: String
    /// The comment above the table's header.
    public var comment: [String]
    public var keys: [ConfigurationKey]
    /// `[policy.MODE.labels]`: the keys are NudeNet labels (any of them), not ``keys``.
    public var labelsOf: AnalysisMode?

    public init(_ table: String, comment: [String] = [], keys: [ConfigurationKey] = [], labelsOf: AnalysisMode? = nil) {
        self.table = table
        self.comment = comment
        self.keys = keys
        self.labelsOf = labelsOf
    }

    public func key(_ name: String) -> ConfigurationKey? { keys.first { $0.name == name } }
}
