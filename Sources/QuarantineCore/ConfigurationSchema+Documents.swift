import Foundation
import SensitivityAnalysis

/// The texts made from the schema: the conffile, the documentation's table, `config show`.
extension ConfigurationSchema {
    static let conffileHeader = [
        "quarantine configuration: the documented defaults.",
        "",
        "Copy this file to ~/.config/quarantine/config.toml and change what you need; every key you",
        "leave out keeps the value shown here. `quarantine config show` prints what is in force, and",
        "`quarantine watch add|remove` and `quarantine mode` edit the file for you. A running agent",
        "picks changes up by itself (or on `systemctl --user reload quarantine`).",
        "",
        "Generated from the schema in Sources/QuarantineCore/ConfigurationSchema*.swift by",
        "`quarantine config schema` (a test checks this file is that text); the same",
        "keys are in docs/configuration.md.",
    ]

    static func commentLines(_ lines: [String]) -> [String] { lines.map { $0.isEmpty ? "#" : "# " + $0 } }

    /// `etc/quarantine/config.toml`: every key with its comment and its default.
    public static func conffile() -> String {
        var lines = commentLines(conffileHeader)
        let values = self.values(of: Settings())
        for (section, entries) in zip(sections, values) {
            if !section.table.isEmpty {
                lines.append("")
                if !section.comment.isEmpty { lines += commentLines(section.comment) }
                lines.append("[\(section.table)]")
            } else {
                lines.append("")
            }
            if section.labelsOf != nil {
                lines += entries.entries.map { "\($0.key) = \($0.value.toml)" }
                continue
            }
            for key in section.keys {
                lines += commentLines(key.comment)
                if let example = key.example {
                    lines.append("# \(key.name) = \(example)")
                } else if let value = entries.entries.first(where: { $0.key == key.name })?.value {
                    lines.append("\(key.name) = \(value.toml)")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `docs/configuration.md`: one table per configuration table.
    public static func markdown() -> String {
        var lines = [
            "# Configuration",
            "",
            "<!-- Generated from the schema in Sources/QuarantineCore/ConfigurationSchema*.swift by",
            "     `quarantine config schema --markdown`; a test checks this file is that text. Do not edit. -->",
            "",
            "The agent reads `/etc/quarantine/config.toml` (the package's conffile, every key with its",
            "default and why), then `${XDG_CONFIG_HOME:-~/.config}/quarantine/config.toml`; each key left",
            "out keeps the value below. A guardian service reads `/etc/quarantine/USER.toml` alone.",
            "`quarantine config show` prints what is in force; `quarantine config check FILE` checks a",
            "file. A value a key does not take, an unknown key or table, or a text that is not TOML is an",
            "error naming the file's line: the agent does not start on it (exit 78), a running agent keeps",
            "the settings it has, and a guardian service keeps protecting with its last good settings",
            "(`guardian status` says so).",
            "",
        ]
        let defaults = values(of: Settings())
        for (section, entries) in zip(sections, defaults) {
            lines.append("## " + (section.table.isEmpty ? "Top level" : "`[\(section.table)]`"))
            lines.append("")
            if !section.comment.isEmpty {
                lines.append(section.comment.filter { !$0.hasPrefix("---") && !$0.isEmpty }.joined(separator: " "))
                lines.append("")
            }
            if let mode = section.labelsOf {
                lines.append("Keys: NudeNet labels (\(NudeDetector.labels.count): \(NudeDetector.labels.sorted().map { "`\($0)`" }.joined(separator: ", "))); "
                             + "value: \(labelRule.typeName). A label left out does not count. Defaults in \(mode.rawValue) mode:")
                lines.append("")
                lines += ["| label | default |", "| --- | --- |"]
                lines += entries.entries.map { "| `\($0.key)` | \($0.value.markdown) |" }
                lines.append("")
                continue
            }
            lines += ["| key | takes | default | what it does |", "| --- | --- | --- | --- |"]
            for key in section.keys {
                let value = entries.entries.first { $0.key == key.name }?.value
                let fallback = sections.first { $0.table == section.table.replacingOccurrences(of: "policy.child", with: "policy.adult") }?.key(key.name)?.summary ?? ""
                let summary = key.summary.isEmpty ? fallback : key.summary
                let shownDefault = value.map(\.markdown) ?? "(not set)"
                lines.append("| `\(key.name)` | \(key.rule.typeName) | \(shownDefault) | \(summary.replacingOccurrences(of: "|", with: "\\|")) |")
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// `config show`: the values in force as a TOML file, with notes.
    public static func shownText(_ settings: Settings, file: String, exists: Bool, environment: [String: String]) -> String {
        var lines = ["# in force: built-in defaults, then \(file)\(exists ? "" : " (no such file: defaults only)")"]
        for (table, entries) in values(of: settings, environment: environment) {
            lines.append("")
            if !table.isEmpty { lines.append("[\(table)]") }
            lines += entries.map { "\($0.key) = \($0.value.toml)\($0.note.map { "  # " + $0 } ?? "")" }
        }
        return lines.joined(separator: "\n")
    }

    /// `config show --json`: `{"file", "file_exists", "mode", "watch": {...}, ..., "policy": {"adult": {..., "labels", "rules"}}}`.
    public static func shownJSON(_ settings: Settings, file: String, exists: Bool, environment: [String: String]) throws -> String {
        var root = JSONTree.object([("file", .value(.string(file))), ("file_exists", .value(.bool(exists)))])
        for (table, entries) in values(of: settings, environment: environment) {
            let path = table.split(separator: ".").map(String.init)
            for entry in entries { root.insert(.value(entry.value), at: path + [entry.key]) }
            if entries.isEmpty { root.insert(.object([]), at: path) }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: try encoder.encode(root), as: UTF8.self)
    }
}

/// An ordered JSON object of configuration values (JSONEncoder keeps a keyed container's order).
enum JSONTree: Encodable {
    case value(ConfigurationValue)
    case object([(String, JSONTree)])

    mutating func insert(_ tree: JSONTree, at path: [String]) {
        guard case .object(var members) = self, let first = path.first else { self = tree; return }
        if let index = members.firstIndex(where: { $0.0 == first }) {
            members[index].1.insert(tree, at: Array(path.dropFirst()))
        } else {
            var child = path.count == 1 ? tree : JSONTree.object([])
            if path.count > 1 { child.insert(tree, at: Array(path.dropFirst())) }
            members.append((first, child))
        }
        self = .object(members)
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .value(let value): try value.encode(to: encoder)
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in members { try container.encode(value, forKey: Key(stringValue: key)) }
        }
    }
}
