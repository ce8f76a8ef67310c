import ArgumentParser
import PathBytes
import Foundation
import GuardianAPI
import GuardianService
import QuarantineBackend
import Logging
import QuarantineAgent
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

// MARK: - quarantine guardian enable / disable / status / serve

extension Guardian {
    /// `quarantine guardian enable --user alice`.
    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Protect an account with the system guardian service (as root): child mode the account cannot change.",
            discussion: """
            Creates the quarantine system user and group, /etc/quarantine/USER.toml (child mode; the account's \
            download folder and the --outgoing folders), /var/lib/quarantine/USER, a copy of the runtime and models \
            the service loads, and the system unit quarantine-guardian@USER.service with a drop-in that shows it the \
            account's home alone; then enables and starts the unit where systemd runs. Idempotent: an existing \
            configuration is kept.

            Examples:
              sudo quarantine guardian enable --user sam
              sudo quarantine guardian enable --user sam --outgoing /home/sam/Shared

            In child mode the service watches the account's whole home (its browsers' caches excepted), \
            whatever the configuration lists. It runs only as its system unit, inside the unit's sandbox: where \
            systemd is not PID 1 everything is set up but nothing is started (exit status 3).

            Private mounts: an account that can make a user namespace (unshare -r -m) can mount a folder that \
            only it sees, where the service cannot watch. 'enable' closes that for the account alone: it installs \
            the PAM session module pam_quarantine.so, lists the account's uid in /etc/quarantine/protected-uids \
            and adds the module to /etc/pam.d/common-session and common-session-noninteractive, so every new \
            session of the account (login, display manager, ssh, su, cron, at, systemd's user manager) runs under \
            a seccomp filter that refuses the mount system calls (mount, fsopen, fsconfig, fsmount, fspick, \
            move_mount, open_tree, mount_setattr, pivot_root) while user namespaces and chroot stay allowed, so \
            Chromium's and Firefox's sandboxes keep working. A session of the account is refused when the filter \
            cannot be set or the list cannot be read. Sessions already running are covered once the account has \
            logged out and in again. What it costs the account: FUSE mounts (sshfs, gvfs's fuse folder, AppImages), \
            Flatpak apps (bubblewrap), rootless containers (--allow-private-mounts leaves them, and the hole, open). \
            The stronger way, user.max_user_namespaces=0, closes user namespaces for every account and breaks \
            Chromium's and Flatpak's sandboxes for everyone.

            Exit status: 0 protected and running, 2 could not be done (not root, no such account, systemd refused: \
            the message says which), 3 set up but not started (systemd is not PID 1).
            """)

        @Option(name: .long, help: ArgumentHelp("The account to protect.", valueName: "user"))
        var user: String

        @Option(name: .long, help: ArgumentHelp("A folder whose new files are checked before they leave (repeatable).", valueName: "dir"))
        var outgoing: [String] = []

        @Flag(name: .long, help: "Read the guardian PIN (twice) from standard input instead of the terminal.")
        var pinStdin = false

        @Flag(name: .long, help: "Do not set a guardian PIN now (the account cannot release anything until one is set).")
        var noPin = false

        @Flag(name: .long, help: "Do not install pam_quarantine for the account: it keeps FUSE mounts, Flatpak apps and rootless containers, and can mount a folder the service does not see.")
        var allowPrivateMounts = false

        func run() throws {
            guard getuid() == 0 else {
                printError("quarantine: 'guardian enable' must run as root (sudo quarantine guardian enable --user \(user))")
                throw ExitCode(2)
            }
            let setup = GuardianSetup(user: user)
            do {
                let account = try GuardianService.account(user)
                try setup.systemAccounts()
                try setup.workerAccount(uid: account.uid)
                try setup.folders()
                try setup.runtime()
                let written = try setup.configuration(home: account.home, outgoing: outgoing)
                printOut(written ? "Wrote \(setup.paths.configuration) (child mode)." : "Kept \(setup.paths.configuration).")
                if !noPin {
                    func read(_ prompt: String) -> String? { pinStdin ? readLine(strippingNewline: true) : readSecret(prompt) }
                    if let pin = read("New guardian PIN for \(user) (4 to 12 digits): ") {
                        guard GuardianPIN.isValid(pin), read("The same PIN again: ") == pin else {
                            printError("quarantine: a PIN is 4 to 12 digits, typed the same twice; nothing was set (set it later: 'sudo quarantine --user \(user) guardian set-pin')")
                            throw ExitCode(2)
                        }
                        try setup.setPIN(pin)
                        printOut("The guardian PIN is set.")
                    }
                }
                try setup.ownState()
                try setup.unit(home: account.home)
                if allowPrivateMounts {
                    let removed = setup.removeSessionFilter(uid: account.uid)
                    printOut("Private mounts are NOT closed for \(user) (--allow-private-mounts).\(removed.isEmpty ? "" : " " + removed)")
                    printOut(UserNamespaces.current().ways)
                } else {
                    printOut(try setup.sessionFilter(uid: account.uid))
                }
                printOut(try setup.start())
            } catch let error as GuardianService.StartError {
                printError("quarantine: \(error)")
                throw ExitCode(error.exitStatus == 3 ? 3 : 2)
            }
        }
    }

    /// `quarantine guardian disable --user alice`.
    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable",
            abstract: "Stop protecting an account (as root). Its vault, database and configuration stay.",
            discussion: """
            Also takes the account out of /etc/quarantine/protected-uids, so its new sessions may mount again \
            (running ones keep pam_quarantine's filter until it logs out), and takes pam_quarantine out of \
            /etc/pam.d/common-session and common-session-noninteractive once no account is listed.

            Examples:
              sudo quarantine guardian disable --user sam

            Exit status: 0 stopped, 2 not root.
            """)

        @Option(name: .long, help: ArgumentHelp("The protected account.", valueName: "user"))
        var user: String

        func run() throws {
            guard getuid() == 0 else {
                printError("quarantine: 'guardian disable' must run as root")
                throw ExitCode(2)
            }
            let setup = GuardianSetup(user: user)
            printOut(setup.stop())
            let removed = setup.removeSessionFilter(uid: getpwnam(user).map { $0.pointee.pw_uid })
            if !removed.isEmpty { printOut(removed) }
            printOut("Kept \(setup.paths.state) (the vault: 'sudo quarantine --user \(user) list' while enabled) and \(setup.paths.configuration).")
        }
    }

    /// `quarantine guardian status`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show which accounts a guardian service protects, and how each is doing.",
            discussion: """
            Also says whether private mounts are closed for each account: pam_quarantine installed, in both PAM \
            session stacks and listing the account, and how many of the account's running processes carry a \
            filter set at login, naming those that do not (started before, they can still mount until the account \
            logs out); --json: private_mounts and private_mounts_filter.

            Examples:
              quarantine guardian status
              quarantine guardian status --user sam --json

            Exit status: 0 every account's service answers, 1 one does not.
            """)

        @Option(name: .long, help: ArgumentHelp("Only this account.", valueName: "user"))
        var user: String?

        @Flag(name: .long, help: "Print one JSON object per account.")
        var json = false

        func run() throws {
            let users = user.map { [$0] } ?? GuardianSetup.protectedAccounts()
            if users.isEmpty && !json { printOut("No account is protected by a guardian service ('sudo quarantine guardian enable --user NAME').") }
            var failed = false
            for name in users {
                var object: [String: Any] = ["user": name, "configuration": GuardianPaths(user: name).configuration]
                if let backend = try? SocketBackend(user: name), let reply = try? backend.send(GuardianWire.Status()) {
                    let status = reply.answer.status
                    object["running"] = true
                    object["mode"] = reply.mode.rawValue
                    object["pin_set"] = reply.pinIsSet
                    object["state"] = status?.state
                    object["queue_depth"] = status?.queueDepth
                    object["folders"] = status?.folders.map(\.path)
                    object["problem"] = status?.problem
                    object["analysis"] = status?.analysis
                    object["not_watched"] = status?.unwatched
                } else {
                    object["running"] = false
                    failed = true
                }
                // Read here, outside the unit's sandbox (its ProcSubset=pid hides /proc/sys and the
                // account's processes), whether the service runs or not: sessions are PAM's business.
                if let entry = getpwnam(name) {
                    let report = SessionMountFilter().report(user: name, uid: entry.pointee.pw_uid)
                    object["private_mounts"] = report.words
                    object["private_mounts_filter"] = report.json
                } else {
                    object["private_mounts"] = UserNamespaces.current().guardianWords
                }
                if json { JSONOutput.printObject(object); continue }
                if object["running"] as? Bool == true {
                    printOut("\(name): protected, \(object["mode"] ?? "?") mode, PIN \(object["pin_set"] as? Bool == true ? "set" : "NOT set"), watching \((object["folders"] as? [String] ?? []).joined(separator: ", ")); \(object["queue_depth"] ?? 0) file(s) queued\((object["problem"] as? String).map { "; problem: \($0)" } ?? "")")
                    for line in object["not_watched"] as? [String] ?? [] { printOut("  not watched: \(line)") }
                } else {
                    printOut("\(name): NOT running (no answer on \(GuardianPaths(user: name).socket)); 'systemctl status \(GuardianUnit.instanceName(user: name))'")
                }
                if let words = object["private_mounts"] as? String { printOut("  \(words)") }
            }
            if failed { throw ExitCode(1) }
        }
    }

    /// `quarantine guardian serve --user alice`: what the system unit runs.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Run the guardian service for an account in the foreground (what quarantine-guardian@USER.service runs).",
            discussion: """
            In child mode it watches the account's whole home (its browsers' caches excepted), /tmp, /var/tmp and /dev/shm (the account's own files only) and every removable medium mounted below /media/USER or /run/media/USER, also those mounted while it runs, and the account's runtime folder /run/user/UID (XDG_RUNTIME_DIR) while logind has it mounted (from the account's first login to the end of its last session); 'quarantine guardian status' lists what is watched and what is not.

            Exit status: 0 stopped on request, 1 cannot run, 78 the configuration is missing (a wrong one does not stop it: the last good settings, or child-mode defaults, stay in force and 'guardian status' names the problem).

            Examples:
              sudo quarantine guardian serve --user sam   # what the system unit runs
            """)

        @Option(name: .long, help: ArgumentHelp("The protected account.", valueName: "user"))
        var user: String

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            LoggingSetup.bootstrap(.service, environment: environment)
            let logger = Logger(label: "quarantine-guardian")
            do { try await GuardianService.run(user: user, logger: logger) } catch let error as GuardianService.StartError {
                logger.critical("\(error)")
                throw ExitCode(error.exitStatus)
            } catch {
                logger.critical("stopped: \(error)")
                throw ExitCode(1)
            }
        }
    }
}
