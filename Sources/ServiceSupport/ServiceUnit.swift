#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import QuarantineBase

/// The systemd user unit that runs `quarantine agent`: rendering it from its
/// template, installing it into the user's unit directory, removing it, and
/// asking the user manager how it is doing.
///
/// Every step that needs the user manager (`systemctl --user`) is reported as
/// it happened: on a machine without a user session bus the unit is still
/// written, and the result says that it is not enabled yet and what to do.
public enum ServiceUnit {
    /// The unit's file name.
    public static let unitName = "quarantine.service"
    /// The placeholder in the template that becomes the binary's directory.
    public static let binaryDirectoryPlaceholder = "@BINDIR@"

    /// What to do when the user manager cannot be reached.
    public static let noUserManagerAdvice =
        "log into a desktop session, or run `loginctl enable-linger $USER`, then `systemctl --user enable --now quarantine.service`"

    /// The template with every `@BINDIR@` replaced by `binaryDirectory`
    /// (a trailing slash is dropped; `%` is doubled, since systemd reads `%x` as
    /// a specifier).
    public static func render(template: String, binaryDirectory: String) -> String {
        var directory = binaryDirectory
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        return template.replacingOccurrences(of: binaryDirectoryPlaceholder,
                                             with: directory.replacingOccurrences(of: "%", with: "%%"))
    }

    /// Where the user unit goes: `${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/quarantine.service`
    /// (a relative XDG_CONFIG_HOME is ignored, as the XDG spec says).
    public static func userUnitPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        Paths(environment: environment).configHome + "/systemd/user/" + unitName
    }

    // MARK: - install

    /// What `install` did.
    public struct InstallResult: Sendable, Equatable, CustomStringConvertible {
        /// The unit file, written (atomically) whenever `install` returns.
        public var unitPath: String
        /// True when the unit is enabled: it starts with the user's session.
        public var enabled: Bool
        /// True only when `systemctl --user enable --now` succeeded: the agent runs now.
        public var started: Bool
        /// True when systemctl failed because there is no user manager / user bus.
        public var userManagerUnreachable: Bool
        /// Each systemctl run, in order, with its exact output.
        public var steps: [CommandOutcome]
        /// What the user should do next; nil when nothing is left to do.
        public var advice: String?
        /// The D-Bus service file written beside the unit (``BusServiceFile``): the session bus
        /// starts the agent when an application asks for its name.
        public var busServicePath: String? = nil

        public var description: String {
            let bus = busServicePath.map { "; \($0) lets the session bus start it when an application asks" } ?? ""
            if started {
                return "installed \(unitPath); quarantine.service is enabled and running" + bus
            }
            var text = "wrote \(unitPath), but quarantine.service is NOT running"
                + (enabled ? " (it is enabled: it starts with the next session of the user manager)" : " and NOT enabled")
            if let failed = steps.first(where: { !$0.succeeded }) { text += ": \(failed)" }
            if let advice { text += ". To finish: \(advice)" }
            return text + bus
        }
    }

    /// Installs the user unit for `binary`, enables it and starts it.
    ///
    /// Renders `templatePath` (or `defaultTemplate` when nil) with the binary's
    /// directory, writes it atomically (temp file, fsync, rename) to
    /// `userUnitPath(environment:)`, then runs `systemctl --user daemon-reload`
    /// and `systemctl --user enable --now quarantine.service` with `environment`.
    ///
    /// A systemctl failure is not thrown: the unit stays written and the result
    /// says what failed (exact stderr) and what to do. When the user manager
    /// cannot be reached, `systemctl --user enable` (which only makes the
    /// `default.target.wants` link and works without it) is still tried, so the
    /// agent starts with the user's next session.
    /// - Parameter binary: the quarantine executable; its file name must be `quarantine`
    ///   (the unit runs `<directory>/quarantine agent`).
    /// - Throws: `ServiceError` when the binary is unusable, the template cannot be
    ///   read, or the unit cannot be written.
    public static func install(binary: String, templatePath: String? = nil,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws -> InstallResult {
        let operation = "install the quarantine user service"
        let binaryURL = URL(fileURLWithPath: binary).standardizedFileURL
        guard FileManager.default.isExecutableFile(atPath: binaryURL.path) else {
            throw ServiceError(code: .fileSystem, operation: operation,
                               message: "\(binaryURL.path) is not an executable file; pass the path of the installed quarantine binary")
        }
        guard binaryURL.lastPathComponent == "quarantine" else {
            throw ServiceError(code: .fileSystem, operation: operation,
                               message: "the unit runs <directory>/quarantine, but the binary is named \(binaryURL.lastPathComponent); install it as 'quarantine'")
        }
        let directory = binaryURL.deletingLastPathComponent().path
        if let bad = directory.first(where: { $0.isWhitespace || $0 == "\"" || $0 == "'" || $0 == "\\" }) {
            throw ServiceError(code: .fileSystem, operation: operation,
                               message: "the binary's directory \(directory) contains \(bad.debugDescription), which ExecStart= would split or unquote; install the binary in a directory without it (e.g. ~/.local/bin)")
        }

        let template: String
        if let templatePath {
            do {
                template = try String(contentsOfFile: templatePath, encoding: .utf8)
            } catch {
                throw ServiceError(code: .fileSystem, operation: operation,
                                   message: "cannot read the unit template \(templatePath)", cause: "\(error)")
            }
        } else {
            template = defaultTemplate
        }

        let unitPath = userUnitPath(environment: environment)
        try writeAtomically(render(template: template, binaryDirectory: directory), to: unitPath, operation: operation)

        var result = InstallResult(unitPath: unitPath, enabled: false, started: false, userManagerUnreachable: false,
                                   steps: [], advice: nil)
        result.busServicePath = try BusServiceFile.install(binaryDirectory: directory, environment: environment)
        func run(_ arguments: String...) -> CommandOutcome {
            let outcome = CommandRunner.run(["systemctl", "--user"] + arguments, environment: environment)
            result.steps.append(outcome)
            return outcome
        }
        let enableNow = "systemctl --user enable --now \(unitName)"

        let reload = run("daemon-reload")
        if reload.exitStatus == nil {
            result.advice = "make sure systemd is installed and systemctl is in PATH, then run `\(enableNow)`"
            return result
        }
        if !reload.succeeded {
            if isNoUserManager(reload) {
                result.userManagerUnreachable = true
                result.advice = noUserManagerAdvice
                result.enabled = run("enable", unitName).succeeded
            } else {
                result.advice = "see the error above, fix it, then run `systemctl --user daemon-reload` and `\(enableNow)`"
            }
            return result
        }
        if run("enable", "--now", unitName).succeeded {
            result.enabled = true
            result.started = true
            return result
        }
        // Enabling may have worked and starting failed: ask rather than guess.
        let state = run("is-enabled", unitName)
        result.enabled = state.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "enabled"
        result.advice = "see `systemctl --user status \(unitName)` and `journalctl --user -u \(unitName)`, fix the cause, then run `\(enableNow)`"
        return result
    }

    // MARK: - uninstall

    /// What `uninstall` did.
    public struct UninstallResult: Sendable, Equatable, CustomStringConvertible {
        public var unitPath: String
        /// Whether a unit file was there to remove.
        public var wasInstalled: Bool
        /// Whether `systemctl --user disable --now` succeeded (false when not run).
        public var disabledAndStopped: Bool
        /// True when systemctl failed because there is no user manager / user bus.
        public var userManagerUnreachable: Bool
        /// Each systemctl run, in order, with its exact output.
        public var steps: [CommandOutcome]
        /// Anything the user should know or do.
        public var notes: [String]

        public var description: String {
            var text = wasInstalled ? "removed \(unitPath)" : "nothing to remove: there is no \(unitPath)"
            if wasInstalled { text += disabledAndStopped ? " (service stopped and disabled)" : " (the service could not be stopped or disabled through systemctl)" }
            for note in notes { text += "; \(note)" }
            return text
        }
    }

    /// Stops and disables the service when the user manager can be reached,
    /// then removes the unit file (and its `default.target.wants` link, which
    /// `disable` would have removed). A missing unit is not an error: the
    /// result says there was nothing to remove.
    /// - Throws: `ServiceError` when the unit file exists but cannot be removed.
    public static func uninstall(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> UninstallResult {
        let unitPath = userUnitPath(environment: environment)
        var result = UninstallResult(unitPath: unitPath, wasInstalled: FileManager.default.fileExists(atPath: unitPath),
                                     disabledAndStopped: false, userManagerUnreachable: false, steps: [], notes: [])
        // The bus must not start an agent whose unit is gone.
        if try BusServiceFile.uninstall(environment: environment) {
            result.notes.append("removed \(BusServiceFile.userPath(environment: environment))")
        }
        guard result.wasInstalled else { return result }

        let disable = CommandRunner.run(["systemctl", "--user", "disable", "--now", unitName], environment: environment)
        result.steps.append(disable)
        result.disabledAndStopped = disable.succeeded
        if !disable.succeeded {
            result.userManagerUnreachable = isNoUserManager(disable)
            result.notes.append(result.userManagerUnreachable
                ? "the user manager is not reachable (\(firstLine(disable.standardError))), so nothing was stopped through it; with the unit gone it will not start the agent again"
                : "`systemctl --user disable --now` failed: \(firstLine(disable.standardError)); check `systemctl --user status quarantine.service`")
        }

        let wantsLink = URL(fileURLWithPath: unitPath).deletingLastPathComponent()
            .appendingPathComponent("default.target.wants").appendingPathComponent(unitName).path
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: wantsLink)) != nil {
            try? FileManager.default.removeItem(atPath: wantsLink)
        }
        if unlink(unitPath) != 0 && errno != ENOENT {
            throw ServiceError(code: .fileSystem, operation: "remove the quarantine user service",
                               message: "cannot remove \(unitPath); remove it by hand",
                               cause: String(cString: strerror(errno)))
        }
        if disable.succeeded {
            let reload = CommandRunner.run(["systemctl", "--user", "daemon-reload"], environment: environment)
            result.steps.append(reload)
            if !reload.succeeded { result.notes.append("`systemctl --user daemon-reload` failed: \(firstLine(reload.standardError))") }
        }
        return result
    }

    // MARK: - status

    /// The unit file and what the user manager says about the service.
    public struct ServiceStatus: Sendable, Equatable, CustomStringConvertible {
        public var unitPath: String
        /// Whether the unit file exists.
        public var unitInstalled: Bool
        /// `systemctl --user is-enabled` output ("enabled", "disabled", "not-found", ...),
        /// nil when the user manager could not be asked.
        public var enabled: String?
        /// `systemctl --user is-active` output ("active", "inactive", "failed", ...),
        /// nil when the user manager could not be asked.
        public var active: String?
        /// Why the user manager could not be asked: systemctl's exact stderr.
        public var managerError: String?

        public var description: String {
            var text = unitInstalled ? "unit: \(unitPath)" : "unit: not installed (\(unitPath) does not exist)"
            if let managerError {
                text += "; user manager unreachable: \(ServiceUnit.firstLine(managerError))"
            } else {
                text += "; enabled: \(enabled ?? "?"); active: \(active ?? "?")"
            }
            return text
        }
    }

    /// Whether the unit is installed, and `systemctl --user is-enabled` /
    /// `is-active` for it, or the error that kept systemctl from answering.
    public static func status(environment: [String: String] = ProcessInfo.processInfo.environment) -> ServiceStatus {
        let unitPath = userUnitPath(environment: environment)
        var status = ServiceStatus(unitPath: unitPath, unitInstalled: FileManager.default.fileExists(atPath: unitPath),
                                   enabled: nil, active: nil, managerError: nil)
        // Both exit non-zero for "disabled"/"inactive": the answer is on stdout.
        let isEnabled = CommandRunner.run(["systemctl", "--user", "is-enabled", unitName], environment: environment)
        let isActive = CommandRunner.run(["systemctl", "--user", "is-active", unitName], environment: environment)
        for (outcome, keyPath) in [(isEnabled, \ServiceStatus.enabled), (isActive, \ServiceStatus.active)] {
            let answer = outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            if outcome.exitStatus != nil, !answer.isEmpty, !isNoUserManager(outcome) {
                status[keyPath: keyPath] = answer
            } else if status.managerError == nil {
                let error = outcome.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
                status.managerError = error.isEmpty ? "\(outcome)" : error
            }
        }
        return status
    }

    // MARK: - helpers

    /// systemctl's ways of saying there is no user manager to talk to.
    static func isNoUserManager(_ outcome: CommandOutcome) -> Bool {
        let text = outcome.standardError
        return text.contains("Failed to connect to bus")
            || text.contains("Failed to connect to user scope bus")
            || text.contains("$DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR not defined")
            || text.contains("System has not been booted with systemd")
    }

    static func firstLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
    }

    /// Writes `text` to `path` so that readers see the old file or the new one,
    /// never a part: a temp file beside it, fsync, chmod 0644, rename.
    static func writeAtomically(_ text: String, to path: String, operation: String) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ServiceError(code: .fileSystem, operation: operation,
                               message: "cannot create the unit directory \(directory)", cause: "\(error)")
        }
        let temporary = "\(directory)/.\(url.lastPathComponent).\(getpid()).tmp"
        func fail(_ what: String) -> ServiceError {
            let cause = String(cString: strerror(errno))
            unlink(temporary)
            return ServiceError(code: .fileSystem, operation: operation, message: "\(what) (\(temporary) → \(path))", cause: cause)
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail("cannot create the unit file") }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                close(fd)
                throw fail("cannot write the unit file")
            }
            written += n
        }
        guard fchmod(fd, 0o644) == 0, fsync(fd) == 0 else {
            close(fd)
            throw fail("cannot write the unit file")
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw fail("cannot move the unit file into place") }
    }
}
