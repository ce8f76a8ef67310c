import Foundation

/// One setting's value as the configuration file writes it (`false` for a threshold that is off).
public enum ConfigurationValue: Sendable, Equatable, Codable {
    case bool(Bool)
    case int(Int)
    case number(Double)
    case string(String)
    case strings([String])
    /// A threshold or bound turned off: `false` in the file.
    case off

    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var int: Int? { if case .int(let n) = self { n } else { nil } }
    /// A number (a whole number counts); nil when off.
    public var double: Double? {
        switch self {
        case .number(let d): d
        case .int(let n): Double(n)
        default: nil
        }
    }
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var strings: [String]? { if case .strings(let list) = self { list } else { nil } }

    /// The value in TOML.
    public var toml: String {
        switch self {
        case .bool(let b): "\(b)"
        case .int(let n): "\(n)"
        case .number(let d): d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
        case .string(let s): ConfigurationFile.tomlString(s)
        case .strings(let list): ConfigurationFile.tomlArray(list)
        case .off: "false"
        }
    }

    /// The value in a Markdown table cell.
    public var markdown: String { "`\(toml.replacingOccurrences(of: "|", with: "\\|"))`" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let b = try? container.decode(Bool.self) { self = b ? .bool(true) : .off; return }
        if let n = try? container.decode(Int.self) { self = .int(n); return }
        if let d = try? container.decode(Double.self) { self = .number(d); return }
        if let s = try? container.decode(String.self) { self = .string(s); return }
        self = .strings(try container.decode([String].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .bool(let b): try container.encode(b)
        case .int(let n): try container.encode(n)
        case .number(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .strings(let list): try container.encode(list)
        case .off: try container.encode(false)
        }
    }
}

/// What values a key takes, in words and as a check.
public enum ConfigurationRule: Sendable {
    /// true or false.
    case flag
    /// A whole number in `range`, of `unit`; `orOff`: false turns it off.
    case whole(ClosedRange<Int>, unit: String, orOff: Bool = false)
    /// A number in `range` (whole numbers count); `orOff`: false turns it off.
    case number(ClosedRange<Double>, unit: String = "", orOff: Bool = false)
    /// One of these strings.
    case choice([String])
    /// A non-empty string.
    case text(String)
    /// A list of non-empty strings.
    case list(String)

    /// The requirement in words: "a whole number of seconds from 1 to 86400".
    public var requirement: String {
        switch self {
        case .flag: return "true or false"
        case .whole(let range, let unit, let orOff):
            return "a whole number\(unit.isEmpty ? "" : " of \(unit)") from \(range.lowerBound) to \(range.upperBound)\(orOff ? ", or false" : "")"
        case .number(let range, let unit, let orOff):
            return "a number\(unit.isEmpty ? "" : " of \(unit)") from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound))\(orOff ? ", or false" : "")"
        case .choice(let values): return values.map { "\"\($0)\"" }.joined(separator: " or ")
        case .text(let what): return what
        case .list(let what): return "a list of \(what), like [\"~/Downloads\"]"
        }
    }

    /// The type column of the documentation.
    public var typeName: String {
        switch self {
        case .flag: "boolean"
        case .whole(let range, let unit, let orOff): "integer \(range.lowerBound)–\(range.upperBound)\(unit.isEmpty ? "" : " (\(unit))")\(orOff ? " or false" : "")"
        case .number(let range, let unit, let orOff): "number \(Self.format(range.lowerBound))–\(Self.format(range.upperBound))\(unit.isEmpty ? "" : " (\(unit))")\(orOff ? " or false" : "")"
        case .choice(let values): values.map { "\"\($0)\"" }.joined(separator: " / ")
        case .text: "string"
        case .list: "list of strings"
        }
    }

    static func format(_ d: Double) -> String { d == d.rounded() ? "\(Int(d))" : "\(d)" }

    /// The value, when `value` meets the rule.
    public func check(_ value: TOMLValue) -> ConfigurationValue? {
        switch self {
        case .flag:
            return value.bool.map(ConfigurationValue.bool)
        case .whole(let range, _, let orOff):
            if orOff, value.bool == false { return .off }
            guard let n = value.int, range.contains(n) else { return nil }
            return .int(n)
        case .number(let range, _, let orOff):
            if orOff, value.bool == false { return .off }
            guard let d = value.double, range.contains(d) else { return nil }
            return .number(d)
        case .choice(let values):
            guard let s = value.string, values.contains(s) else { return nil }
            return .string(s)
        case .text:
            guard let s = value.string, !s.isEmpty else { return nil }
            return .string(s)
        case .list:
            guard let array = value.array else { return nil }
            var result: [String] = []
            for element in array {
                guard let s = element.string, !s.isEmpty else { return nil }
                result.append(s)
            }
            return .strings(result)
        }
    }
}
