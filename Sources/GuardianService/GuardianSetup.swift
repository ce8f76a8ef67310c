import AnalysisWorker
import Foundation
import GuardianAPI
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport
import QuarantineBase

/// What `quarantine guardian enable` and `disable` do, step by step (as root).
public struct GuardianSetup: Sendable {
    public let paths: GuardianPaths
    public init(user: String) { paths = GuardianPaths(user: user) }

    func fail(_ words: String) -> GuardianService.StartError { .init(description: words, exitStatus: 1) }

    /// Runs a program; its output, or an error with what it said.
    @discardableResult
    func run(_ arguments: [String]) throws(GuardianService.StartError) -> String {
        let result = CommandRunner.run(arguments)
        guard result.succeeded else { throw fail("\(arguments.joined(separator: " ")) failed: \(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines))") }
        return result.standardOutput
    }

    /// The `quarantine` system user and the `quarantine-guardians` group (systemd-sysusers with
    /// the packaged file, written to /etc/sysusers.d when no package installed it).
    public func systemAccounts() throws(GuardianService.StartError) {
        let packaged = "/usr/lib/sysusers.d/quarantine.conf"
        var file = packaged
        if !FileManager.default.fileExists(atPath: packaged) {
            file = "/etc/sysusers.d/quarantine.conf"
            try? FileManager.default.createDirectory(atPath: "/etc/sysusers.d", withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: file, contents: Data(GuardianUnit.sysusers.utf8), attributes: [.posixPermissions: 0o644]) else {
                throw fail("cannot write \(file)")
            }
        }
        try run(["systemd-sysusers", file])
    }

    /// The account's own analysis worker user, `quarantine-w<uid>` (systemd-sysusers): its
    /// workers are then apart from every other account's, by the kernel's user checks.
    public func workerAccount(uid: uid_t) throws(GuardianService.StartError) {
        let name = SandboxedAnalysis.Options.guardianWorkerUser(forAccount: uid)
        try run(["systemd-sysusers", "--inline", "u \(name) - \"quarantine analysis worker for \(paths.user)\""])
    }

    static func ids(of user: String) -> (uid_t, gid_t)? {
        guard let entry = getpwnam(user) else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// /etc/quarantine, /var/lib/quarantine(/USER), /run/quarantine, as tmpfiles.d says.
    public func folders() throws(GuardianService.StartError) {
        guard let (uid, gid) = Self.ids(of: GuardianPaths.serviceUser) else { throw fail("there is no \(GuardianPaths.serviceUser) system user") }
        for (path, mode, owned) in [(Paths.systemConfigurationFolder, 0o755, false), (Paths.systemState, 0o700, true), (GuardianPaths.socketFolder, 0o755, true),
                                    (paths.state, 0o700, true)] {
            try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            chmod(path, mode_t(mode))
            if owned { chown(path, uid, gid) } else { chown(path, 0, 0) }
        }
    }

    /// Root's verified copy of the runtime and models, where the services load them.
    public func runtime() throws(GuardianService.StartError) {
        try Self.copyRuntime(from: ModelCatalog.standard(), into: GuardianPaths.runtime)
    }

    /// Copies each of `artifacts` (every pinned file of the catalog), verified, from `catalog`
    /// into `runtime`'s `lib` and `models` folders.
    static func copyRuntime(_ artifacts: [ModelCatalog.Artifact] = ModelCatalog.all, from catalog: ModelCatalog,
                            into runtime: String) throws(GuardianService.StartError) {
        func fail(_ message: String) -> GuardianService.StartError { GuardianService.StartError(description: message, exitStatus: 1) }
        for artifact in artifacts {
            let source: String
            do { source = try catalog.verified(artifact) } catch { throw fail("\(error)") }
            let folder = runtime + (artifact.isRuntime ? "/lib" : "/models")
            let target = folder + "/" + artifact.fileName
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            chmod(runtime, 0o755)
            chmod(folder, 0o755)
            if source == target { continue }
            try? FileManager.default.removeItem(atPath: target)
            do { try FileManager.default.copyItem(atPath: source, toPath: target) } catch { throw fail("cannot copy \(source) to \(target): \(error)") }
            chmod(target, 0o644)
            // Hashed once more where it now lies, which leaves root's record beside it
            // (ModelDigestRecord): the workers, which cannot write there, then skip hashing it.
            let copied = ModelCatalog(runtimeDirectories: [runtime + "/lib"], modelDirectories: [runtime + "/models"])
            do { _ = try copied.verified(artifact, trustingRecord: false) } catch { throw fail("\(error)") }
        }
    }

    /// /etc/quarantine/USER.toml: child mode, `~/Downloads` (for adult mode, should a guardian
    /// choose it) and `outgoing`. In child mode the service watches the account's whole home
    /// whatever this lists. Nothing is read from the account's own files (its `user-dirs.dirs`
    /// could name any folder, or carry characters that break the file). An existing one is kept.
    /// Returns whether it wrote.
    public func configuration(home: String, outgoing: [String]) throws(GuardianService.StartError) -> Bool {
        guard !FileManager.default.fileExists(atPath: paths.configuration) else { return false }
        let downloads = home + "/Downloads"
        func quoted(_ text: String) -> String { ConfigurationFile.tomlString(text) }
        let text = """
            # The guardian service's configuration for \(paths.user), written by 'quarantine guardian enable'.
            # Only root (and the service, for a guardian's 'quarantine --user \(paths.user) mode') changes it;
            # neither the account's own ~/.config/quarantine nor /etc/quarantine/config.toml is read. Keys as in /etc/quarantine/config.toml.
            # In child mode the whole home (\(home)) is watched, whatever [watch] lists; its browsers' caches are not.
            mode = "child"

            [watch]
            incoming = [\(quoted(downloads))]
            outgoing = [\(outgoing.map { quoted(WatchSettings.expand($0, environment: ["HOME": home])) }.joined(separator: ", "))]

            """
        guard FileManager.default.createFile(atPath: paths.configuration, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644]) else {
            throw fail("cannot write \(paths.configuration)")
        }
        chown(paths.configuration, 0, 0)
        return true
    }

    /// Sets the guardian PIN in the account's database.
    public func setPIN(_ pin: String) throws {
        let store = try AuditStore(path: paths.state + "/audit.sqlite3")
        try GuardianPIN(store: store).set(pin)
        try store.record(.guardian, mode: .child, actor: "guardian (uid \(getuid()))", detail: "guardian PIN set by 'guardian enable'")
    }

    /// Everything in the state folder belongs to the service's user (root made some of it).
    public func ownState() throws(GuardianService.StartError) {
        guard let (uid, gid) = Self.ids(of: GuardianPaths.serviceUser) else { throw fail("there is no \(GuardianPaths.serviceUser) system user") }
        chown(paths.state, uid, gid)
        let walker = FileManager.default.enumerator(atPath: paths.state)
        while let name = walker?.nextObject() as? String { lchown(paths.state + "/" + name, uid, gid) }
    }

    static let unitFolder = "/etc/systemd/system"
    var instance: String { GuardianUnit.instanceName(user: paths.user) }

    /// The unit and the worker launcher's (unless a package installed them) and the unit's
    /// drop-in with the account's home.
    public func unit(home: String) throws(GuardianService.StartError) {
        if let problem = GuardianUnit.homeProblem(home) { throw fail("the home \(home) cannot be given to systemd: \(problem)") }
        for (name, text) in [(GuardianUnit.unitName, GuardianUnit.unitText), (GuardianUnit.launcherUnitName, GuardianUnit.launcherUnitText)] {
            guard !FileManager.default.fileExists(atPath: "/usr/lib/systemd/system/" + name) && !FileManager.default.fileExists(atPath: "/lib/systemd/system/" + name) else { continue }
            try? FileManager.default.createDirectory(atPath: Self.unitFolder, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: Self.unitFolder + "/" + name, contents: Data(text.utf8),
                                                 attributes: [.posixPermissions: 0o644]) else { throw fail("cannot write the unit \(name)") }
        }
        let dropIns = Self.unitFolder + "/" + instance + ".d"
        try? FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: dropIns + "/" + GuardianUnit.homeDropInName, contents: Data(GuardianUnit.homeDropIn(home: home).utf8),
                                             attributes: [.posixPermissions: 0o644]) else { throw fail("cannot write the unit's drop-in") }
    }

    static var systemdRuns: Bool { FileManager.default.fileExists(atPath: "/run/systemd/system") }

    /// Why the service cannot be started here, if so: it runs only as its unit, in the unit's
    /// sandbox (a read-only system, only the account's home visible, no network, its own /tmp).
    /// Started by hand it would have the unit's capabilities without any of that, so where systemd
    /// is not PID 1 nothing is started and no way around the unit is suggested.
    public static var cannotStartReason: String? {
        guard !systemdRuns else { return nil }
        let first = (try? String(contentsOfFile: "/proc/1/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        return "systemd is not PID 1 on this machine (PID 1 is \(first)): the guardian service runs only as its unit, inside the unit's sandbox, so it was not started"
    }

    /// Enables and starts the unit where systemd runs; says what happened. Where systemd is not
    /// PID 1 it refuses, with the reason (``cannotStartReason``): the set-up stays, and the unit
    /// starts at the next boot with systemd.
    public func start() throws(GuardianService.StartError) -> String {
        if let reason = Self.cannotStartReason {
            throw GuardianService.StartError(description: "\(reason). Everything else is set up: \(instance) starts at the next boot with systemd as PID 1.",
                                             exitStatus: 3)
        }
        try run(["systemctl", "daemon-reload"])
        try run(["systemctl", "enable", "--now", instance])
        return "\(paths.user) is protected: \(instance) is enabled and running."
    }

    /// Stops and disables the unit (where systemd runs) and removes its drop-in.
    public func stop() -> String {
        var words = "\(paths.user) is no longer protected."
        if Self.systemdRuns {
            let result = CommandRunner.run(["systemctl", "disable", "--now", instance])
            if !result.succeeded { words += " (systemctl: \(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)))" }
        } else {
            words += " systemd is not running: stop a service started by hand yourself."
        }
        try? FileManager.default.removeItem(atPath: Self.unitFolder + "/" + instance + ".d")
        return words
    }

    /// The accounts with a configuration in /etc/quarantine (`config.toml` there is the
    /// system-wide configuration, no account's).
    public static func protectedAccounts() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: Paths.systemConfigurationFolder)) ?? []).filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }
            .filter { !GuardianService.reservedNames.contains($0) }.sorted()
    }
}
