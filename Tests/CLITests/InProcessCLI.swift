import ArgumentParser
import Foundation
import QuarantineBackend
import QuarantineCLI
import QuarantineStore
import TestSupport

/// Runs the verbs that only read (`status`, `list`, `show`, `history`, `count`) in the test
/// process, through the QuarantineCLI library and the person's own backend in a given
/// environment, as the built binary runs them: the same command code, the same output.
///
/// Why (issue 27, "The suite's own time"): a start of the debug binary costs ~60-85 ms of CPU
/// (176 shared libraries bound at start), and the end-to-end tests poll the agent's state
/// through these verbs hundreds of times; in process a poll costs a few milliseconds. The agent
/// itself, and every verb that changes something, still run as the built binary, and
/// ``CLIRunner/run(_:environment:)`` always runs the binary (`status`, `list` and the others
/// keep end-to-end tests of their own on it).
enum InProcessCLI {
    /// The verbs run in process: they change nothing in the vault and print what they read.
    static let verbs: Set<String> = ["status", "list", "show", "history", "count"]

    /// Whether `arguments` can run in process: a read-only verb for the person's own vault
    /// (not `--user`, which goes to a guardian service's socket, not `--help`).
    static func handles(_ arguments: [String]) -> Bool {
        guard let verb = arguments.first, verbs.contains(verb) else { return false }
        return !arguments.contains { $0 == "--user" || $0.hasPrefix("--user=") || $0 == "--help" || $0 == "-h" }
    }

    /// What `quarantine PATH --help` prints when its output is not a terminal (80 columns, as
    /// ArgumentParser wraps it without one), and its exit status, made in process: the same
    /// parse of the same command tree as the binary's.
    static func help(_ path: [String]) -> CLIRunner.Result {
        do {
            // `--help` parses as ArgumentParser's help command, whose run throws the help request.
            var command = try Quarantine.parseAsRoot(path + ["--help"])
            try command.run()
            return CLIRunner.Result(status: 0, stdout: "", stderr: "")
        } catch {
            let code = Quarantine.exitCode(for: error)
            let text = Quarantine.fullMessage(for: error, columns: 80) + "\n"
            return code == .success ? CLIRunner.Result(status: 0, stdout: text, stderr: "")
                : CLIRunner.Result(status: code == .validationFailure ? 2 : code.rawValue, stdout: "", stderr: text)
        }
    }

    /// Text written by a command, gathered from any thread.
    final class Written: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func add(_ more: String) { lock.withLock { text += more } }
        var all: String { lock.withLock { text } }
    }

    /// Runs `quarantine ARGUMENTS` (a verb ``handles(_:)`` accepts) in `environment` (HOME,
    /// XDG_DATA_HOME, XDG_RUNTIME_DIR: where the vault and the agent's lock are), on a thread
    /// of its own: SQLite may wait for the agent's lock, and that wait holds none of Swift's
    /// shared threads. No terminal, standard input at its end, as ``CLIRunner`` runs the binary.
    static func run(_ arguments: [String], environment: [String: String]) async -> CLIRunner.Result {
        precondition(handles(arguments), "not a read-only verb of the person's own vault: \(arguments)")
        return await offPool("test-cli-in-process") { runBlocking(arguments, environment: environment) }
    }

    /// ``run(_:environment:)`` on the calling thread (for pollers on threads of their own).
    static func runBlocking(_ arguments: [String], environment: [String: String]) -> CLIRunner.Result {
        let out = Written(), err = Written()
        let console = Console(output: { out.add($0) }, error: { err.add($0) }, readLine: { nil }, readSecret: { _ in nil }, interactive: false)
        let backend = LocalBackend(environment: environment, openVault: { readOnly in try openVault(readOnly: readOnly, environment: environment, err: err) })
        let status = Backends.$chosen.withValue(backend) {
            Console.$current.withValue(console) { exitStatus(arguments, err: err) }
        }
        return CLIRunner.Result(status: status, stdout: out.all, stderr: err.all)
    }

    /// Parses and runs a synchronous command as `Quarantine.exitStatus(running:)` does (usage
    /// errors exit 2; an error's message to standard error, help and version to standard output).
    static func exitStatus(_ arguments: [String], err: Written) -> Int32 {
        do {
            var command = try Quarantine.parseAsRoot(arguments)
            precondition(!(command is AsyncParsableCommand), "\(arguments.first ?? ""): an async command")
            try command.run()
            return 0
        } catch {
            let code = Quarantine.exitCode(for: error)
            let message = Quarantine.fullMessage(for: error)
            if code == .validationFailure {
                err.add(message + "\n")
                return 2
            }
            if !message.isEmpty, code != .success { err.add(message + "\n") }
            return code.rawValue
        }
    }

    /// The vault as the CLI opens it (`openVault(readOnly:)` in QuarantineCLI), in `environment`:
    /// read only unless a move was left unfinished, which is then recovered first.
    static func openVault(readOnly: Bool, environment: [String: String], err: Written) throws -> Vault {
        let vault: Vault
        do { vault = try Vault.standard(environment: environment, readOnly: readOnly) } catch {
            err.add("quarantine: cannot open the vault: \(error)\n")
            throw ExitCode(2)
        }
        for line in vault.tightened { err.add("quarantine: made private (others could read it): \(line)\n") }
        if readOnly {
            guard (try? vault.store.hasUnfinishedMoves()) == true else { return vault }
            return try openVault(readOnly: false, environment: environment, err: err)
        }
        do {
            for line in try vault.recoverIfIdle() ?? [] { err.add("quarantine: recovered an interrupted move: \(line)\n") }
        } catch {
            err.add("quarantine: cannot recover interrupted moves: \(error)\n")
            throw ExitCode(2)
        }
        return vault
    }
}
