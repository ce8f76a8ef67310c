/// A strict TOML 1.0 reader for the configuration, in Swift: every value with its line, and every
/// malformed text an error naming the line, never a trap, an abort or a leak.
///
/// It replaces TOMLKit 0.6.0 (toml++ 3 in C++), which asserted (aborting the process, release
/// builds too) on malformed texts the fuzzer kept finding, and leaked every parse; the guard
/// that caught its assertions replaced glibc's `__assert_fail` for the whole process and jumped
/// across C++ frames. No pure-Swift TOML reader is among the packages this project may use, and
/// apple/swift-configuration reads JSON and YAML only (issue 29; `docs/configuration.md`).
///
/// The whole of TOML 1.0 is read (dotted and quoted keys, tables, arrays of tables, inline
/// tables, every string, integer and float form, dates and times), with its rules on redefining
/// keys and tables. Bounds against hostile texts: nesting deeper than ``maxDepth`` is refused
/// (recursion stays shallow), and integers that do not fit 64 bits are an error.
public enum TOMLParser {
    /// Why a text is not TOML, with the line.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
        public init(line: Int, message: String) {
            self.line = line
            self.message = message
        }
    }

    /// Arrays and inline tables nested deeper than this are refused.
    public static let maxDepth = 32

    /// The document's top-level table.
    public static func parse(_ text: String) throws(ParseError) -> TOMLTable {
        var reader = Reader(bytes: Array(text.utf8))
        return try reader.document()
    }
}

// MARK: - The reader

extension TOMLParser {
    /// A table being built: how it was made decides what may still be added to it.
    final class Node {
        enum Origin { case root, header, implicit, dotted, arrayElement }
        enum Entry {
            case value(TOMLValue)
            case table(Node)
            case tables([Node])
        }
        var origin: Origin
        var line: Int
        var entries: [String: Entry] = [:]
        var order: [String] = []
        init(_ origin: Origin, line: Int) {
            self.origin = origin
            self.line = line
        }
        func set(_ key: String, _ entry: Entry) {
            if entries.updateValue(entry, forKey: key) == nil { order.append(key) }
        }
        func frozen() -> TOMLTable {
            var table = TOMLTable(line: line)
            for key in order {
                switch entries[key] {
                case .value(let value): table.set(key, value)
                case .table(let node): table.set(key, TOMLValue(.table(node.frozen()), line: node.line))
                case .tables(let nodes):
                    table.set(key, TOMLValue(.array(nodes.map { TOMLValue(.table($0.frozen()), line: $0.line) }), line: nodes.first?.line ?? line))
                case nil: break
                }
            }
            return table
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var i = 0
        var line = 1

        init(bytes: [UInt8]) { self.bytes = bytes }

        // MARK: Characters

        var atEnd: Bool { i >= bytes.count }
        func peek(_ offset: Int = 0) -> UInt8? { i + offset < bytes.count ? bytes[i + offset] : nil }
        func fail(_ message: String) -> ParseError { ParseError(line: line, message: message) }
        static let quote = UInt8(ascii: "\""), apostrophe = UInt8(ascii: "'"), hash = UInt8(ascii: "#"), backslash = UInt8(ascii: "\\")
        static let tab: UInt8 = 0x09, newline: UInt8 = 0x0A, cr: UInt8 = 0x0D, space: UInt8 = 0x20

        mutating func skipBlanks() { while let c = peek(), c == Self.space || c == Self.tab { i += 1 } }

        /// A newline (LF or CRLF) here: consumed.
        mutating func newline() throws(ParseError) -> Bool {
            if peek() == Self.newline { i += 1; line += 1; return true }
            if peek() == Self.cr {
                guard peek(1) == Self.newline else { throw fail("a carriage return not followed by a line feed") }
                i += 2; line += 1; return true
            }
            return false
        }

        /// A comment here (to the end of the line, not the newline): consumed.
        mutating func comment() throws(ParseError) {
            guard peek() == Self.hash else { return }
            while let c = peek(), c != Self.newline {
                if c == Self.cr, peek(1) == Self.newline { return }
                if (c < 0x20 && c != Self.tab) || c == 0x7F { throw fail("a control character (U+\(hex(c))) in a comment") }
                i += 1
            }
        }

        /// Blanks, comments and newlines (between array elements).
        mutating func skipBlankLines() throws(ParseError) {
            while true {
                skipBlanks()
                try comment()
                if try !newline() { return }
            }
        }

        /// Blanks and a comment, then the end of the line or of the text.
        mutating func endOfLine() throws(ParseError) {
            skipBlanks()
            try comment()
            if !atEnd, try !newline() {
                throw fail("unexpected \(describe(peek())) after the value (one key = value, or one [table], per line)")
            }
        }

        func describe(_ c: UInt8?) -> String {
            guard let c else { return "the end of the text" }
            if c == Self.newline || c == Self.cr { return "the end of the line" }
            if c >= 0x21 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))'" }
            return "character U+\(hex(c))"
        }

        func hex(_ c: UInt8) -> String {
            let digits = String(c, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - digits.count) + digits
        }

        // MARK: Document

        mutating func document() throws(ParseError) -> TOMLTable {
            let root = Node(.root, line: 1)
            var current = root
            while true {
                try skipBlankLines()
                guard let c = peek() else { break }
                if c == UInt8(ascii: "[") {
                    let headerLine = line
                    let isArray = peek(1) == UInt8(ascii: "[")
                    i += isArray ? 2 : 1
                    skipBlanks()
                    let path = try key()
                    skipBlanks()
                    guard peek() == UInt8(ascii: "]"), !isArray || peek(1) == UInt8(ascii: "]") else {
                        throw fail(isArray ? "an array-of-tables header must end with ']]'" : "a table header must end with ']'")
                    }
                    i += isArray ? 2 : 1
                    current = try isArray ? appendTable(path, to: root, line: headerLine) : defineTable(path, in: root, line: headerLine)
                    try endOfLine()
                } else {
                    try keyValue(into: current, depth: 0)
                    try endOfLine()
                }
            }
            return root.frozen()
        }

        /// `[a.b.c]`: a new table (or one so far only implied by a deeper header).
        mutating func defineTable(_ path: [String], in root: Node, line headerLine: Int) throws(ParseError) -> Node {
            let parent = try walk(path.dropLast(), from: root, line: headerLine)
            let name = path[path.count - 1]
            switch parent.entries[name] {
            case nil:
                let node = Node(.header, line: headerLine)
                parent.set(name, .table(node))
                return node
            case .table(let node) where node.origin == .implicit:
                node.origin = .header
                node.line = headerLine
                return node
            default:
                throw ParseError(line: headerLine, message: "[\(path.joined(separator: "."))] is defined twice")
            }
        }

        /// `[[a.b]]`: a new table at the end of the array `a.b`.
        mutating func appendTable(_ path: [String], to root: Node, line headerLine: Int) throws(ParseError) -> Node {
            let parent = try walk(path.dropLast(), from: root, line: headerLine)
            let name = path[path.count - 1]
            let node = Node(.arrayElement, line: headerLine)
            switch parent.entries[name] {
            case nil: parent.set(name, .tables([node]))
            case .tables(let nodes): parent.entries[name] = .tables(nodes + [node])
            default: throw ParseError(line: headerLine, message: "[[\(path.joined(separator: "."))]]: \(path.joined(separator: ".")) is already a value or a table, not an array of tables")
            }
            return node
        }

        /// The tables above a header, made (implied) where missing; the last of an array of tables.
        mutating func walk(_ path: ArraySlice<String>, from root: Node, line headerLine: Int) throws(ParseError) -> Node {
            var node = root
            for name in path {
                switch node.entries[name] {
                case nil:
                    let child = Node(.implicit, line: headerLine)
                    node.set(name, .table(child))
                    node = child
                case .table(let child): node = child
                case .tables(let nodes):
                    guard let last = nodes.last else { throw ParseError(line: headerLine, message: "\(name): an empty array of tables") }
                    node = last
                case .value:
                    throw ParseError(line: headerLine, message: "\(name) is already a value, not a table")
                }
            }
            return node
        }

        /// `key = value` (the key may be dotted) into `table`.
        mutating func keyValue(into table: Node, depth: Int) throws(ParseError) {
            let keyLine = line
            let path = try key()
            skipBlanks()
            guard peek() == UInt8(ascii: "=") else { throw fail("expected '=' after the key \(path.joined(separator: "."))") }
            i += 1
            skipBlanks()
            let value = try self.value(depth: depth)
            var node = table
            for name in path.dropLast() {
                switch node.entries[name] {
                case nil:
                    let child = Node(.dotted, line: keyLine)
                    node.set(name, .table(child))
                    node = child
                case .table(let child) where child.origin == .dotted:
                    node = child
                default:
                    throw ParseError(line: keyLine, message: "\(path.joined(separator: ".")): \(name) is already defined, and not by dotted keys here")
                }
            }
            let name = path[path.count - 1]
            guard node.entries[name] == nil else {
                throw ParseError(line: keyLine, message: "the key \(path.joined(separator: ".")) is defined twice")
            }
            node.set(name, .value(value))
        }

        // MARK: Keys

        /// A key, dotted or not: its parts.
        mutating func key() throws(ParseError) -> [String] {
            var parts: [String] = []
            while true {
                skipBlanks()
                parts.append(try simpleKey())
                skipBlanks()
                guard peek() == UInt8(ascii: ".") else { return parts }
                i += 1
            }
        }

        static func isBare(_ c: UInt8) -> Bool {
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F || c == 0x2D
        }

        mutating func simpleKey() throws(ParseError) -> String {
            if peek() == Self.quote {
                guard peek(1) != Self.quote || peek(2) != Self.quote else { throw fail("a key cannot be a multi-line string") }
                return try basicString()
            }
            if peek() == Self.apostrophe {
                guard peek(1) != Self.apostrophe || peek(2) != Self.apostrophe else { throw fail("a key cannot be a multi-line string") }
                return try literalString()
            }
            let start = i
            while let c = peek(), Self.isBare(c) { i += 1 }
            guard i > start else {
                throw fail("expected a key (letters, digits, '_' and '-', or a quoted string), found \(describe(peek()))")
            }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }

        // MARK: Values

        mutating func value(depth: Int) throws(ParseError) -> TOMLValue {
            let valueLine = line
            guard let c = peek() else { throw fail("a value is missing at the end of the text") }
            switch c {
            case Self.quote:
                if peek(1) == Self.quote, peek(2) == Self.quote { return TOMLValue(.string(try multilineString(literal: false)), line: valueLine) }
                return TOMLValue(.string(try basicString()), line: valueLine)
            case Self.apostrophe:
                if peek(1) == Self.apostrophe, peek(2) == Self.apostrophe { return TOMLValue(.string(try multilineString(literal: true)), line: valueLine) }
                return TOMLValue(.string(try literalString()), line: valueLine)
            case UInt8(ascii: "["):
                guard depth < TOMLParser.maxDepth else { throw fail("lists nested deeper than \(TOMLParser.maxDepth)") }
                return TOMLValue(.array(try array(depth: depth + 1)), line: valueLine)
            case UInt8(ascii: "{"):
                guard depth < TOMLParser.maxDepth else { throw fail("tables nested deeper than \(TOMLParser.maxDepth)") }
                return TOMLValue(.table(try inlineTable(depth: depth + 1)), line: valueLine)
            default:
                return TOMLValue(try scalar(), line: valueLine)
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> [TOMLValue] {
            i += 1
            var elements: [TOMLValue] = []
            while true {
                try skipBlankLines()
                if peek() == UInt8(ascii: "]") { i += 1; return elements }
                elements.append(try value(depth: depth))
                try skipBlankLines()
                if peek() == UInt8(ascii: ",") { i += 1; continue }
                guard peek() == UInt8(ascii: "]") else { throw fail("expected ',' or ']' in a list, found \(describe(peek()))") }
                i += 1
                return elements
            }
        }

        mutating func inlineTable(depth: Int) throws(ParseError) -> TOMLTable {
            let node = Node(.root, line: line)
            i += 1
            skipBlanks()
            if peek() == UInt8(ascii: "}") { i += 1; return node.frozen() }
            while true {
                try keyValue(into: node, depth: depth)
                skipBlanks()
                if peek() == UInt8(ascii: ",") { i += 1; skipBlanks(); continue }
                guard peek() == UInt8(ascii: "}") else {
                    throw fail("expected ',' or '}' in an inline table (which stays on one line), found \(describe(peek()))")
                }
                i += 1
                return node.frozen()
            }
        }

        // MARK: Strings

        /// A control character other than a tab, refused in every string.
        mutating func checkControl(_ c: UInt8) throws(ParseError) {
            if (c < 0x20 && c != Self.tab) || c == 0x7F { throw fail("a control character (U+\(hex(c))) in a string: write it as an escape") }
        }

        mutating func basicString() throws(ParseError) -> String {
            i += 1
            var out: [UInt8] = []
            while true {
                guard let c = peek() else { throw fail("a string is not closed") }
                if c == Self.quote { i += 1; return String(decoding: out, as: UTF8.self) }
                if c == Self.newline || c == Self.cr { throw fail("a string is not closed before the end of the line") }
                if c == Self.backslash { try escape(into: &out); continue }
                try checkControl(c)
                out.append(c)
                i += 1
            }
        }

        mutating func literalString() throws(ParseError) -> String {
            i += 1
            let start = i
            while true {
                guard let c = peek() else { throw fail("a string is not closed") }
                if c == Self.apostrophe { i += 1; return String(decoding: bytes[start..<(i - 1)], as: UTF8.self) }
                if c == Self.newline || c == Self.cr { throw fail("a string is not closed before the end of the line") }
                try checkControl(c)
                i += 1
            }
        }

        mutating func multilineString(literal: Bool) throws(ParseError) -> String {
            let delimiter = literal ? Self.apostrophe : Self.quote
            i += 3
            _ = try newline()
            var out: [UInt8] = []
            while true {
                guard let c = peek() else { throw fail("a multi-line string is not closed") }
                if c == delimiter, peek(1) == delimiter, peek(2) == delimiter {
                    // Up to two more quotes belong to the string: `""""` ends with one in it.
                    var run = 3
                    while peek(run) == delimiter, run < 5 { run += 1 }
                    out += Array(repeating: delimiter, count: run - 3)
                    i += run
                    return String(decoding: out, as: UTF8.self)
                }
                if try newline() { out.append(Self.newline); continue }
                if !literal && c == Self.backslash {
                    // A backslash at the end of a line trims the newline and the blanks after it.
                    var j = i + 1
                    while j < bytes.count, bytes[j] == Self.space || bytes[j] == Self.tab { j += 1 }
                    if j < bytes.count, bytes[j] == Self.newline || (bytes[j] == Self.cr && j + 1 < bytes.count && bytes[j + 1] == Self.newline) {
                        i = j
                        while true {
                            skipBlanks()
                            if try !newline() { break }
                        }
                        continue
                    }
                    try escape(into: &out)
                    continue
                }
                try checkControl(c)
                out.append(c)
                i += 1
            }
        }

        /// A backslash escape in a basic string.
        mutating func escape(into out: inout [UInt8]) throws(ParseError) {
            i += 1
            guard let c = peek() else { throw fail("a string ends in a backslash") }
            i += 1
            switch c {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "r"): out.append(0x0D)
            case Self.quote: out.append(Self.quote)
            case Self.backslash: out.append(Self.backslash)
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                let count = c == UInt8(ascii: "u") ? 4 : 8
                guard i + count <= bytes.count,
                      let code = UInt32(String(decoding: bytes[i..<(i + count)], as: UTF8.self), radix: 16),
                      bytes[i..<(i + count)].allSatisfy({ Self.isHexDigit($0) }),
                      let scalar = Unicode.Scalar(code) else {
                    throw fail("\\\(Character(Unicode.Scalar(c))) needs \(count) hexadecimal digits naming a Unicode scalar value")
                }
                i += count
                out += Array(String(Character(scalar)).utf8)
            default:
                throw fail("unknown escape \\\(describe(c)) in a string (known: \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)")
            }
        }

        static func isHexDigit(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
        }

        // MARK: Numbers, booleans, dates

        static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

        /// true, false, a number, or a date/time.
        mutating func scalar() throws(ParseError) -> TOMLValue.Kind {
            let start = i
            // A date-time may hold one space between its date and time (1979-05-27 07:32:00).
            while let c = peek(), Self.isBare(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":") {
                i += 1
                if c >= 0x30 && c <= 0x39, peek() == Self.space, let next = peek(1), Self.isDigit(next),
                   i - start == 10, bytes[start + 4] == UInt8(ascii: "-") { i += 1 }
            }
            guard i > start else { throw fail("expected a value, found \(describe(peek()))") }
            let token = String(decoding: bytes[start..<i], as: UTF8.self)
            switch token {
            case "true": return .boolean(true)
            case "false": return .boolean(false)
            case "inf", "+inf": return .float(.infinity)
            case "-inf": return .float(-.infinity)
            case "nan", "+nan", "-nan": return .float(.nan)
            default: break
            }
            let t = Array(token.utf8)
            if t.count >= 5, Self.isDigit(t[0]), (t.count > 4 && t[4] == UInt8(ascii: "-")) || (t.count > 2 && t[2] == UInt8(ascii: ":")) {
                guard Self.isDateTime(t) else { throw fail("\(token) is not a valid date or time") }
                return .dateTime(token)
            }
            if let n = try integer(t, token) { return .integer(n) }
            return .float(try float(t, token))
        }

        /// A whole number (decimal with sign, or 0x/0o/0b), or nil when the token has a fraction
        /// or an exponent.
        mutating func integer(_ t: [UInt8], _ token: String) throws(ParseError) -> Int? {
            let radix: Int? = switch t.count > 2 && t[0] == UInt8(ascii: "0") ? t[1] : 0 {
            case UInt8(ascii: "x"): 16
            case UInt8(ascii: "o"): 8
            case UInt8(ascii: "b"): 2
            default: nil
            }
            if let radix {
                let digits = try Self.withoutUnderscores(Array(t[2...]), token, fail: fail)
                guard let n = Int(digits, radix: radix) else { throw fail("\(token) is not a valid number (or does not fit 64 bits)") }
                return n
            }
            if t.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) { return nil }
            var body = t[...]
            if let sign = body.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { body = body.dropFirst() }
            guard let first = body.first, Self.isDigit(first) else { throw fail("\(token) is not a valid value (a string needs quotes)") }
            if first == UInt8(ascii: "0"), body.count > 1 { throw fail("\(token): a number cannot start with 0") }
            let digits = try Self.withoutUnderscores(Array(body), token, fail: fail)
            guard let n = Int((t[0] == UInt8(ascii: "-") ? "-" : "") + digits) else {
                throw fail("\(token) is not a valid number (or does not fit 64 bits)")
            }
            return n
        }

        /// `3.14`, `1e6`, `-2.5E-3`, with underscores between digits.
        mutating func float(_ t: [UInt8], _ token: String) throws(ParseError) -> Double {
            var body = t[...]
            var sign = ""
            if let s = body.first, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { sign = s == UInt8(ascii: "-") ? "-" : ""; body = body.dropFirst() }
            let exponentAt = body.firstIndex { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
            let mantissa = body[..<(exponentAt ?? body.endIndex)]
            let parts = mantissa.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ Self.isDigit($0) || $0 == UInt8(ascii: "_") }) else {
                throw fail("\(token) is not a valid value (a string needs quotes)")
            }
            if whole.first == UInt8(ascii: "0"), whole.count > 1 { throw fail("\(token): a number cannot start with 0") }
            var text = sign + (try Self.withoutUnderscores(Array(whole), token, fail: fail))
            if parts.count == 2 {
                guard !parts[1].isEmpty, parts[1].allSatisfy({ Self.isDigit($0) || $0 == UInt8(ascii: "_") }) else {
                    throw fail("\(token): a '.' needs digits on both sides")
                }
                text += "." + (try Self.withoutUnderscores(Array(parts[1]), token, fail: fail))
            }
            if let exponentAt {
                var exponent = body[(exponentAt + 1)...]
                var expSign = ""
                if let s = exponent.first, s == UInt8(ascii: "+") || s == UInt8(ascii: "-") { expSign = s == UInt8(ascii: "-") ? "-" : ""; exponent = exponent.dropFirst() }
                guard !exponent.isEmpty, exponent.allSatisfy({ Self.isDigit($0) || $0 == UInt8(ascii: "_") }) else {
                    throw fail("\(token): an exponent needs digits")
                }
                text += "e" + expSign + (try Self.withoutUnderscores(Array(exponent), token, fail: fail))
            }
            guard let value = Double(text) else { throw fail("\(token) is not a valid number") }
            return value
        }

        /// The digits with their underscores removed; an underscore must stand between two digits.
        static func withoutUnderscores(_ t: [UInt8], _ token: String, fail: (String) -> ParseError) throws(ParseError) -> String {
            guard let first = t.first, let last = t.last, first != UInt8(ascii: "_"), last != UInt8(ascii: "_") else {
                throw fail("\(token) is not a valid number")
            }
            var out: [UInt8] = []
            var previousUnderscore = false
            for c in t {
                if c == UInt8(ascii: "_") {
                    if previousUnderscore { throw fail("\(token): an underscore must stand between two digits") }
                    previousUnderscore = true
                    continue
                }
                guard isHexDigit(c) else { throw fail("\(token) is not a valid number") }
                previousUnderscore = false
                out.append(c)
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// RFC 3339 as TOML takes it: a date, a time, a local date-time or one with an offset.
        static func isDateTime(_ t: [UInt8]) -> Bool {
            var k = 0
            func number(_ count: Int, _ range: ClosedRange<Int>) -> Bool {
                guard k + count <= t.count, t[k..<(k + count)].allSatisfy(isDigit) else { return false }
                let n = t[k..<(k + count)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
                k += count
                return range.contains(n)
            }
            func take(_ c: Unicode.Scalar) -> Bool {
                guard k < t.count, t[k] == UInt8(ascii: c) else { return false }
                k += 1
                return true
            }
            func time() -> Bool {
                guard number(2, 0...23), take(":"), number(2, 0...59), take(":"), number(2, 0...60) else { return false }
                if take(".") {
                    let start = k
                    while k < t.count, isDigit(t[k]) { k += 1 }
                    if k == start { return false }
                }
                return true
            }
            if t.count > 2, t[2] == UInt8(ascii: ":") { return time() && k == t.count }
            guard number(4, 0...9999), take("-"), number(2, 1...12), take("-"), number(2, 1...31) else { return false }
            if k == t.count { return true }
            guard k < t.count, [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(t[k]) else { return false }
            k += 1
            guard time() else { return false }
            if k == t.count { return true }
            if take("Z") || take("z") { return k == t.count }
            guard k < t.count, t[k] == UInt8(ascii: "+") || t[k] == UInt8(ascii: "-") else { return false }
            k += 1
            return number(2, 0...23) && take(":") && number(2, 0...59) && k == t.count
        }
    }
}
