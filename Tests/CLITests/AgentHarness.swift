import Foundation
import Testing
import TestSupport

/// The agent end to end: the built binary with real inotify, decoders, models and SQLite, in a
/// temporary home whose Downloads it watches.
final class AgentHarness: @unchecked Sendable {
    var cli: CLIRunner
    let downloads: URL
    let log: URL
    var process: Process?
    var extraEnvironment: [String: String] = [:]

    init(config: String? = nil) throws {
        cli = try CLIRunner()
        downloads = cli.home.appendingPathComponent("Downloads")
        log = cli.home.appendingPathComponent("agent.log")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let configDir = cli.home.appendingPathComponent(".config/quarantine")
        try FileManager.default.createDirectory(at: configDir, withIntermediateDirectories: true)
        let text = config ?? """
        [watch]
        incoming = ["\(downloads.path)"]
        """
        try text.write(to: configDir.appendingPathComponent("config.toml"), atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    }

    /// The environment of every run: no desktop session (notifications are logged only) unless
    /// a test sets DBUS_SESSION_BUS_ADDRESS in `extraEnvironment`; no runtime folder unless it
    /// sets XDG_RUNTIME_DIR (``privateRuntimeFolder()``).
    var environment: [String: String] {
        var env = extraEnvironment
        env["DBUS_SESSION_BUS_ADDRESS"] = extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        env["NOTIFY_SOCKET"] = extraEnvironment["NOTIFY_SOCKET"] ?? ""
        env["XDG_RUNTIME_DIR"] = extraEnvironment["XDG_RUNTIME_DIR"] ?? ""
        return env
    }

    /// A 0700 runtime folder in the home, as XDG_RUNTIME_DIR of every run: what the agent and
    /// the review page keep there (the page's address) is this test's, not in the /tmp folder
    /// every test of this user shares.
    @discardableResult
    func privateRuntimeFolder() throws -> URL {
        let runtime = cli.home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        extraEnvironment["XDG_RUNTIME_DIR"] = runtime.path
        return runtime
    }

    /// When the running agent exited (its termination handler), for stop times without polling lag.
    private let exits = ExitTimes()

    /// Starts `quarantine agent` with its log in `log`, and waits until it watches (says so in
    /// the log after this start: the log keeps every earlier run's lines too). With `wrapper`,
    /// that program runs first and execs the agent (a sandbox, say).
    func start(_ arguments: [String] = [], waitForReady: Bool = true, wrapper: [String] = []) async throws {
        let process = cli.process(["agent", "--log-level", "debug"] + arguments, environment: environment)
        if let program = wrapper.first {
            precondition(cli.wrapper.isEmpty, "one wrapper at a time")
            process.arguments = Array(wrapper.dropFirst()) + [CLIRunner.binary.path] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: program)
        }
        let handle = try FileHandle(forWritingTo: log)
        let startedAt = Int(handle.seekToEndOfFile())
        process.standardOutput = handle
        process.standardError = handle
        let exits = self.exits
        process.terminationHandler = { exited in exits.note(exited.processIdentifier) }
        try process.run()
        self.process = process
        if waitForReady {
            let ready = await wait(timeout: 60) { self.logText(since: startedAt).contains("file(s) waiting from before") }
            #expect(ready, "the agent started watching; log:\n\(logText)")
        }
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// The log from byte `offset` on (what runs after that point wrote).
    func logText(since offset: Int) -> String {
        guard let data = try? Data(contentsOf: log), data.count > offset else { return "" }
        return String(decoding: data.dropFirst(offset), as: UTF8.self)
    }

    /// Sends `signal` and waits for the exit; returns (status, seconds taken). An agent still
    /// running after `timeout` seconds fails the test and is killed: a hang never stalls the suite.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM, timeout: Double = 30) async -> (status: Int32, seconds: Double) {
        guard let process, process.isRunning else { return (process?.terminationStatus ?? -1, 0) }
        let started = Date()
        let pid = process.processIdentifier
        kill(pid, signal)
        while exits.time(of: pid) == nil && Date().timeIntervalSince(started) < timeout { try? await Task.sleep(for: .milliseconds(10)) }
        if exits.time(of: pid) == nil {
            Issue.record("the agent did not exit within \(timeout) s of signal \(signal): killed. Log tail:\n\(logText.suffix(3000))")
            kill(pid, SIGKILL)
        }
        await offPool { process.waitUntilExit() }
        self.process = nil
        return (process.terminationStatus, (exits.time(of: pid) ?? Date()).timeIntervalSince(started))
    }

    /// Kills a running agent at once and waits for it (for `defer`: a SIGKILLed process is gone in moments).
    func cleanUp() {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        process = nil
        cli.cleanUp()
    }

    /// Polls `condition` until it holds or `timeout` seconds pass: every 100 ms at first, then
    /// less often (up to every 0.5 s). A poll of the agent's state runs the CLI, and a process
    /// start of the debug binary costs ~60 ms of CPU (its 176 shared libraries bound at start):
    /// polled unconditionally, these were about half the suite's CPU. So at each poll the
    /// condition is evaluated again only if what it can read may have changed since it was last
    /// evaluated (``stateStamp()``: the agent logs every step at debug level and writes its
    /// database and status under the home), or a second has passed (for what no file there
    /// shows). So it is never evaluated more often than before; a change under the home is seen
    /// at the same poll as before, one elsewhere (a notification, a thread) at most 0.5 s later.
    func wait(timeout: Double, _ condition: () async throws -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var pause = 0.1
        var seen = stateStamp()
        var evaluated = Date()
        if (try? await condition()) == true { return true }
        while Date() < deadline {
            try? await Task.sleep(for: .seconds(min(pause, max(0, deadline.timeIntervalSinceNow))))
            pause = min(0.5, pause * 1.25)
            let stamp = stateStamp()
            guard stamp != seen || Date().timeIntervalSince(evaluated) >= 1 else { continue }
            seen = stamp
            evaluated = Date()
            if (try? await condition()) == true { return true }
        }
        return (try? await condition()) == true
    }

    /// What changes when the agent does something a wait can see: every file under the test's
    /// home (the agent's log, its database, status and vault, Downloads) by name, size and
    /// modification time, and whether the agent still runs. SQLite's -wal, -shm and -journal files
    /// are left out: a reader (the CLI polling) may create, change or remove them itself.
    func stateStamp() -> [String] {
        var stamp = [process.map { $0.isRunning ? "running" : "exited" } ?? "none"]
        let root = cli.home.path
        guard let walk = FileManager.default.enumerator(atPath: root) else { return stamp }
        while let relative = walk.nextObject() as? String {
            if relative.hasSuffix("-wal") || relative.hasSuffix("-shm") || relative.hasSuffix("-journal") { continue }
            var info = stat()
            guard lstat(root + "/" + relative, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                stamp.append(relative + "/")
            } else {
                stamp.append("\(relative) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)")
            }
        }
        return stamp.sorted()
    }

    /// Runs `quarantine ARGUMENTS` in the agent's environment. The verbs that only read the
    /// person's vault (`status`, `list`, `show`, `history`, `count`: the polls of the agent's
    /// state) run in the test process through the CLI's library (``InProcessCLI``), unless the
    /// commands run as another user (``runUnprivileged()``); the rest run the built binary.
    func run(_ arguments: [String]) async throws -> CLIRunner.Result {
        if inProcess(arguments) { return await InProcessCLI.run(arguments, environment: cli.environment(environment)) }
        return try await cli.run(arguments, environment: environment)
    }

    /// ``run(_:)`` for a thread of its own that may block.
    func runBlocking(_ arguments: [String]) throws -> CLIRunner.Result {
        if inProcess(arguments) { return InProcessCLI.runBlocking(arguments, environment: cli.environment(environment)) }
        return try cli.runBlocking(arguments, environment: environment).0
    }

    /// ``run(_:)`` always on the built binary.
    func runBinary(_ arguments: [String]) async throws -> CLIRunner.Result { try await cli.run(arguments, environment: environment) }

    /// ``runBlocking(_:)`` always on the built binary.
    func runBinaryBlocking(_ arguments: [String]) throws -> CLIRunner.Result { try cli.runBlocking(arguments, environment: environment).0 }

    /// Whether `arguments` run in process: a read-only verb, as this test process's own user.
    private func inProcess(_ arguments: [String]) -> Bool { cli.wrapper.isEmpty && InProcessCLI.handles(arguments) }

    /// Vault items, as `quarantine list --json` gives them.
    func items() async throws -> [[String: Any]] { try await run(["list", "--json"]).jsonLines() }

    func status() async throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(try await run(["status", "--json"]).stdout.utf8)) as! [String: Any]
    }

    /// The counters of the last published status.
    func counters() async throws -> [String: Int] {
        ((try await status()["last_status"] as? [String: Any])?["counters"] as? [String: Int]) ?? [:]
    }

    func queueDepth() async throws -> Int { (try await status()["queue_depth"] as? Int) ?? -1 }

    /// From now on the agent and every command run as `nobody` when the tests run as root (for
    /// whom no permission bit stops a read), with the home and a copy of the runtime and models
    /// handed to that user. Returns the uid and gid files must belong to.
    func runUnprivileged() throws -> (uid: uid_t, gid: gid_t) {
        guard getuid() == 0 else { return (getuid(), getgid()) }
        let models = URL(fileURLWithPath: "/tmp/quarantine-test-runtime-for-nobody")
        let source = cli.environment([:])["QUARANTINE_DATA_DIR"]!
        if !FileManager.default.fileExists(atPath: models.appendingPathComponent("models").path) {
            let staging = models.path + ".\(getpid()).\(UUID().uuidString)"
            let copy = Process()
            copy.executableURL = URL(fileURLWithPath: "/bin/sh")
            copy.arguments = ["-c", "mkdir -p \"$1\" && cp -r \"$2/lib\" \"$2/models\" \"$1/\" && chmod -R a+rX \"$1\" && mv -T \"$1\" \"$3\" 2>/dev/null || rm -rf \"$1\"",
                              "sh", staging, source, models.path]
            try copy.run()
            copy.waitUntilExit()
        }
        extraEnvironment["QUARANTINE_DATA_DIR"] = models.path
        let chown = Process()
        chown.executableURL = URL(fileURLWithPath: "/bin/chown")
        chown.arguments = ["-R", "65534:65534", cli.home.path]
        try chown.run()
        chown.waitUntilExit()
        chmod(cli.home.path, 0o755)
        cli.wrapper = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
        return (65534, 65534)
    }

    /// Writes the test card at `path` (through a scratch file outside the watched folders).
    /// The notifications this agent sent about its own items. Run as root, an agent is a
    /// guardian and also tells release requests of protected accounts, which the guardian
    /// end-to-end test makes at the same time on this machine: those are left out.
    func notices(on bus: PrivateSessionBus) throws -> [[String: Any]] {
        try bus.recordedCalls().filter { ($0["summary"] as? String)?.hasSuffix("asks for a picture back") != true }
    }

    /// A stand-in for xdg-open (the desktop's handler) first in PATH: records what it was asked
    /// to open in the returned file. The real one is tried by `make desktop-test`.
    func standInOpener() throws -> URL {
        let bin = cli.home.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let opened = cli.home.appendingPathComponent("opened.txt")
        try "#!/bin/sh\necho \"$1\" >> \(opened.path)\n".write(to: bin.appendingPathComponent("xdg-open"), atomically: true, encoding: .utf8)
        chmod(bin.appendingPathComponent("xdg-open").path, 0o755)
        extraEnvironment["PATH"] = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        return opened
    }

    /// `quarantine testcard --size SIZE` writes the same bytes every time: each size is made
    /// once per test process by the built binary, and copied after (a start of the binary costs
    /// ~70 ms of CPU, and the agent tests write dozens of cards). The copy is 0600, as the
    /// binary writes it.
    func writeCard(_ path: URL, size: String = "640x480") async throws {
        let scratch = cli.home.appendingPathComponent("scratch-\(UUID().uuidString).jpg")
        if let bytes = Self.cards.bytes(size) {
            guard FileManager.default.createFile(atPath: scratch.path, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: scratch.path])
            }
        } else {
            let made = try await cli.run(["testcard", "--size", size, scratch.path])
            #expect(made.status == 0, "testcard --size \(size): \(made.stderr)")
            if made.status == 0 { Self.cards.keep(size, try Data(contentsOf: scratch)) }
        }
        try FileManager.default.moveItem(at: scratch, to: path)
    }

    /// The test cards made so far in this process, by size (JPEG).
    static let cards = CardCache()

    /// Test cards by size, shared by every harness of the process.
    final class CardCache: @unchecked Sendable {
        private let lock = NSLock()
        private var made: [String: Data] = [:]
        func bytes(_ size: String) -> Data? { lock.withLock { made[size] } }
        func keep(_ size: String, _ bytes: Data) { lock.withLock { made[size] = bytes } }
    }
}
