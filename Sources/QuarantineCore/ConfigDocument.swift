import CTOMLGuard
import Glibc
import TOMLKit
import Locking

/// A configuration value read out of a TOML document into plain Swift values.
public indirect enum ConfigValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case array([ConfigValue])
    case table(ConfigTable)
    /// A date, time or date-time, as TOML writes it (no setting takes one).
    case other(String)

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var int: Int? { if case .int(let n) = self { n } else { nil } }
    public var double: Double? { if case .double(let d) = self { d } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var array: [ConfigValue]? { if case .array(let a) = self { a } else { nil } }
    public var table: ConfigTable? { if case .table(let t) = self { t } else { nil } }
}

/// A TOML table: its keys in the document's order, and their values.
public struct ConfigTable: Sendable, Equatable {
    public private(set) var keys: [String] = []
    private var values: [String: ConfigValue] = [:]

    public subscript(key: String) -> ConfigValue? { values[key] }

    mutating func set(_ key: String, _ value: ConfigValue) {
        if values.updateValue(value, forKey: key) == nil { keys.append(key) }
    }
}

/// Parses configuration texts with TOMLKit, once each.
///
/// TOMLKit 0.6.0 frees nothing it parses: a `TOMLTable` has no deinitializer, every value accessor
/// returns memory it mallocs, and a parse error's description is never freed (found by
/// `make fuzz`'s config harness under LeakSanitizer). The guardian service reads the
/// configuration on each request, and the agent and the CLI on each command, so reading through
/// TOMLKit every time grew a long-running process with every read. Here a text is parsed and
/// converted to plain values once and the result kept (the last few texts), so reading an
/// unchanged configuration again costs no parse and leaks nothing; only a new text leaks
/// TOMLKit's copy of it, once.
public enum ConfigDocument {
    /// The parse failure, in TOMLKit's (toml++'s) words.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// How many distinct texts are kept (a configuration rarely has more than two versions alive:
    /// the file and an edit being checked; a guardian service reads one per protected account).
    static let kept = 16
    private static let cache = Locked<[(text: String, result: Result<ConfigTable, ParseError>)]>([])
    /// Tests: how many times one text was handed to TOMLKit (other suites parse their own texts
    /// at the same time, so a global count would not tell).
    private static let watched = Locked<(text: String?, parses: Int)>((nil, 0))

    /// Counts from now on the parses of `text` (tests).
    static func countParses(of text: String) { watched.withLock { $0 = (text, 0) } }
    /// The parses of the text given to ``countParses(of:)`` since then (tests).
    static var countedParses: Int { watched.withLock { $0.parses } }

    /// The document's top-level table.
    public static func parse(_ text: String) throws(ParseError) -> ConfigTable {
        if let hit = cache.withLock({ $0.first { $0.text == text }?.result }) { return try hit.get() }
        let result = parseUncached(text)
        cache.withLock { entries in
            if !entries.contains(where: { $0.text == text }) {
                entries.append((text, result))
                if entries.count > kept { entries.removeFirst(entries.count - kept) }
            }
        }
        return try result.get()
    }

    /// Parses without the cache (every call leaks TOMLKit's copy of the text: tests and the fuzzer).
    static func parseUncached(_ text: String) -> Result<ConfigTable, ParseError> {
        watched.withLock { if $0.text == text { $0.parses += 1 } }
        do {
            try checkCharacters(text)
            try survives(text)
            return .success(convert(try TOMLTable(string: text)))
        } catch let error as ParseError {
            return .failure(error)
        } catch {
            return .failure(ParseError(description: "\(error)"))
        }
    }

    /// Refuses, before toml++ sees the text, what toml++ 3 (inside TOMLKit 0.6.0) asserts on
    /// instead of reporting, which aborts the process even in a release build (found by
    /// `make fuzz`, config harness; the agent died at start on such a file):
    /// - a table header whose name starts with anything but a bare-key character or a quote
    ///   (`[!agent]`, or `[` then U+FFFD): toml++'s `parse_key` asserts on its first character;
    /// - a `}` where an array expects a value (`[2, }`): toml++'s `parse_value` asserts;
    /// - more generally any character outside ASCII outside strings and comments (TOML 1.0
    ///   allows none there: keys are ASCII).
    /// Strings, comments and the brackets of values (nested arrays on their own lines) are
    /// followed, so valid TOML is never refused here.
    static func checkCharacters(_ text: String) throws(ParseError) {
        enum State { case plain, comment, basic, literal, multilineBasic, multilineLiteral }
        let b = Array(text.utf8)
        var state = State.plain
        var line = 1, i = 0
        /// Brackets and braces open in a value (after `=`), innermost last; a `[` first on a line
        /// outside any value starts a table header. `arrayValueNext`: the innermost is an array
        /// and a value (or its `]`) comes next.
        var open: [UInt8] = [], inValue = false, lineStart = true, arrayValueNext = false
        func starts(_ quote: UInt8, count: Int) -> Bool {
            i + count <= b.count && b[i..<(i + count)].allSatisfy { $0 == quote }
        }
        func isBlank(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }
        func checkHeader() throws(ParseError) {
            var j = i + 1
            while j < b.count, isBlank(b[j]) { j += 1 }
            if j < b.count, b[j] == UInt8(ascii: "[") { j += 1; while j < b.count, isBlank(b[j]) { j += 1 } }
            guard j < b.count else { return }
            let c = b[j]
            let bare = (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F || c == 0x2D
            guard bare || c == UInt8(ascii: "]") || c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") else {
                throw ParseError(description: "line \(line): a table header's name must start with a letter, digit, '_', '-' or a quote")
            }
        }
        while i < b.count {
            let c = b[i]
            if c == 0x0A { line += 1 }
            switch state {
            case .plain:
                if c == 0x0A {
                    lineStart = true
                    if open.isEmpty { inValue = false }
                } else if !isBlank(c) && c != 0x0D && c != UInt8(ascii: "#") {
                    defer { lineStart = false }
                    if arrayValueNext && c == UInt8(ascii: "}") {
                        throw ParseError(description: "line \(line): '}' where an array needs a value or its closing ']'")
                    }
                    arrayValueNext = false
                    if c == UInt8(ascii: "=") && open.isEmpty { inValue = true }
                    if c == UInt8(ascii: "[") || c == UInt8(ascii: "{") {
                        if !open.isEmpty || inValue {
                            open.append(c)
                            arrayValueNext = c == UInt8(ascii: "[")
                        } else if c == UInt8(ascii: "[") && lineStart {
                            try checkHeader()
                        }
                    } else if (c == UInt8(ascii: "]") || c == UInt8(ascii: "}")) && !open.isEmpty {
                        open.removeLast()
                    } else if c == UInt8(ascii: ",") && open.last == UInt8(ascii: "[") {
                        arrayValueNext = true
                    }
                }
                if c >= 0x80 {
                    throw ParseError(description: "line \(line): a character outside ASCII that is not in a string or a comment (TOML keys are ASCII; quote the value)")
                } else if c == UInt8(ascii: "#") {
                    state = .comment
                } else if c == UInt8(ascii: "\"") {
                    if starts(c, count: 3) { state = .multilineBasic; i += 2 } else { state = .basic }
                } else if c == UInt8(ascii: "'") {
                    if starts(c, count: 3) { state = .multilineLiteral; i += 2 } else { state = .literal }
                }
            case .comment:
                if c == 0x0A { state = .plain }
            case .basic:
                if c == UInt8(ascii: "\\") { i += 1; if i < b.count, b[i] == 0x0A { line += 1 } }
                else if c == UInt8(ascii: "\"") || c == 0x0A { state = .plain }
            case .literal:
                if c == UInt8(ascii: "'") || c == 0x0A { state = .plain }
            case .multilineBasic:
                if c == UInt8(ascii: "\\") { i += 1; if i < b.count, b[i] == 0x0A { line += 1 } }
                else if starts(UInt8(ascii: "\""), count: 3) { state = .plain; i += 2 }
            case .multilineLiteral:
                if starts(UInt8(ascii: "'"), count: 3) { state = .plain; i += 2 }
            }
            i += 1
        }
    }

    /// The net under ``checkCharacters(_:)``: toml++ asserts on more malformed documents than
    /// that check knows (the fuzzer kept finding new ones: `1979-05-27Tx07:32:00Z` asserted in
    /// `parse_time`); parsed once under CTOMLGuard, an assertion refuses the text instead of
    /// aborting the process.
    static func survives(_ text: String) throws(ParseError) {
        var assertion: UnsafeMutablePointer<CChar>? = nil
        let survived = text.withCString { qtoml_survives($0, &assertion) }
        guard !survived else { return }
        let expression = assertion.map { String(cString: $0) } ?? "?"
        free(assertion)
        throw ParseError(description: "malformed beyond what the TOML parser can report (it stopped on its own check `\(expression)`)")
    }

    private static func convert(_ table: TOMLTable) -> ConfigTable {
        var result = ConfigTable()
        for key in table.keys {
            if let value = table[key] { result.set(key, convert(value)) }
        }
        return result
    }

    private static func convert(_ value: TOMLValueConvertible) -> ConfigValue {
        switch value.type {
        case .string: return value.string.map(ConfigValue.string) ?? .other("")
        case .int: return value.int.map(ConfigValue.int) ?? .other("")
        case .double: return value.double.map(ConfigValue.double) ?? .other("")
        case .bool: return value.bool.map(ConfigValue.bool) ?? .other("")
        case .table: return value.table.map { .table(convert($0)) } ?? .other("")
        case .array: return value.array.map { .array($0.map(convert)) } ?? .other("")
        default: return .other(value.debugDescription)
        }
    }
}
