import Foundation
import Testing
import TestSupport

/// Runs the built `quarantine` binary, as a person or a script would, and captures everything.
struct CLIRunner: Sendable {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let photos = repositoryRoot.appendingPathComponent("testdata/photos")

    /// The binary `swift build` made next to this test bundle.
    static var binary: URL { BuiltProgram.quarantine }

    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        /// Each stdout line parsed as a JSON object.
        func jsonLines() throws -> [[String: Any]] {
            try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        }
    }

    /// A temporary HOME so no user's configuration leaks into a test; the models are still found
    /// through QUARANTINE_DATA_DIR pointing at the real per-user installation.
    let home: URL
    /// A program that runs first and execs the binary (`setpriv` to run as another user).
    var wrapper: [String] = []

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    func cleanUp() { try? FileManager.default.removeItem(at: home) }

    /// The environment a run sees: a private HOME, the real models.
    func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        let realData = (env["XDG_DATA_HOME"] ?? (env["HOME"]! + "/.local/share")) + "/quarantine"
        env["QUARANTINE_DATA_DIR"] = env["QUARANTINE_DATA_DIR"] ?? realData
        env["HOME"] = home.path
        env["XDG_CONFIG_HOME"] = home.appendingPathComponent(".config").path
        env["XDG_DATA_HOME"] = home.appendingPathComponent(".local/share").path
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// The binary with `arguments`, in the test's environment, not yet started.
    func process(_ arguments: [String], environment extra: [String: String]) -> Process {
        let process = Process()
        process.executableURL = wrapper.first.map { URL(fileURLWithPath: $0) } ?? Self.binary
        process.arguments = wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [Self.binary.path] + arguments
        process.environment = environment(extra)
        process.standardInput = FileHandle.nullDevice
        return process
    }

    /// Starts the binary without waiting (for tests that kill it).
    func start(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Process {
        let process = process(arguments, environment: extra)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// How long one command may run before its test fails and it is killed.
    static let commandTimeoutSeconds = 180.0

    /// Runs `quarantine ARGUMENTS` to its end and captures its output. The waiting happens on a
    /// thread of its own (``offPool(_:_:)``): many end-to-end tests wait at once.
    func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> Result {
        let (result, timedOut) = try await offPool("test-cli") { try self.runBlocking(arguments, environment: extra) }
        if timedOut { Issue.record("quarantine \(arguments.joined(separator: " ")) did not finish within \(Self.commandTimeoutSeconds) s: killed") }
        return result
    }

    /// ``run(_:environment:)`` for a thread that may block (pollers on threads of their own).
    /// Says whether the command was killed for running past ``commandTimeout``. Spawned
    /// directly (``Spawned``): Foundation's `Process.run()` can crash the test process.
    func runBlocking(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (Result, timedOut: Bool) {
        let program = wrapper.first ?? Self.binary.path
        let argv = wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [Self.binary.path] + arguments
        let done = try Spawned.run(program, argv, environment: environment(extra), timeout: Self.commandTimeoutSeconds)
        let result = Result(status: done.status, stdout: String(decoding: done.stdout, as: UTF8.self), stderr: String(decoding: done.stderr, as: UTF8.self))
        return (result, done.timedOut)
    }
}

extension CLIRunner {
    /// Runs `quarantine ARGS` in a pseudo-terminal (Tests/CLITests/pty_driver.py), answering
    /// `steps` (regex, answer) in order; the transcript (standard output and error as the
    /// terminal showed them) is the result's stdout.
    func throughTerminal(_ arguments: [String], steps: [(String, String)] = [], environment: [String: String] = [:]) async throws -> Result {
        let driver = Self.repositoryRoot.appendingPathComponent("Tests/CLITests/pty_driver.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [driver] + steps.map { "\($0.0)=>\($0.1)" } + ["--", Self.binary.path] + arguments
        process.environment = self.environment(environment)
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        return await offPool("test-pty") {
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return Result(status: process.terminationStatus, stdout: text, stderr: "")
        }
    }
}
