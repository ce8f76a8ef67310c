import Foundation

/// Where the commands write and what they read from the person: the process's terminal, or (in
/// tests, which run commands in process) a script of answers and a record of what was written.
public struct Console: Sendable {
    /// Writes text (lines end with their newline) to standard output.
    public var output: @Sendable (String) -> Void
    /// Writes text to standard error.
    public var error: @Sendable (String) -> Void
    /// A line from standard input, without its newline; nil at its end.
    public var readLine: @Sendable () -> String?
    /// A line typed without echo after `prompt` (a PIN); nil at the end of input.
    public var readSecret: @Sendable (_ prompt: String) -> String?
    /// Whether a person is at a terminal to answer questions.
    public var interactive: Bool

    public init(output: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void,
                readLine: @escaping @Sendable () -> String?, readSecret: @escaping @Sendable (String) -> String?, interactive: Bool) {
        self.output = output
        self.error = error
        self.readLine = readLine
        self.readSecret = readSecret
        self.interactive = interactive
    }

    /// The process's standard streams and terminal.
    public static let standard = Console(
        output: { FileHandle.standardOutput.write(Data($0.utf8)) },
        error: { FileHandle.standardError.write(Data($0.utf8)) },
        readLine: { Swift.readLine(strippingNewline: true) },
        readSecret: { terminalSecret($0) },
        interactive: isatty(0) == 1)

    /// The console commands use now (a test sets its own for what it runs).
    @TaskLocal public static var current = Console.standard

    /// Reads a line from the terminal without echoing it.
    static func terminalSecret(_ prompt: String) -> String? {
        // Echo goes off before the prompt appears, so even an instant answer is never shown.
        var saved = termios()
        let terminal = isatty(0) == 1 && tcgetattr(0, &saved) == 0
        if terminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        FileHandle.standardError.write(Data(prompt.utf8))
        defer {
            if terminal {
                tcsetattr(0, TCSANOW, &saved)
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        return Swift.readLine(strippingNewline: true)
    }
}

/// Reads a line from the terminal without echoing it.
func readSecret(_ prompt: String) -> String? { Console.current.readSecret(prompt) }

/// Asks a yes/no question on the terminal; false without a terminal.
func confirm(_ question: String) -> Bool {
    guard Console.current.interactive else { return false }
    Console.current.error("\(question) [y/N] ")
    guard let answer = Console.current.readLine() else { return false }
    return ["y", "yes"].contains(answer.lowercased().trimmingCharacters(in: .whitespaces))
}
