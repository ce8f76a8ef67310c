import Foundation
import PathBytes
import Logging
import QuarantineAgent

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

/// The process's one logging set-up (swift-log takes one bootstrap per process; libraries only
/// take a Logger): the services (the agent, a guardian service) log journald-friendly lines
/// with syslog priorities (``JournalLogHandler``) from `info`; the other commands (scan) plain
/// lines on standard error from `warning`. `requested` (`--log-level`), else
/// `QUARANTINE_LOG_LEVEL`, overrides the level.
enum LoggingSetup {
    enum Style { case service, command }

    static func bootstrap(_ style: Style, requested: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
        let level = (requested ?? environment["QUARANTINE_LOG_LEVEL"]).flatMap(Logger.Level.init(rawValue:)) ?? (style == .service ? .info : .warning)
        switch style {
        case .service:
            LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level, environment: environment) }
        case .command:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
