import CSystemShims
import Foundation
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport
import Testing
import TestSupport
@testable import AnalysisWorker

/// The worker launcher (`quarantine worker-launcher`) in this process, on a socket in a fresh
/// folder: who it refuses and what, and (as root, with real accounts) the worker it starts for a
/// guardian service: the account's worker user, killed when the guardian hangs up or asks, and
/// the guardian's side (``SandboxedAnalysis`` asking it) judging and stopping hung files.
@Suite("Worker launcher", .serialized, .ownThread)
struct LauncherServiceTests {
    /// The launcher's log lines, kept for the checks.
    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var kept: [String] = []
        func append(_ line: String) { lock.lock(); kept.append(line); lock.unlock() }
        var lines: [String] { lock.lock(); defer { lock.unlock() }; return kept }
    }

    /// A launcher listening in a fresh folder, with a configuration folder of its own.
    final class Place {
        let folder: URL
        var socket: String { folder.appendingPathComponent("launcher.sock").path }
        var configurations: String { folder.appendingPathComponent("etc").path }
        var lines: [String] { log.lines }
        let log = Lines()
        var service: LauncherService?

        init() throws {
            folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("qlaunch-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(atPath: folder.appendingPathComponent("etc").path, withIntermediateDirectories: true)
        }

        /// Starts a launcher that takes requests from `peer` (default: this process's user).
        @discardableResult
        func start(peer: uid_t = getuid(), runtime: String? = nil, perAccount: Int = 6, total: Int = 24,
                   requestTimeout: Duration = .seconds(5)) throws -> LauncherService {
            var options = LauncherService.Options(peerUID: peer, runtimeFolder: runtime ?? folder.path)
            options.socketPath = socket
            options.configurationFolder = configurations
            options.executable = SandboxedAnalysisTests.binary
            options.maxWorkersPerAccount = perAccount
            options.maxWorkers = total
            options.requestTimeout = requestTimeout
            let log = self.log
            options.log = { line in log.append(line) }
            let service = try LauncherService(options: options)
            service.start()
            self.service = service
            return service
        }

        /// A copy of the models and ONNX Runtime in a 0755 folder inside this 0700 one, as
        /// /var/lib/quarantine/runtime is: the worker user reaches it only by the descriptor.
        func runtime() throws -> String {
            let runtime = folder.appendingPathComponent("runtime")
            let source = URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share/quarantine")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            for sub in ["lib", "models"] { try FileManager.default.copyItem(at: source.appendingPathComponent(sub), to: runtime.appendingPathComponent(sub)) }
            chmod(runtime.path, 0o755)
            chmod(folder.path, 0o700)
            return runtime.path
        }

        /// Marks `user` as a protected account (its configuration exists).
        func protect(_ user: String) throws {
            try "mode = \"child\"\n".write(toFile: configurations + "/" + user + ".toml", atomically: true, encoding: .utf8)
        }

        deinit {
            service?.stop()
            service?.killAll()
            service?.waitForWorkers(timeout: .seconds(3))
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// What came back on a connection: nil when it closed without a word.
    static func answer(_ connection: LocalSocket, timeout: Int32 = 10_000) -> LocalSocket.Message? {
        var poller = pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, timeout) > 0 else { return nil }
        return (try? connection.receive()) ?? nil
    }

    static func want(_ account: UInt32, _ environment: [String: String] = [:]) -> [UInt8] {
        LauncherMessage.encode(.want, LauncherMessage.Want(account: account, environment: environment))
    }

    static func refusal(_ message: LocalSocket.Message?) -> String? {
        message.flatMap { LauncherMessage.decode(.refused, LauncherMessage.Refused.self, $0.bytes)?.reason }
    }

    // MARK: - Refusals (any user)

    @Test("a peer of another user is refused before anything is read: the connection closes without a word, no worker starts, and the descriptors it sent are closed with it")
    func wrongPeer() throws {
        let place = try Place()
        try place.start(peer: getuid() == 4_242_424 ? 4_242_425 : 4_242_424)
        try place.protect(try #require(LauncherService.user(uid: getuid())))
        let connection = try LocalSocket.connect(to: place.socket)
        var ends: [Int32] = [-1, -1]
        // Close-on-exec: a worker another test spawns meanwhile must not hold a copy.
        #expect(qsys_pipe_cloexec(&ends) == 0)
        defer { close(ends[0]) }
        // (The launcher may have closed the connection already: then the send fails.)
        try? connection.send(Self.want(getuid()), descriptors: [ends[1]])
        close(ends[1])
        let message = Self.answer(connection)
        #expect(message == nil, "the launcher answered a peer it should refuse: \(message.map { String(decoding: $0.bytes, as: UTF8.self) } ?? "")")
        // The pipe's last write end went with the closed connection: the read end sees the end.
        #expect(fcntl(ends[0], F_SETFL, O_NONBLOCK) == 0)
        // (A test beside this one that forks without exec, such as the sandbox probes, holds a copy
        // of every descriptor until its child ends: waited for, up to 15 s.)
        var byte: UInt8 = 0
        var result = read(ends[0], &byte, 1)
        let deadline = Date().addingTimeInterval(15)
        while result < 0 && errno == EAGAIN && Date() < deadline {
            usleep(20_000)
            result = read(ends[0], &byte, 1)
        }
        #expect(result == 0, "a write end is still open somewhere")
        #expect(place.lines.contains { $0.contains("refused a connection from uid \(getuid())") }, "\(place.lines)")
        #expect(place.service?.workers.isEmpty == true)
    }

    @Test("a request for an account that is not protected, that does not exist, or is reserved is refused with the reason")
    func unknownAccounts() throws {
        let place = try Place()
        try place.start()
        let me = try #require(LauncherService.user(uid: getuid()))
        for (account, words) in [(getuid(), "is not a protected account"), (4_000_000_001, "there is no account with uid 4000000001")] {
            let connection = try LocalSocket.connect(to: place.socket)
            try connection.send(Self.want(account))
            let reason = Self.refusal(Self.answer(connection))
            #expect(reason?.contains(words) == true, "\(account): \(reason ?? "no refusal")")
        }
        // Protected, but no worker user quarantine-w<uid>.
        try place.protect(me)
        if LauncherService.user(named: SandboxedAnalysis.Options.guardianWorkerUser(forAccount: getuid())) == nil {
            let connection = try LocalSocket.connect(to: place.socket)
            try connection.send(Self.want(getuid()))
            #expect(Self.refusal(Self.answer(connection))?.contains("there is no worker user quarantine-w\(getuid())") == true)
        }
        #expect(place.service?.workers.isEmpty == true)
    }

    @Test("malformed requests are refused: no known kind, broken JSON, a variable off the allow-list (LD_PRELOAD), a NUL in a value, over 16 KiB; then the launcher still answers")
    func malformed() throws {
        let place = try Place()
        try place.start()
        let cases: [([UInt8], String)] = [
            (Array("hello".utf8), "not one the launcher knows"),
            (Array("W{\"account\":".utf8), "not one the launcher knows"),
            ([LauncherMessage.Kind.kill.rawValue], "not one the launcher knows"),
            (Self.want(1, ["LD_PRELOAD": "/tmp/x.so"]), "LD_PRELOAD"),
            (Self.want(1, ["QUARANTINE_LOG_LEVEL": "info\u{0}x"]), "NUL"),
            (Self.want(1, ["QUARANTINE_LOG_LEVEL": String(repeating: "x", count: 20_000)]), "over"),
        ]
        for (bytes, words) in cases {
            let connection = try LocalSocket.connect(to: place.socket)
            try connection.send(bytes)
            let reason = Self.refusal(Self.answer(connection))
            #expect(reason?.contains(words) == true, "\(String(decoding: bytes.prefix(40), as: UTF8.self)): \(reason ?? "no refusal")")
            #expect(Self.answer(connection, timeout: 2000) == nil, "the connection stays open after a refusal")
        }
        // Silence: refused after the request timeout, not kept.
        let place2 = try Place()
        try place2.start(requestTimeout: .milliseconds(300))
        let idle = try LocalSocket.connect(to: place2.socket)
        #expect(Self.refusal(Self.answer(idle, timeout: 3000))?.contains("no request within") == true)
    }

    @Test("descriptors passed with a request are closed by the launcher, which refuses it")
    func passedDescriptorsClosed() throws {
        let place = try Place()
        try place.start()
        let connection = try LocalSocket.connect(to: place.socket)
        var ends: [Int32] = [-1, -1]
        // Close-on-exec: a worker another test spawns meanwhile must not hold a copy.
        #expect(qsys_pipe_cloexec(&ends) == 0)
        defer { close(ends[0]) }
        try connection.send(Self.want(getuid()), descriptors: [ends[1], ends[1], ends[1]])
        close(ends[1])
        #expect(Self.refusal(Self.answer(connection))?.contains("carries no descriptors") == true)
        // Every copy the launcher received is closed: the pipe has no writer left while the
        // connection (whose queue is empty now) is still open.
        #expect(fcntl(ends[0], F_SETFL, O_NONBLOCK) == 0)
        var byte: UInt8 = 0
        // That end of file is the proof: the launcher (in this process) received only write ends,
        // and none is open anywhere. (A count of this process's descriptors before and after, as
        // this test once also made, is changed by every test running beside it.)
        #expect(read(ends[0], &byte, 1) == 0, "a write end is still open somewhere: \(String(cString: strerror(errno)))")
    }

    // MARK: - Real workers (root)

    /// A protected account and its worker user, made for the test and removed after.
    struct Accounts {
        let user: String
        let uid: uid_t
        let worker: String
        let workerUID: uid_t
        let workerGID: gid_t
        /// Whether the test made the worker user (one left by an earlier account with this uid,
        /// 'guardian enable' in another test, is used and left).
        let madeWorker: Bool

        init() throws {
            user = "qlt\(UInt32.random(in: 10000...99999))"
            #expect(SandboxedAnalysisTests.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", user]) == 0)
            uid = try #require(LauncherService.user(named: user)).uid
            worker = SandboxedAnalysis.Options.guardianWorkerUser(forAccount: uid)
            madeWorker = LauncherService.user(named: worker) == nil
            if madeWorker {
                #expect(SandboxedAnalysisTests.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", worker]) == 0)
            }
            let ids = try #require(LauncherService.user(named: worker))
            (workerUID, workerGID) = (ids.uid, ids.gid)
        }

        func remove() {
            if madeWorker { _ = SandboxedAnalysisTests.run(["userdel", worker]) }
            _ = SandboxedAnalysisTests.run(["userdel", user])
        }
    }

    /// Whether `condition` holds within `within`.
    static func eventually(within: Duration = .seconds(2), _ condition: () -> Bool) -> Bool {
        let end = ContinuousClock.now + within
        while ContinuousClock.now < end {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    static func gone(_ pid: pid_t, within: Duration) -> Bool {
        let end = ContinuousClock.now + within
        while ContinuousClock.now < end {
            if !FileManager.default.fileExists(atPath: "/proc/\(pid)") { return true }
            usleep(20_000)
        }
        return !FileManager.default.fileExists(atPath: "/proc/\(pid)")
    }

    @Test("as root: the worker runs as the account's worker user (real, effective, saved), no groups, no capabilities, says hello; the guardian's hang-up kills it; 'kill' kills it and says so; a worker that ends closes the connection with how", .enabled(if: getuid() == 0, "needs root to make accounts and switch users"))
    func workerLife() throws {
        let accounts = try Accounts(); defer { accounts.remove() }
        let place = try Place()
        try place.start(runtime: try place.runtime())
        try place.protect(accounts.user)

        func launch() throws -> (LocalSocket, pid_t, LocalSocket, Int32) {
            let connection = try LocalSocket.connect(to: place.socket)
            try connection.send(Self.want(accounts.uid, ["QUARANTINE_LOG_LEVEL": "error"]))
            let message = try #require(Self.answer(connection))
            let started = try #require(LauncherMessage.decode(.started, LauncherMessage.Started.self, message.bytes), "\(Self.refusal(message) ?? "?")")
            #expect(message.descriptors.count == 2)
            return (connection, started.pid, LocalSocket(adopting: message.descriptors[0]), message.descriptors[1])
        }

        // 1. Its identity, and its hello.
        let (connection, pid, worker, errors) = try launch()
        defer { close(errors) }
        let expected = ["\(accounts.workerUID)", "\(accounts.workerUID)", "\(accounts.workerUID)", "\(accounts.workerUID)"]
        #expect(SandboxedAnalysisTests.status(pid, "Uid")?.split(whereSeparator: \.isWhitespace).map(String.init) == expected, "real, effective, saved, fs")
        #expect(SandboxedAnalysisTests.status(pid, "Gid")?.split(whereSeparator: \.isWhitespace).map(String.init) == Array(repeating: "\(accounts.workerGID)", count: 4))
        #expect(SandboxedAnalysisTests.status(pid, "Groups") == "")
        for set in ["CapEff", "CapPrm", "CapAmb", "CapInh"] { #expect(SandboxedAnalysisTests.status(pid, set) == "0000000000000000", "\(set)") }
        let hello = try #require(Self.answer(worker, timeout: 60_000))
        let said = try #require(WorkerMessage.decode(WorkerMessage.Hello.self, hello.bytes))
        #expect(said.error == nil && said.confinement?.contains("user \(accounts.worker)") == true, "\(said)")
        #expect(place.service?.workers == [pid])

        // 2. The guardian hangs up: the worker is killed at once.
        connection.close()
        #expect(Self.gone(pid, within: .seconds(3)), "the worker outlived the guardian's connection")
        // (Logged just after it is reaped.)
        #expect(Self.eventually { place.lines.contains { $0.contains("worker \(pid)") && $0.contains("the guardian's connection closed") } }, "\(place.lines)")

        // 3. "kill": killed, and the launcher says so before it closes.
        let (second, secondPid, secondWorker, secondErrors) = try launch()
        defer { close(secondErrors); secondWorker.close() }
        try second.send([LauncherMessage.Kind.kill.rawValue])
        let ended = try #require(Self.answer(second))
        #expect(LauncherMessage.decode(.ended, LauncherMessage.Ended.self, ended.bytes)?.how.contains("killed at the guardian's request") == true)
        #expect(Self.answer(second, timeout: 3000) == nil)
        #expect(Self.gone(secondPid, within: .seconds(3)))

        // 4. The worker ends by itself (its service hung up on it, after its hello): the launcher
        //    says how, and closes the connection.
        let (third, thirdPid, thirdWorker, thirdErrors) = try launch()
        defer { close(thirdErrors) }
        _ = Self.answer(thirdWorker, timeout: 60_000)
        thirdWorker.close()
        let thirdEnded = try #require(Self.answer(third, timeout: 10_000))
        #expect(LauncherMessage.decode(.ended, LauncherMessage.Ended.self, thirdEnded.bytes)?.how == "exit status 0")
        #expect(Self.answer(third, timeout: 3000) == nil)
        #expect(Self.gone(thirdPid, within: .seconds(2)))
        #expect(place.service?.waitForWorkers(timeout: .seconds(2)) == true)
    }

    @Test("as root: at most the per-account cap of workers run for one account; one more is refused until one ends", .enabled(if: getuid() == 0, "needs root to make accounts and switch users"))
    func perAccountCap() throws {
        let accounts = try Accounts(); defer { accounts.remove() }
        let place = try Place()
        try place.start(runtime: try place.runtime(), perAccount: 2)
        try place.protect(accounts.user)
        // The worker's socket (the first descriptor) is kept open beside its connection: a worker
        // whose socket is closed ends by itself once it has started (in about 0.3 s now), which
        // is not what this test counts.
        var kept: [LocalSocket] = []
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<2 {
            let connection = try LocalSocket.connect(to: place.socket)
            try connection.send(Self.want(accounts.uid))
            let message = try #require(Self.answer(connection))
            sockets += message.descriptors
            #expect(message.bytes.first == LauncherMessage.Kind.started.rawValue)
            kept.append(connection)
        }
        let third = try LocalSocket.connect(to: place.socket)
        try third.send(Self.want(accounts.uid))
        #expect(Self.refusal(Self.answer(third))?.contains("2 workers run for uid \(accounts.uid) already") == true)
        kept.removeFirst().close()
        #expect(place.service?.waitForWorkers(timeout: .milliseconds(300)) == false, "the second worker should still run")
        var started = false
        for _ in 0..<50 where !started {
            let again = try LocalSocket.connect(to: place.socket)
            try again.send(Self.want(accounts.uid))
            let message = Self.answer(again)
            message?.descriptors.forEach { close($0) }
            started = message?.bytes.first == LauncherMessage.Kind.started.rawValue
            if started { kept.append(again) } else { usleep(50_000) }
        }
        #expect(started, "a worker slot did not come back after one ended")
        kept.forEach { $0.close() }
        #expect(place.service?.waitForWorkers(timeout: .seconds(3)) == true)
    }

    @Test("as root, the guardian's side: SandboxedAnalysis asks the launcher (its socket and account set), its worker runs as the worker user and judges the card; a hung file is stopped at the deadline through the launcher ('analysis_timed_out'), and no worker is left after stop()", .enabled(if: getuid() == 0, "needs root to make accounts and switch users"))
    func guardianSide() async throws {
        let accounts = try Accounts(); defer { accounts.remove() }
        let place = try Place()
        try place.start(runtime: try place.runtime())
        try place.protect(accounts.user)
        let files = try SandboxedAnalysisTests.Place(); defer { files.cleanUp() }
        let card = try files.write("card.png", try SandboxedAnalysisTests.card())
        let hang = try files.write("hang.png", Array((SandboxedAnalysisTests.marker + "-hang").utf8) + (try SandboxedAnalysisTests.grey()))

        var environment = ProcessInfo.processInfo.environment
        environment[AnalysisWorkerProcess.testOnlyCrashMarkerVariable] = SandboxedAnalysisTests.marker
        environment[SandboxedAnalysis.Options.launcherVariable] = place.socket
        environment[SandboxedAnalysis.Options.accountVariable] = "\(accounts.uid)"
        var configuration = SensitivityAnalyzer.Configuration(workers: 2)
        configuration.lowPriority = false
        let sandboxed = try SandboxedAnalysis(options: .init(executable: SandboxedAnalysisTests.binary, environment: environment,
                                                             configuration: configuration, deadline: .seconds(2)))
        defer { sandboxed.stop() }
        let pid = try #require(sandboxed.workerProcesses.first)
        #expect(SandboxedAnalysisTests.status(pid, "Uid")?.split(whereSeparator: \.isWhitespace).map(String.init) == Array(repeating: "\(accounts.workerUID)", count: 4))
        #expect(sandboxed.confinement.contains("user \(accounts.worker)") && sandboxed.confinement.contains("started by the worker launcher"), "\(sandboxed.confinement)")
        #expect(place.service?.workers == [pid])

        let flagged = await sandboxed.report(forFileAt: card, policy: .defaults(for: .child), video: VideoOptions())
        #expect(flagged.failure == nil && flagged.isSensitive, "\(flagged.failure?.message ?? "")")

        let stuck = await sandboxed.report(forFileAt: hang, policy: .defaults(for: .child), video: VideoOptions())
        #expect(stuck.failure?.code == "analysis_timed_out", "\(stuck.failure?.message ?? "no failure")")
        #expect(Self.gone(pid, within: .seconds(3)), "the hung worker was not killed")
        #expect(Self.eventually { place.lines.contains { $0.contains("worker \(pid)") && $0.contains("killed at the guardian's request") } }, "\(place.lines)")

        sandboxed.stop()
        #expect(place.service?.waitForWorkers(timeout: .seconds(5)) == true, "workers left: \(place.service?.workers ?? [])")
    }

    @Test("as root: a launcher starting after one that died stops the workers it left (every process of the protected accounts' worker users)", .enabled(if: getuid() == 0, "needs root to make accounts and switch users"))
    func sweep() throws {
        let accounts = try Accounts(); defer { accounts.remove() }
        let place = try Place()
        try place.protect(accounts.user)
        // A worker user's process no launcher watches.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(accounts.workerUID)", "--regid=\(accounts.workerGID)", "--clear-groups", "sleep", "60"]
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        usleep(200_000)
        let service = try place.start()
        #expect(service.sweepLeftoverWorkers() == [accounts.worker])
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }
}
