import ArgumentParser
import Foundation
import GuardianAPI
import GuardianService
import Locking
import QuarantineBackend
import QuarantineCore
import ReviewPage
import ServiceSupport

/// `quarantine review`: the local review page, served for this session by this command (not
/// by the agent, whose unit allows no network) on 127.0.0.1 and a random port, opened in the
/// browser; it stops by itself after the idle time.
struct ReviewPageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "review",
        abstract: "Review hidden items in the browser: a local page for this session.",
        discussion: """
        Starts a small web server on 127.0.0.1 (a random port), for you only: a secret made for \
        this start is in the address it opens (then in a cookie), and every form carries a token. \
        Pictures stay blurred until you choose Show for one. In child mode nothing is shown \
        without the guardian PIN. A guardian (root or a member of quarantine-guardians) also gets \
        a page of the accounts they protect. The server stops after --idle-timeout without a request.

        If a review page of yours runs already, it is opened again instead of a second one \
        (it keeps the configuration file it started with).

        --config names the configuration file the page reads and changes (mode, watched \
        folders), as for 'quarantine agent --config'. A protected account's page goes through \
        its guardian service, which reads its own: --config is refused there.

        Examples:
          quarantine review
          quarantine review --item 12
          quarantine review --print-url --idle-timeout 30m
          quarantine review --config ./test.toml

        Exit status: 0 the page was served and stopped, 2 it could not start (or the --config file does not exist).
        """)

    @Flag(name: .long, help: "Print the address (with its secret) and do not open a browser.")
    var printURL = false

    @Option(name: .long, help: ArgumentHelp("Open the page at this item.", valueName: "id"))
    var item: Int64?

    @Option(name: .long, help: ArgumentHelp("Stop after this long without a request: seconds, or with s, m or h (default 10m).", valueName: "time"))
    var idleTimeout: String = "10m"

    @Option(name: .long, help: ArgumentHelp("Configuration file (default: ~/.config/quarantine/config.toml).", valueName: "file"))
    var config: String?

    @OptionGroup var target: TargetUser

    func validate() throws {
        guard Self.seconds(idleTimeout) != nil else { throw ValidationError("--idle-timeout: a time such as 600, 90s, 10m or 1h") }
        if config != nil, target.user != nil { throw ValidationError("--config and --user: a protected account's guardian service reads its own configuration") }
    }

    /// `600`, `90s`, `10m`, `1h` in seconds.
    static func seconds(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        let (number, unit) = text.last.flatMap { units[$0] }.map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let value = Double(number), value > 0, value <= 24 * 3600 / unit else { return nil }
        return value * unit
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        if let config, !FileManager.default.fileExists(atPath: config) {
            printError("quarantine: \(config): no such file")
            throw ExitCode(2)
        }
        let folder: String
        do { folder = try ReviewOptions.stateFolder(environment: environment) } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        let path = item.map { "/item/\($0)" } ?? "/"
        // One page per person: a running one is opened again.
        if let running = ReviewPageAddress.running(in: folder) {
            let url = ReviewPageAddress.address(running.url, at: path)
            announce(url, folder: folder, environment: environment, again: true)
            return
        }
        let own = try target.backend(configurationPath: config.map { WatchSettings.expand($0, environment: environment) })
        if config != nil, own.isRemote {
            printError("quarantine: --config: this account is protected; its guardian service reads its own configuration")
            throw ExitCode(2)
        }
        let guardian = GuardianPaths.isGuardian(uid: getuid())
        let options = ReviewOptions(
            own: own,
            guardedAccounts: { guardian ? GuardianSetup.protectedAccounts().filter { GuardianPaths.servedAccounts().contains($0) } : [] },
            guardedBackend: { user in try SocketBackend(user: user) },
            idleTimeout: Self.seconds(idleTimeout) ?? 600, stateFolder: folder)
        let server = ReviewServer(options: options)
        let printURL = printURL
        let idle = idleTimeout
        do {
            try await server.run { address in
                let url = ReviewPageAddress.address(address.url, at: path)
                self.announce(url, folder: folder, environment: environment, again: false)
                if !printURL { printOut("The page stops after \(idle) without a request (Ctrl-C stops it now).") }
            }
        } catch {
            printError("quarantine: the review page could not be served: \(error)")
            throw ExitCode(2)
        }
    }

    /// Prints the address, or opens it in the browser through a 0600 page in the private folder
    /// (the secret never goes on a command line, where other accounts could read it in /proc).
    func announce(_ url: String, folder: String, environment: [String: String], again: Bool) {
        if printURL {
            printOut(url)
            return
        }
        let launcher = ReviewPageAddress.launcher(for: url, in: folder)
        let problem: String?
        if let launcher { problem = Self.openAndWait(launcher, environment: environment) } else { problem = "cannot write the page that opens it in \(folder)" }
        if let problem {
            printError("quarantine: could not open a browser (\(problem)). Open this address yourself:")
            printOut(url)
        } else {
            printOut((again ? "Your review page runs already: asked the browser to open it again" : "Asked the browser to open the review page")
                     + " (xdg-open). If it does not appear, open: \(url)")
        }
    }

    /// Starts `xdg-open target` and waits up to `timeout` seconds for its answer: why it failed, or nil
    /// (it succeeded, or is still busy: a browser it started itself may keep it waiting).
    ///
    /// The status comes from ``DetachedProgram/start(_:environment:discardingOutput:exited:)``'s
    /// reaper, the only one that waits for the child: a second `waitpid` here would race it
    /// (ECHILD, and a failure read as success).
    static func openAndWait(_ target: String, environment: [String: String], timeout: TimeInterval = 10) -> String? {
        guard let command = DetachedProgram.desktopCommand("xdg-open", [target], environment: environment) else {
            return "xdg-open is not installed (package xdg-utils)"
        }
        let exit = Locked<Int32?>(nil)
        let ended = DispatchSemaphore(value: 0)
        let started = DetachedProgram.start(command, environment: environment) { status in
            exit.withLock { $0 = status }
            ended.signal()
        }
        if case .failure(let error) = started { return "\(error)" }
        guard ended.wait(timeout: .now() + timeout) == .success, let status = exit.withLock({ $0 }) else { return nil }
        if status & 0x7f != 0 { return "xdg-open was killed by signal \(status & 0x7f)" }
        let code = (status >> 8) & 0xff
        return code == 0 ? nil : "xdg-open exited with status \(code)"
    }
}
