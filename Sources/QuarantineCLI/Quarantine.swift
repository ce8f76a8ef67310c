import AnalysisWorker
import ArgumentParser
import CBuildInfo
import Foundation
import PathBytes
import QuarantineCore
import Logging
import SensitivityAnalysis

/// The `quarantine` command: keeps sensitive media that arrives on this machine out of sight.
public struct Quarantine: AsyncParsableCommand {
    static let version = "0.1.0"

    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "Keeps nudity that arrives on this machine out of sight, checked with two on-device models; nothing is uploaded.",
        discussion: """
        Everything runs locally: ONNX Runtime with NudeNet 320n (regions) and Yahoo open_nsfw \
        (whole picture). Run 'make setup' once to install the runtime and models. 'quarantine agent' \
        (or the user service, 'quarantine service install') watches your download folder and moves what \
        is sensitive into the vault; 'quarantine list' and 'quarantine show' review it.

        Exit status of scan: 0 nothing flagged, 1 something flagged, 2 usage error or nothing could be analysed.
        """,
        version: versionText,
        subcommands: [AgentCommand.self, StatusCommand.self, Watch.self, Scan.self, StreamCommand.self, SessionForwarderCommand.self, List.self, Show.self, ReleaseCommand.self, BlockCommand.self, History.self, Purge.self, CountCommand.self, Guardian.self, ModeCommand.self, ConfigCommand.self, ServiceCommand.self, TestCardCommand.self, Doctor.self, WorkerCommand.self, WorkerLauncherCommand.self, ReviewPageCommand.self]
    )

    /// What `--version` prints: the version, the commit it was built from, and each pinned
    /// file (the runtime, then the models) with the release it comes from and its sha256's start:
    ///
    ///     quarantine 0.1.0 (commit e401525820b5)
    ///     ONNX Runtime 1.31.1: libonnxruntime.so.1.31.1 from onnxruntime 1.31.1, sha256 fc44112fbe06
    static var versionText: String {
        let pins = ModelCatalog.all.map { artifact in
            "\(artifact.name): \(artifact.fileName) from \(artifact.wheel.replacingOccurrences(of: "==", with: " ")), sha256 \(artifact.sha256.prefix(12))"
        }
        return (["quarantine \(version) (commit \(String(cString: qbuild_commit())))"] + pins).joined(separator: "\n")
    }

    /// What the process does before anything else, synchronously, before any thread starts
    /// (the executable calls it first, on the main thread, before its first `await`: an async
    /// function could already run on a thread of Swift's pool): the analysis worker confines
    /// itself (see WorkerCommand); files are made private; the allocator is tuned.
    public static func prepareProcess() {
        if CommandLine.argc > 1, let first = CommandLine.unsafeArgv[1], String(cString: first) == WorkerCommand.configuration.commandName {
            WorkerCommand.confined = AnalysisWorkerProcess.confine()
        }
        // The agent reads its stop (SIGTERM, SIGINT) from the start of its run: until then a
        // stop waits in the kernel instead of ending the process mid-start (``AgentStop``).
        if CommandLine.argc > 1, let first = CommandLine.unsafeArgv[1], String(cString: first) == AgentCommand.configuration.commandName {
            AgentStop.blockStopSignals()
        }
        // Everything this program writes is the person's alone: 0600 files in 0700 folders
        // (a release puts back the file's own mode explicitly).
        umask(0o077)
        MemoryTuning.apply()
    }

    /// Runs the command line of this process and exits; usage errors exit 2 (not
    /// ArgumentParser's 64), as documented. (Not named `main`: ArgumentParser's synchronous
    /// `main()` would be chosen over it from the executable's top-level code.) Call
    /// ``prepareProcess()`` first.
    public static func runProgram() async {
        do {
            // Arguments as bytes: a file name that is not UTF-8 is still named exactly (PathBytes).
            let arguments = (1..<Int(CommandLine.argc)).compactMap { CommandLine.unsafeArgv[$0].map { PathBytes.string(cString: $0) } }
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                printError(fullMessage(for: error))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

extension Quarantine {
    /// Runs the command line `arguments` in this process and returns its exit status, writing
    /// through ``Console/current`` (tests run commands so, with their own console and backend:
    /// ``Backends/chosen``). Messages go where `main` sends them: help and version to standard
    /// output, errors to standard error; a usage error exits 2.
    public static func exitStatus(running arguments: [String]) async -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .validationFailure {
                printError(message)
                return 2
            }
            if !message.isEmpty { code == .success ? printOut(message) : printError(message) }
            return code.rawValue
        }
    }
}

/// Options every command that analyses shares.
struct AnalysisOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Policy to judge by: adult or child (default: the config file's mode).", valueName: "mode"))
    var mode: AnalysisMode?

    @Option(name: .long, help: ArgumentHelp("Configuration file (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Files analysed at once (default: one per core).", valueName: "n"))
    var workers: Int?

    /// Built-in defaults, then the configuration file, then command-line options.
    func settings() throws -> Settings {
        if let config, !FileManager.default.fileExists(atPath: config) { throw CLIError("\(config): no such file") }
        var settings = try ConfigurationFile.load(config).settings
        if let mode { settings.mode = mode }
        if let workers {
            guard workers > 0 else { throw ValidationError("--workers must be at least 1") }
            settings.analyzer.workers = workers
        }
        return settings
    }
}

extension AnalysisMode: ExpressibleByArgument {}
