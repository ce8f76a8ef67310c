import Foundation
import PathBytes
import Logging

/// An error whose message is shown as is, with exit status 2.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}

/// Writes to standard error.
func printError(_ text: String) {
    Console.current.error(PathBytes.escapingRawBytes(text) + "\n")
}

/// Writes a line to standard output at once (no buffering, so lines and the progress bar interleave well).
func printOut(_ text: String) {
    Console.current.output(PathBytes.escapingRawBytes(text) + "\n")
}

/// Whether a descriptor is a terminal.
func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

/// Whether escape sequences (the progress bar's redrawing, colours) may go to `fd`: only a
/// terminal, and never with NO_COLOR set to anything but the empty string (no-color.org).
func mayDecorate(_ fd: Int32) -> Bool {
    guard isTerminal(fd) else { return false }
    if let value = ProcessInfo.processInfo.environment["NO_COLOR"], !value.isEmpty { return false }
    return true
}

/// Plain log lines on standard error: journald-friendly (no colours, no timestamps of our own
/// when not on a terminal, since journald adds them).
enum LoggingSetup {
    static let once: Void = {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["QUARANTINE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
            return handler
        }
    }()
}
