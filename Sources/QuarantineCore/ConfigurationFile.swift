import Foundation
import SensitivityAnalysis

/// The configuration file: the one loader and the one editor that the agent and every CLI verb
/// use, with one error policy. A missing file means the built-in defaults; a file that exists
/// but cannot be read or parsed is an error (never silently the defaults), and for the mode
/// see ``ModeInForce``: it never lowers protection.
public struct ConfigurationFile: Sendable {
    public var path: String
    public var exists: Bool
    /// The text as written (empty when there is no file).
    public var text: String
    public var settings: Settings

    /// Reads and parses the file at `path`, over the built-in defaults; missing: the defaults.
    /// Without `path`, the user's file over the system-wide one (`/etc/quarantine/config.toml`,
    /// the package's conffile, where an administrator changes the defaults of every account);
    /// a file named explicitly (`--config`, a guardian service's `/etc/quarantine/USER.toml`)
    /// stands alone over the built-in defaults.
    public static func load(_ path: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment,
                            systemPath: String = Settings.systemConfigurationPath) throws(Settings.ConfigurationError) -> ConfigurationFile {
        var base = Settings()
        if path == nil {
            let system = try load(systemPath, environment: environment)
            if system.exists { base = system.settings }
        }
        let path = path ?? Settings.userConfigurationPath(environment: environment)
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT {
                return ConfigurationFile(path: path, exists: false, text: "", settings: base)
            }
            throw Settings.ConfigurationError(path: path, message: "cannot be read: \(String(cString: strerror(errno)))")
        }
        guard info.st_size <= maxBytes else {
            throw Settings.ConfigurationError(path: path, message: "is \(info.st_size) bytes: a configuration file is at most \(maxBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Settings.ConfigurationError(path: path, message: "cannot be read (permissions?)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw Settings.ConfigurationError(path: path, message: "cannot be read as UTF-8 text")
        }
        return ConfigurationFile(path: path, exists: true, text: text, settings: try base.applying(toml: text, from: path))
    }

    /// The file at `path`, which must exist: a guardian service's (a missing file's defaults are
    /// adult mode, so a file that went away must not read as them).
    public static func loadExisting(_ path: String) throws(Settings.ConfigurationError) -> ConfigurationFile {
        let file = try load(path)
        guard file.exists else { throw Settings.ConfigurationError(path: path, message: "is missing") }
        return file
    }

    /// The largest configuration file read (the conffile is about 11 KiB).
    public static let maxBytes = 1 << 20

    /// Writes `text` after checking that it parses: a broken file is never left behind.
    public func save(_ text: String) throws {
        _ = try Settings().applying(toml: text, from: path)
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    // MARK: - Editing, every other line kept as written

    /// The text with `key = value` set at the top level (`table` nil) or inside `[table]`.
    /// A key that is there is replaced in place (a multi-line array up to its closing bracket);
    /// a missing key is added at the start of its table, a missing table at the end.
    public static func setting(_ key: String, to value: String, inTable table: String? = nil, of text: String) -> String {
        var lines = text.isEmpty ? [] : text.components(separatedBy: "\n")
        let line = "\(key) = \(value)"
        let isTableHeader = { (line: String) in line.trimmingCharacters(in: .whitespaces).hasPrefix("[") }
        let start: Int
        if let table {
            let header = "[\(table)]"
            guard let found = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == header }) else {
                if let last = lines.last, last.isEmpty { lines.removeLast() }
                if !lines.isEmpty { lines.append("") }
                lines += [header, line, ""]
                return lines.joined(separator: "\n")
            }
            start = found + 1
        } else {
            start = 0
        }
        let end = lines[start...].firstIndex(where: isTableHeader) ?? lines.count
        let pattern = "^\\s*" + NSRegularExpression.escapedPattern(for: key) + "\\s*="
        if let index = lines[start..<end].firstIndex(where: { $0.range(of: pattern, options: .regularExpression) != nil }) {
            var last = index
            if lines[index].contains("["), !lines[index].contains("]") {
                while last + 1 < end, !lines[last].contains("]") { last += 1 }
            }
            lines.replaceSubrange(index...last, with: [line])
        } else {
            lines.insert(line, at: start)
        }
        return lines.joined(separator: "\n")
    }

    /// A TOML string.
    /// Every control character is escaped (a path may hold any byte but `/` and NUL: a tab, a
    /// newline or U+0001 in a folder name must not end the string or break the file).
    public static func tomlString(_ value: String) -> String {
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "\t": text += "\\t"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }

    /// A TOML array of strings.
    public static func tomlArray(_ values: [String]) -> String {
        "[" + values.map(tomlString).joined(separator: ", ") + "]"
    }
}

extension ConfigurationFile {
    /// A change to the watched folders.
    public enum WatchEdit: Sendable {
        case add(String, outgoing: Bool)
        case remove(String)
    }

    /// Why a watch edit was not made.
    public struct WatchRefusal: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Applies `edit` to the `[watch]` table (paths expanded against `environment`'s home) and
    /// saves the file. Returns the folder, absolute; throws a refusal in words (already
    /// watched is not one: `false` is returned then).
    @discardableResult
    public func editWatch(_ edit: WatchEdit, environment: [String: String] = ProcessEnvironment.current) throws -> (folder: String, changed: Bool) {
        let incoming = (settings.watch.incoming ?? [WatchSettings.downloadFolder(environment: environment)]).map { WatchSettings.expand($0, environment: environment) }
        let outgoing = settings.watch.outgoing.map { WatchSettings.expand($0, environment: environment) }
        var newIncoming = incoming, newOutgoing = outgoing
        let folder: String
        switch edit {
        case .add(let path, let isOutgoing):
            folder = WatchSettings.expand(path, environment: environment)
            if incoming.contains(folder) || outgoing.contains(folder) { return (folder, false) }
            if isOutgoing { newOutgoing.append(folder) } else { newIncoming.append(folder) }
        case .remove(let path):
            folder = WatchSettings.expand(path, environment: environment)
            guard incoming.contains(folder) || outgoing.contains(folder) else {
                throw WatchRefusal(description: "\(folder) is not watched; see 'quarantine watch list'")
            }
            newIncoming.removeAll { $0 == folder }
            newOutgoing.removeAll { $0 == folder }
        }
        var text = ConfigurationFile.setting("incoming", to: ConfigurationFile.tomlArray(newIncoming), inTable: "watch", of: self.text)
        text = ConfigurationFile.setting("outgoing", to: ConfigurationFile.tomlArray(newOutgoing), inTable: "watch", of: text)
        try save(text)
        return (folder, true)
    }
}
