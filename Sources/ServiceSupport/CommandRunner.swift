import Foundation

/// What one run of an external command did, word for word.
public struct CommandOutcome: Sendable, Equatable, CustomStringConvertible {
    /// The command line, program first.
    public var command: [String]
    /// The exit status; nil when the program could not be started or was killed
    /// for taking too long (then `standardError` says which).
    public var exitStatus: Int32?
    public var standardOutput: String
    public var standardError: String

    /// True when the program ran and exited 0.
    public var succeeded: Bool { exitStatus == 0 }

    public var description: String {
        let status = exitStatus.map { "exit \($0)" } ?? "did not run"
        let detail = standardError.trimmingCharacters(in: .whitespacesAndNewlines)
        return "`\(command.joined(separator: " "))`: \(status)" + (detail.isEmpty ? "" : ": \(detail)")
    }
}

/// Runs a program with a given environment and collects its output.
public enum CommandRunner {
    /// Finds `name` in the `PATH` of `environment` (or the usual system directories).
    static func locate(_ name: String, environment: [String: String]) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `arguments[0]` (looked up in PATH) with the rest as arguments; never
    /// throws: a program that cannot start is an outcome with no exit status.
    public static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment, timeout: Duration = .seconds(120)) -> CommandOutcome {
        guard let executable = locate(arguments[0], environment: environment) else {
            return CommandOutcome(command: arguments, exitStatus: nil, standardOutput: "",
                                  standardError: "\(arguments[0]) was not found in PATH (\(environment["PATH"] ?? "unset"))")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(arguments.dropFirst())
        process.environment = environment
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return CommandOutcome(command: arguments, exitStatus: nil, standardOutput: "",
                                  standardError: "could not start \(executable): \(error)")
        }
        // Both pipes are drained at once so neither can fill up and stall the program.
        let errorData = OutputCollector()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            errorData.set(stderr.fileHandleForReading.readDataToEndOfFile())
        }
        let timedOut = OutputCollector()
        let watchdog = DispatchWorkItem { [process] in
            if process.isRunning {
                timedOut.set(Data([1]))
                // Not terminate(): the child may have inherited a mask that blocks SIGTERM.
                kill(process.processIdentifier, SIGKILL)
            }
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        watchdog.cancel()
        let killed = process.terminationReason == .uncaughtSignal
        var errorText = String(decoding: errorData.get(), as: UTF8.self)
        if killed {
            errorText += (errorText.isEmpty ? "" : "\n") + "killed by signal \(process.terminationStatus)"
                + (timedOut.get().isEmpty ? "" : " after the time limit of \(Int(seconds)) s")
        }
        return CommandOutcome(command: arguments, exitStatus: killed ? nil : process.terminationStatus,
                              standardOutput: String(decoding: outputData, as: UTF8.self), standardError: errorText)
    }
}

/// Bytes handed from the reading thread to the waiting one.
private final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.withLock { data = value } }
    func get() -> Data { lock.withLock { data } }
}
