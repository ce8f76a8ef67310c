/// File names are bytes on Linux, not text: a name may be any bytes but `/` and NUL, and a
/// sender can choose `evil-\xff\xfe.png`. The program keeps every path in a `String` in a
/// lossless form, so that such a file is watched, analysed, hidden, recorded and put back under
/// exactly its own bytes:
///
/// - valid UTF-8 stays as it is;
/// - each byte that is not part of valid UTF-8 becomes the private-use character U+F700 + byte
///   (U+F780...U+F7FF);
/// - a name that really contains one of those characters has its UTF-8 bytes escaped the same
///   way, so decoding is exact for every name.
///
/// ``cString(_:)`` gives the bytes back for a system call; ``display(_:)`` escapes a path for
/// people (text, JSON, notifications, the log).
public enum PathBytes {
    static let base: UInt32 = 0xF700
    static let escapeRange: ClosedRange<UInt32> = 0xF780...0xF7FF

    /// The lossless string for a path's bytes.
    public static func string<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let array = Array(bytes)
        if let text = String(validating: array, as: UTF8.self), !text.unicodeScalars.contains(where: { escapeRange.contains($0.value) }) {
            return text
        }
        var scalars = String.UnicodeScalarView()
        var i = 0
        while i < array.count {
            if let (scalar, length) = decodeOne(array, at: i), !escapeRange.contains(scalar.value) {
                scalars.append(scalar)
                i += length
            } else if let (scalar, length) = decodeOne(array, at: i) {
                // A real U+F780...U+F7FF: its own bytes, escaped, so it cannot be mistaken.
                for byte in array[i..<(i + length)] { scalars.append(Unicode.Scalar(base + UInt32(byte))!) }
                _ = scalar
                i += length
            } else {
                scalars.append(Unicode.Scalar(base + UInt32(array[i]))!)
                i += 1
            }
        }
        return String(scalars)
    }

    /// The lossless string for a C string (a name from `readdir` or inotify).
    public static func string(cString pointer: UnsafePointer<CChar>) -> String {
        let length = strlenBytes(pointer)
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { string(UnsafeBufferPointer(start: $0, count: length)) }
    }

    /// A path's exact bytes.
    public static func bytes(_ path: String) -> [UInt8] {
        guard path.unicodeScalars.contains(where: { escapeRange.contains($0.value) }) else { return Array(path.utf8) }
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            if escapeRange.contains(scalar.value) {
                out.append(UInt8(scalar.value - base))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// The path's bytes, NUL-terminated, to pass where C wants a path (`open(cString(p), ...)`).
    public static func cString(_ path: String) -> [CChar] {
        bytes(path).map { CChar(bitPattern: $0) } + [0]
    }

    /// Whether the path holds bytes that are not valid UTF-8.
    public static func hasRawBytes(_ path: String) -> Bool {
        path.unicodeScalars.contains { escapeRange.contains($0.value) }
    }

    /// The path for people, one documented way everywhere: printable text as it is; a byte that
    /// is not UTF-8 as `\xFF`; control characters as `\n`, `\t`, `\r` or `\x1B` (Unicode's
    /// own C1 controls and line separators as `\u{85}`); a backslash as `\\`. The same name always reads the same, and a newline never splits a line.
    public static func display(_ path: String) -> String {
        var out = ""
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            switch scalar.value {
            case escapeRange: out += "\\x" + hex(UInt8(scalar.value - base))
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x09: out += "\\t"
            case 0x0D: out += "\\r"
            case 0..<0x20, 0x7F: out += "\\x" + hex(UInt8(scalar.value))
            case 0x80..<0xA0, 0x2028, 0x2029: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` with only the bytes that are not UTF-8 written as `\xFF` (for whole messages,
    /// whose own newlines are meant).
    public static func escapingRawBytes(_ text: String) -> String {
        guard hasRawBytes(text) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if escapeRange.contains(scalar.value) { out += "\\x" + hex(UInt8(scalar.value - base)) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// The exact bytes, base64-encoded (the `*_bytes` fields of `--json`).
    public static func base64(_ path: String) -> String {
        let bytes = Self.bytes(path)
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let chunk = UInt32(bytes[i]) << 16 | (n > 1 ? UInt32(bytes[i + 1]) << 8 : 0) | (n > 2 ? UInt32(bytes[i + 2]) : 0)
            for k in 0..<4 {
                out.append(k <= n ? table[Int((chunk >> UInt32(18 - 6 * k)) & 0x3F)] : UInt8(ascii: "="))
            }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    static func strlenBytes(_ pointer: UnsafePointer<CChar>) -> Int {
        var n = 0
        while pointer[n] != 0 { n += 1 }
        return n
    }

    /// One UTF-8 scalar at `i`, or nil if the bytes there are not valid UTF-8.
    static func decodeOne(_ b: [UInt8], at i: Int) -> (Unicode.Scalar, Int)? {
        let first = b[i]
        let length: Int
        switch first {
        case 0x00...0x7F: return (Unicode.Scalar(first), 1)
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return nil
        }
        guard i + length <= b.count else { return nil }
        guard let text = String(validating: b[i..<(i + length)], as: UTF8.self), let scalar = text.unicodeScalars.first,
              text.unicodeScalars.count == 1 else { return nil }
        return (scalar, length)
    }
}
