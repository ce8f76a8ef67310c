import Foundation
import Logging
import PathBytes
import Locking

/// Plain log lines on standard error that journald shows well.
///
/// Under systemd (`JOURNAL_STREAM` set) each line starts with its syslog priority, `<3>` to
/// `<7>`, which journald turns into the entry's priority and strips; no timestamp of our own,
/// since journald adds one. On a terminal or in a file: `2026-11-22T07:40:01.250Z warning: ...`.
/// Metadata is appended as `key=value`, the value in double quotes (with `\"`, `\\` and `\n`
/// escaped) when it holds a space, a quote, an `=` or a control character, so that a path with
/// spaces stays one field.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    let label: String
    let journal: Bool

    private static let output = Locked<Void>(())

    public init(label: String, level: Logger.Level, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.label = label
        self.logLevel = level
        self.journal = environment["JOURNAL_STREAM"] != nil
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var text = ""
        if journal {
            text = "<\(Self.priority(event.level))>"
        } else {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            text = formatter.string(from: Date()) + " \(event.level): "
        }
        text += PathBytes.escapingRawBytes(event.message.description)
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if !merged.isEmpty {
            text += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.field("\($0.value)"))" }.joined(separator: " ")
        }
        // One write per line, so lines from several threads never interleave.
        let line = Array((text.replacingOccurrences(of: "\n", with: " ") + "\n").utf8)
        Self.output.withLock { _ in
            line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
        }
    }

    /// A metadata value as written in a line: bare when that is unambiguous, else quoted.
    static func field(_ value: String) -> String {
        let plain = !value.isEmpty && !PathBytes.hasRawBytes(value)
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0 != "\\" && $0.value != 0x7f }
        if plain { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if PathBytes.hasRawBytes(String(scalar)) {
                    // A path's byte that is not UTF-8: \xFF, as everywhere else (PathBytes.display).
                    out += PathBytes.display(String(scalar))
                } else if scalar.value < 0x20 || scalar.value == 0x7f { out += String(format: "\\x%02X", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// syslog priorities: err 3, warning 4, notice 5, info 6, debug 7.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .critical: return 2
        case .error: return 3
        case .warning: return 4
        case .notice: return 5
        case .info: return 6
        case .debug, .trace: return 7
        }
    }
}
