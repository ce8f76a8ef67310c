import AccountPipeline
import AnalysisWorker
import Foundation
import GuardianAPI
import Logging
import QuarantineCore
import QuarantineStore
import ServiceLifecycle
import ServiceSupport
import UnixSignals

/// The system service that protects one account (`quarantine-guardian@USER.service`): the
/// agent, run on the account's folders with the configuration, database and vault outside its
/// reach, and the socket its CLI talks to.
public enum GuardianService {
    /// Why the service cannot start; `exitStatus` 78 means the configuration (fix it first).
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
        public var exitStatus: Int32
    }

    /// The account's user id, group id and home.
    public static func account(_ user: String) throws(StartError) -> (uid: uid_t, gid: gid_t, home: String) {
        // An account named so would share a path with something else: /etc/quarantine/config.toml
        // is the system-wide configuration (adult mode), /var/lib/quarantine/runtime the services' models.
        guard !reservedNames.contains(user) else {
            throw StartError(description: "an account named \(user) cannot be protected: its files would be \(GuardianPaths(user: user).configuration) or \(GuardianPaths(user: user).state), which belong to quarantine itself", exitStatus: 78)
        }
        guard let entry = getpwnam(user) else { throw StartError(description: "there is no user \(user)", exitStatus: 78) }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid, String(cString: entry.pointee.pw_dir))
    }

    /// Account names whose per-account paths are quarantine's own files.
    public static let reservedNames: Set<String> = ["config", "runtime"]

    /// The agent's environment: the account's home for its folders, the state folder, and the
    /// guardian's own copy of the runtime and models. Nothing of the account's own settings
    /// (no XDG_CONFIG_HOME, no user-dirs: `guardian enable` wrote the folders into the
    /// configuration).
    static func environment(paths: GuardianPaths, home: String, inherited: [String: String], accountUID: uid_t? = nil) -> [String: String] {
        var environment = inherited.filter { ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "INVOCATION_ID", "QUARANTINE_LOG_LEVEL",
                                              "LANG", "PATH", AnalysisWorkerProcess.testOnlyCrashMarkerVariable].contains($0.key) }
        environment["HOME"] = home
        environment["QUARANTINE_STATE_DIR"] = paths.state
        environment["XDG_CONFIG_HOME"] = paths.state + "/config"
        environment["QUARANTINE_DATA_DIR"] = inherited["QUARANTINE_GUARDIAN_RUNTIME"] ?? GuardianPaths.runtime
        // The analysis workers run as a user of their own, which owns nothing of any account:
        // the account's own (quarantine-w<uid>, made by 'guardian enable'), else the shared one.
        environment[SandboxedAnalysis.Options.workerUserVariable] = accountUID.map { SandboxedAnalysis.Options.guardianWorkerUserInForce(forAccount: $0) }
            ?? SandboxedAnalysis.Options.guardianWorkerUser
        // The worker launcher (quarantine-worker-launcher.service) starts them as that user: this
        // service holds no CAP_SETUID. Where its socket is missing, no worker starts (never one
        // as this service's own user, the owner of every account's state): files stay held, the
        // status says why, and a worker starts once the launcher is back.
        if let accountUID {
            environment[SandboxedAnalysis.Options.launcherVariable] = inherited[SandboxedAnalysis.Options.launcherVariable] ?? LauncherService.defaultSocketPath
            environment[SandboxedAnalysis.Options.accountVariable] = "\(accountUID)"
        }
        return environment
    }

    /// The agent's options for the protected account `user` (`uid`, `home`), with this process's
    /// mount table `mounts`: what it watches and where it holds.
    static func agentOptions(user: String, uid: uid_t, home: String, environment: [String: String], configuration: String,
                             mounts: MountTable?) -> AccountPipeline.Options {
        var options = AccountPipeline.Options(environment: environment, configPath: configuration)
        options.actor = "guardian service"
        // The account's browsers keep their history in its own ~/.config (only that is read there).
        options.browserConfigHome = home + "/.config"
        // Held files leave the account's folders into a folder of the service's in its home (the
        // same mount as the watched folders under the unit's BindPaths=), and go back only into
        // the account's own folders.
        options.holdingParent = home
        options.protectedAccount = uid
        options.protectedHome = home
        // /tmp and /var/tmp: the host's, at the side paths the unit binds them to (its own are
        // private); /dev/shm; and the removable media mounted for the account, as they come and go.
        options.sharedFolders = SharedFolder.standard(mounts: mounts)
        options.removableMediaFolders = ["/media/\(user)", "/run/media/\(user)"]
        // The account's runtime folder (/run/user/UID: the host's, below the side path the unit
        // binds /run/user to), while logind has it mounted.
        options.runtimeFolder = SharedFolder.runtimeFolder(uid: uid, mounts: mounts)
        return options
    }

    /// Runs until SIGTERM or SIGINT.
    public static func run(user: String, logger: Logger, inherited: [String: String] = ProcessInfo.processInfo.environment) async throws {
        let paths = GuardianPaths(user: user)
        let account = try account(user)
        let lastGood = paths.state + "/config.last-good.toml"
        guard FileManager.default.fileExists(atPath: paths.configuration) || FileManager.default.fileExists(atPath: lastGood) else {
            throw StartError(description: "\(paths.configuration) is missing: run 'sudo quarantine guardian enable --user \(user)' first", exitStatus: 78)
        }
        umask(0o077)
        try FileManager.default.createDirectory(atPath: paths.state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let environment = environment(paths: paths, home: account.home, inherited: inherited, accountUID: account.uid)
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        var options = agentOptions(user: user, uid: account.uid, home: account.home, environment: environment,
                                   configuration: paths.configuration, mounts: MountTable.current())
        let sharedFolders = (options.sharedFolders ?? []) + (options.runtimeFolder.map { [$0] } ?? [])
        // A wrong USER.toml never stops the protection: the last good copy (or child-mode
        // defaults) stays in force and `guardian status` names the problem.
        options.lastGoodConfigurationPath = lastGood
        // The account's CLI saves the blurred preview it is handed (`quarantine show`) in /tmp:
        // that copy is not a new picture to hold.
        let servedPreviews = ServedPreviews()
        options.servedPreviews = servedPreviews
        let agent: AccountPipeline
        do { agent = try AccountPipeline(options: options, logger: logger, hangups: hangups) } catch let error as Settings.ConfigurationError {
            throw StartError(description: "configuration error: \(error)", exitStatus: 78)
        }
        let vault = try Vault.standard(environment: environment)
        let server = try GuardianServer(paths: paths, childUID: account.uid, home: account.home, vault: vault, configurationPath: paths.configuration, logger: logger,
                                       sharedFolders: sharedFolders, servedPreviews: servedPreviews,
                                       analysis: GuardianAnalysis(logger: logger) { [agent] in agent.applicationAnalysis },
                                       streams: GuardianStreams(logger: logger) { [agent] in agent.applicationAnalysis }) {
            kill(getpid(), SIGHUP)
        }
        logger.notice("protecting \(user) (uid \(account.uid)): requests on \(paths.socket)")
        // The socket first: a graceful shutdown (last first) stops the pipeline, which finishes
        // its work in flight, while the socket still answers; then the socket.
        let group = ServiceGroup(configuration: .init(services: [GuardianSocketService(server: server), agent],
                                                      gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
