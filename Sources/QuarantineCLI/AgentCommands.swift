import ArgumentParser
import Foundation
import GuardianAPI
import QuarantineBackend
import Logging
import QuarantineAgent
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceLifecycle
import ServiceSupport
import UnixSignals

/// `quarantine agent`: the service itself, in the foreground.
struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Watch the folders where media arrives and hide what is sensitive (what the user service runs).",
        discussion: """
        Runs in the foreground until SIGTERM or Ctrl-C, logging plain lines to standard error (with \
        syslog priorities under systemd, for journald). Edits of the configuration file take effect by \
        themselves (the file is watched); SIGHUP re-reads it on request ('quarantine watch', 'quarantine \
        mode' and 'systemctl --user reload quarantine' send it). Files that arrive while the agent is \
        stopped are found at its next start. On an account a guardian service protects, the guardian \
        service watches and judges: the agent then only answers the account's applications on the session \
        bus ('quarantine session-forwarder').

        Exit status: 0 stopped on request, 1 another agent is running or the folders cannot be watched, \
        78 the configuration file is wrong.

        Examples:
          quarantine agent
          quarantine agent --log-level debug --workers 1
        """
    )

    @Option(name: .long, help: ArgumentHelp("Configuration file (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("Files analysed at once (default: the configuration's, one per core).", valueName: "n"))
    var workers: Int?

    @Option(name: .long, help: ArgumentHelp("Least important log level shown: debug, info, notice, warning, error.", valueName: "level"))
    var logLevel: String?

    mutating func validate() throws {
        if let workers, workers < 1 { throw ValidationError("--workers must be at least 1") }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil { throw ValidationError("--log-level must be one of: debug, info, notice, warning, error") }
    }

    /// The folder of the vault, the audit database (and, without XDG_RUNTIME_DIR, the agent's
    /// lock) on a read-only file system (remounted read-only after an error, a read-only home):
    /// the agent could neither take its lock nor record anything. It waits, saying so once and
    /// checking every 3 s, instead of exiting: the unit would restart it every 5 s and log the
    /// same failure each time. Files that arrive meanwhile stay where they are; once the file
    /// system is writable the agent starts and looks through the watched folders, as every
    /// start does. A stop (SIGTERM) while waiting ends the wait at once (the agent then exits 0).
    static func waitForWritableData(environment: [String: String], logger: Logger, stop: AgentStop) async {
        var folder = Vault.baseDirectory(environment: environment)
        while !FileManager.default.fileExists(atPath: folder), folder != "/" { folder = (folder as NSString).deletingLastPathComponent }
        func readOnly() -> Bool {
            var info = statvfs()
            return statvfs(folder, &info) == 0 && info.f_flag & UInt(ST_RDONLY) != 0
        }
        guard readOnly() else { return }
        logger.critical("the folder of the vault and the audit database, \(folder), is on a read-only file system: waiting for it to be writable (checked every 3 s); files that arrive meanwhile stay where they are and are checked once it is")
        while readOnly() {
            for _ in 0..<30 where stop.requested == nil { try? await Task.sleep(for: .milliseconds(100)) }
            if stop.requested != nil { return }
        }
        logger.notice("\(folder) is writable again: starting")
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        LoggingSetup.bootstrap(.service, requested: logLevel, environment: environment)
        let logger = Logger(label: "quarantine")
        // A guardian service protects this account: it watches and judges; here only the
        // account's applications are answered, with its policy (docs/dbus.md).
        if let user = ProtectedAccount.current() {
            return try await SessionForwarderCommand.serve(user: user, environment: environment, logger: logger)
        }
        // A stop is read from here on (held by the kernel until now: ``AgentStop``); one asked
        // while the agent starts ends the start with 0, as any stop on request.
        let stop = AgentStop()
        await stop.trap()
        // Trapped before the agent takes its lock: from then on the CLI may send SIGHUP.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await Self.waitForWritableData(environment: environment, logger: logger, stop: stop)
        if let signal = stop.requested { return Self.stoppedWhileStarting(signal, logger: logger) }
        let agent: QuarantineAgent
        do {
            var options = QuarantineAgent.Options(environment: environment, configPath: config, workers: workers)
            options.stopRequested = { stop.requested != nil }
            agent = try QuarantineAgent(options: options, logger: logger, hangups: hangups)
        } catch is QuarantineAgent.StoppedWhileStarting {
            return Self.stoppedWhileStarting(stop.requested ?? .sigterm, logger: logger)
        } catch let error as Settings.ConfigurationError {
            logger.critical("configuration error: \(error)")
            throw ExitCode(78)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }
        if let signal = stop.requested { return Self.stoppedWhileStarting(signal, logger: logger) }
        // The stop is read by ``AgentStop`` alone (the group traps no signal): one asked at any
        // time before (the database just opened, say) or while the group runs shuts it down.
        let group = ServiceGroup(configuration: .init(services: [.init(service: AgentStop.Watcher(stop: stop), successTerminationBehavior: .gracefullyShutdownGroup),
                                                                 .init(service: agent)], logger: logger))
        do { try await group.run() } catch {
            logger.critical("stopped: \(error)")
            throw ExitCode(1)
        }
    }

    /// A stop asked before the agent's service group ran: nothing was started that needs an
    /// end (the lock and the database close with the process). Exit status 0.
    static func stoppedWhileStarting(_ signal: UnixSignal, logger: Logger) {
        logger.notice("stopped (\(signal)) while starting; files that arrive meanwhile are found at the next start")
    }
}

// MARK: - watch

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Add, remove or list the folders the agent watches.",
        discussion: """
        Incoming folders are where media arrives (the download folder by default). Outgoing folders \
        (shared or synced) are checked before what is put there leaves; they are watched in child mode only.

        Examples:
          quarantine watch
          quarantine watch add ~/Pictures/Incoming
          quarantine watch add --outgoing ~/Shared

        Exit status: 0 done, 1 refused (a guardian's settings), 2 the configuration cannot be read or written.
        """,
        subcommands: [WatchList.self, WatchAdd.self, WatchRemove.self],
        defaultSubcommand: WatchList.self)
}

extension ConfigurationFile {
    /// The configuration file, or exit 2 naming what is wrong with it.
    static func loadForCLI(_ path: String? = nil) throws -> ConfigurationFile {
        do { return try load(path) } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
    }
}

struct WatchList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the watched folders.",
        discussion: """
        Examples:
          quarantine watch list
          quarantine watch list --json | jq -r '.folders[].path'

        Exit status: 0 listed, 2 the configuration cannot be read.
        """)

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let watched = try serve(try target.backend(), GuardianWire.WatchList()).answer
        if json {
            JSONOutput.print(ReviewJSON.WatchList(mode: watched.mode, defaultDownloadFolder: watched.defaultDownloadFolder,
                                                  folders: watched.folders.map { .init(path: $0.path, direction: $0.direction, active: $0.active) }))
            return
        }
        if watched.folders.isEmpty { printOut("No folders are watched. Add one with 'quarantine watch add PATH'.") }
        for folder in watched.folders {
            var note = folder.direction
            if folder.isDefault { note += ", your download folder (default)" }
            if !folder.active { note += ", checked in child mode only" }
            if !folder.exists { note += ", missing: watched once it exists" }
            printOut("\(folder.path)  (\(note))")
        }
    }
}

struct WatchAdd: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Watch another folder.",
        discussion: """
        Examples:
          quarantine watch add ~/Pictures/Incoming
          quarantine watch add --outgoing ~/Shared/Family

        Exit status: 0 added (or watched already), 1 refused (child mode needs the guardian PIN or the guardian service said no), 2 the configuration cannot be read or written.
        """)

    @Flag(name: .long, help: "A shared or synced folder: check what is put there before it leaves (child mode only).")
    var outgoing = false

    @Argument(help: ArgumentHelp("The folder.", valueName: "path"))
    var path: String

    @OptionGroup var target: TargetUser

    func run() throws {
        let backend = try target.backend()
        let reply = try serve(backend, GuardianWire.Watch(folder: path, outgoing: outgoing))
        guard let folder = reply.answer.path else {
            printOut(backend.isRemote ? "Already watched." : "\(WatchSettings.expand(path)) is already watched.")
            return
        }
        var message = "Watching \(folder) (\(outgoing ? "outgoing" : "incoming"))\(backend.isRemote ? " for \(backend.account)" : "")."
        if outgoing && reply.mode == .adult { message += " Outgoing folders are checked in child mode only." }
        printOut(message + (reply.answer.reloaded.map { " " + $0 } ?? ""))
    }
}

struct WatchRemove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Stop watching a folder (nothing in it is touched).",
        discussion: """
        Examples:
          quarantine watch remove ~/Pictures/Incoming

        Exit status: 0 removed (or not watched), 1 refused (child mode needs the guardian PIN or the guardian service said no), 2 the configuration cannot be read or written.
        """)

    @Argument(help: ArgumentHelp("The folder.", valueName: "path"))
    var path: String

    @OptionGroup var target: TargetUser

    func run() throws {
        let backend = try target.backend()
        let session = try serve(backend, GuardianWire.Hello())
        let pin = try Interventions.approve(.removeWatchedFolder, verb: .watch, session: session, adultQuestion: "",
                                            childAction: "stop watching \(backend.isRemote ? path : WatchSettings.expand(path))", yes: false)
        let reply = try serve(backend, GuardianWire.Watch(folder: path, remove: true, pin: pin))
        let folder = reply.answer.path ?? path
        printOut("No longer watching \(folder)\(backend.isRemote ? " for \(backend.account)" : "")." + (reply.answer.reloaded.map { " " + $0 } ?? ""))
    }
}

// MARK: - config

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Show or check the configuration; print its schema.",
        discussion: """
        Every key, its values and its default: /etc/quarantine/config.toml and docs/configuration.md \
        (both generated from one schema: 'quarantine config schema').

        Examples:
          quarantine config
          quarantine config show --json | jq .video
          quarantine config check ~/.config/quarantine/config.toml

        Exit status: 0 shown, 2 the configuration file is wrong (the message names the file's line).
        """,
        subcommands: [ConfigShow.self, ConfigCheck.self, ConfigSchemaCommand.self], defaultSubcommand: ConfigShow.self)
}

struct ConfigShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the configuration in force: the built-in defaults with the file's values over them.",
        discussion: """
        Every key of the schema is printed, with its value in force (folders expanded, automatic \
        values resolved).

        Examples:
          quarantine config show
          quarantine config show --config ./test.toml --json

        Exit status: 0 shown, 2 the configuration file is wrong (the message names the file's line).
        """)

    @Option(name: .long, help: ArgumentHelp("Configuration file (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var config: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() throws {
        let file = try ConfigurationFile.loadForCLI(config)
        let environment = ProcessInfo.processInfo.environment
        if json {
            printOut(try ConfigurationSchema.shownJSON(file.settings, file: file.path, exists: file.exists, environment: environment))
        } else {
            printOut(ConfigurationSchema.shownText(file.settings, file: file.path, exists: file.exists, environment: environment))
        }
    }
}

struct ConfigCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a configuration file: TOML, known tables and keys, values each key takes.",
        discussion: """
        Reads the file alone over the built-in defaults, as the agent and a guardian service do.

        Examples:
          quarantine config check ~/.config/quarantine/config.toml
          sudo quarantine config check /etc/quarantine/sam.toml

        Exit status: 0 the file is good, 2 it is not (the message names the file's line).
        """)

    @Argument(help: ArgumentHelp("The file to check (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var file: String?

    func run() throws {
        let loaded = try ConfigurationFile.loadForCLI(file ?? Settings.userConfigurationPath())
        printOut(loaded.exists ? "\(loaded.path): good" : "\(loaded.path): no such file (the built-in defaults apply)")
    }
}

struct ConfigSchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the documented defaults (the conffile) or the Markdown table of every key.",
        discussion: """
        Both texts come from the one schema the configuration is read with; the package's \
        /etc/quarantine/config.toml and docs/configuration.md are these texts (a test checks it).

        Examples:
          quarantine config schema > etc/quarantine/config.toml
          quarantine config schema --markdown > docs/configuration.md

        Exit status: 0 printed.
        """)

    @Flag(name: .long, help: "The Markdown table (docs/configuration.md) instead of the conffile.")
    var markdown = false

    func run() throws {
        FileHandle.standardOutput.write(Data((markdown ? ConfigurationSchema.markdown() : ConfigurationSchema.conffile()).utf8))
    }
}

// MARK: - status

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Is the agent running; what it watches, what waits and what it is checking now.",
        discussion: """
        With --user (or for an account a guardian service protects), the agent inside that service.

        Exit status: 0 running, 3 not running (as 'systemctl status').

        Examples:
          quarantine status
          quarantine status --json | jq .queue_depth
          sudo quarantine status --user sam
        """)

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let reply = try serve(try target.backend(), GuardianWire.Status()).answer
        let running = reply.running ?? true
        let pid = reply.pid
        let status = reply.agent
        let waiting = reply.waiting ?? status?.queueDepth ?? 0
        if json {
            JSONOutput.print(ReviewJSON.Status(running: running, queueDepth: waiting, pid: pid, lastStatus: status))
            if !running { throw ExitCode(3) }
            return
        }
        if running, status?.pid != pid {
            printOut("quarantine agent: starting (pid \(pid ?? 0))")
            printOut("waiting: \(waiting) file(s)")
            return
        }
        guard running, let status else {
            printOut("quarantine agent: not running" + (status.map { " (last \($0.state) at \(Self.time($0.updatedAt)))" } ?? ""))
            printOut("waiting: \(waiting) file(s), handled at the next start")
            printOut("start it: 'quarantine agent', or 'quarantine service install' for the user service")
            throw ExitCode(3)
        }
        let uptime = Int(Date().timeIntervalSince(status.startedAt))
        printOut("quarantine agent: \(status.state) (pid \(status.pid), since \(Self.time(status.startedAt)), \(Self.duration(uptime)))")
        printOut("mode: \(status.mode)")
        if let problem = status.problem { printOut("problem: \(problem)") }
        if let analysis = status.analysis { printOut("analysis: \(analysis)") }
        printOut("folders:")
        for root in status.roots { printOut("  \(root.path) (\(root.direction.rawValue)): \(root.state)") }
        printOut("waiting: \(waiting) file(s)")
        if !status.inFlight.isEmpty {
            printOut("checking now:")
            for work in status.inFlight {
                var progress = work.progress.map { " \(Int(($0 * 100).rounded()))%" } ?? ""
                if let coverage = work.coverage { progress += ", covered \(Int((coverage * 100).rounded()))%" }
                printOut("  \(work.path) (\(work.kind)\(progress))")
            }
        }
        let order = ["noticed", "clean", "quarantined", "blocked", "allowed", "unverified", "failed", "other", "gone", "not_moved"]
        let counts = order.compactMap { key in status.counters[key].map { "\($0) \(key.replacingOccurrences(of: "_", with: " "))" } }
        printOut("since start: " + (counts.isEmpty ? "nothing yet" : counts.joined(separator: ", ")))
        printOut("notifications: \(status.notifications)")
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    static func duration(_ seconds: Int) -> String {
        seconds < 120 ? "\(seconds) s" : seconds < 7200 ? "\(seconds / 60) min" : "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }
}

// MARK: - service

struct ServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service",
        abstract: "Install, remove or inspect the systemd user service that runs the agent.",
        discussion: """
        Examples:
          quarantine service install
          quarantine service status
          quarantine service uninstall

        Exit status: 0 done (status: installed), 1 written but not running, 2 could not be done, 3 (status) not installed.
        """,
        subcommands: [ServiceInstall.self, ServiceUninstall.self, ServiceStatusCommand.self],
        defaultSubcommand: ServiceStatusCommand.self)
}

/// The directory of the running executable (for the unit's ExecStart).
func executableDirectory() -> String {
    let resolved = ModelCatalog.executablePath() ?? CommandLine.arguments[0]
    return (resolved as NSString).deletingLastPathComponent
}

struct ServiceInstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Write the systemd user unit for this binary, enable it and start it.",
        discussion: """
        The unit goes to ~/.config/systemd/user/quarantine.service and runs '<this binary's folder>/quarantine agent' \
        at low priority with sd_notify readiness and a watchdog. Without a user manager (no login session), the unit \
        is still written and enabled for the next session, and the command says so. The D-Bus service file \
        ~/.local/share/dbus-1/services/io.github.quarantine.Analysis1.service is written beside it, so that the \
        session bus starts the agent (through the unit) when an application asks for io.github.quarantine.Analysis1.

        Exit status: 0 installed and running, 1 written but not running (see the message), 2 could not write it.

        Examples:
          quarantine service install
          systemctl --user status quarantine
        """)

    @Option(name: .long, help: ArgumentHelp("The quarantine binary the unit runs (default: this one).", valueName: "path"))
    var binary: String?

    func run() throws {
        let path = binary ?? executableDirectory() + "/quarantine"
        let result: ServiceUnit.InstallResult
        do { result = try ServiceUnit.install(binary: path) } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        printOut(result.description)
        if !result.started { throw ExitCode(1) }
    }
}

struct ServiceUninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        abstract: "Stop and disable the user service and remove its unit and D-Bus service file (the vault and its items stay).",
        discussion: """
        Examples:
          quarantine service uninstall

        Exit status: 0 removed (or not installed), 2 could not be removed (the message says why).
        """)

    func run() throws {
        let result: ServiceUnit.UninstallResult
        do { result = try ServiceUnit.uninstall() } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        printOut(result.description)
    }
}

struct ServiceStatusCommand: ParsableCommand {
    /// `service status --json`.
    struct UnitJSON: Encodable {
        var unitPath: String
        var installed: Bool
        var enabled: String?
        var active: String?
        var managerError: String?

        enum CodingKeys: String, CodingKey {
            case installed, enabled, active
            case unitPath = "unit_path", managerError = "manager_error"
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Is the unit installed, enabled and active (see 'quarantine status' for the agent itself).",
        discussion: """
        Examples:
          quarantine service status
          quarantine service status --json | jq .active

        Exit status: 0 installed, 3 not installed.
        """)

    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    func run() throws {
        let status = ServiceUnit.status()
        if json {
            JSONOutput.print(UnitJSON(unitPath: status.unitPath, installed: status.unitInstalled, enabled: status.enabled,
                                      active: status.active, managerError: status.managerError))
        } else {
            printOut(status.description)
        }
        if !status.unitInstalled { throw ExitCode(3) }
    }
}
