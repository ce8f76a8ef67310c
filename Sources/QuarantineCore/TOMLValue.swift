/// A value read out of a TOML text, with the line it starts on (for errors that name the line).
public struct TOMLValue: Sendable, Equatable {
    /// What the value is.
    public indirect enum Kind: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        /// A date, time or date-time, as written (no setting takes one).
        case dateTime(String)
        case array([TOMLValue])
        case table(TOMLTable)
    }

    public var kind: Kind
    /// The line (from 1) the value starts on.
    public var line: Int

    public init(_ kind: Kind, line: Int) {
        self.kind = kind
        self.line = line
    }

    public var string: String? { if case .string(let s) = kind { s } else { nil } }
    public var int: Int? { if case .integer(let n) = kind { n } else { nil } }
    /// A float, or an integer read as one (`max_gap = 2` is 2.0).
    public var double: Double? {
        switch kind {
        case .float(let d): d
        case .integer(let n): Double(n)
        default: nil
        }
    }
    public var bool: Bool? { if case .boolean(let b) = kind { b } else { nil } }
    public var array: [TOMLValue]? { if case .array(let a) = kind { a } else { nil } }
    public var table: TOMLTable? { if case .table(let t) = kind { t } else { nil } }

    /// The value as written, shortened, for error messages: `"60"` (a string), `-1`, `a list`.
    public var shortText: String {
        switch kind {
        case .string(let s): return s.count > 40 ? "a string" : ConfigurationFile.tomlString(s)
        case .integer(let n): return "\(n)"
        case .float(let d): return "\(d)"
        case .boolean(let b): return "\(b)"
        case .dateTime(let t): return t
        case .array: return "a list"
        case .table: return "a table"
        }
    }

    /// The type in words, for error messages.
    public var typeName: String {
        switch kind {
        case .string: "a string"
        case .integer: "a whole number"
        case .float: "a number with a fraction"
        case .boolean: "true or false"
        case .dateTime: "a date or time"
        case .array: "a list"
        case .table: "a table"
        }
    }
}

/// A TOML table: its keys in the document's order, their values, and the line it starts on.
public struct TOMLTable: Sendable, Equatable {
    public private(set) var keys: [String] = []
    private var values: [String: TOMLValue] = [:]
    /// The line of the table's header (or of its first key; 1 for the top level).
    public var line: Int

    public init(line: Int = 1) { self.line = line }

    public subscript(key: String) -> TOMLValue? { values[key] }

    /// Sets `key`, keeping the order of first definition.
    mutating func set(_ key: String, _ value: TOMLValue) {
        if values.updateValue(value, forKey: key) == nil { keys.append(key) }
    }
}
