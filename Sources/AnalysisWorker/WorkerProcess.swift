import CSystemShims
import DownloadOrigins
import Foundation
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport
import Locking

/// The analysis worker: the only process that parses what arrives (decoders, models). It starts
/// with its socket as descriptor 3 (a guardian's worker already as the account's own worker user
/// `quarantine-w<uid>`, started so by the worker launcher; else its own user when the service
/// asks and can switch), enters ``AnalysisSandbox`` before anything else (no capabilities, no
/// network, no writes, no signals to others, a seccomp allow-list), loads the models (from
/// descriptor 4 when its user cannot reach them by path), runs every decoder once on
/// ``WarmUpSamples``, gives up the file system (Landlock), says hello with how it is confined,
/// and then judges each file whose descriptor the service passes, until the service hangs up.
public enum AnalysisWorkerProcess {
    /// The analyzer's tuning, as JSON (``SensitivityAnalyzer/Configuration``).
    public static let configurationVariable = "QUARANTINE_WORKER_CONFIGURATION"
    /// Test only: a file that starts or ends with this text followed by `-crash` makes the
    /// worker abort, followed by `-hang` makes it hang, so tests can show a poison file costs one worker
    /// and one file, never the service; followed by `-where`, the file's report names the thread
    /// its task runs on (``testOnlyWhere(_:analyzer:)``). Unset (always, outside tests), it does nothing.
    public static let testOnlyCrashMarkerVariable = "QUARANTINE_TEST_ONLY_CRASH_MARKER"
    /// The worker's end of the socket pair.
    public static let socketDescriptor: Int32 = 3

    /// The worker's own user and group, `uid:gid` (set by a service that can switch to them).
    public static let identityVariable = "QUARANTINE_WORKER_IDENTITY"
    /// Set to `4` when the service passes the runtime folder (models and ONNX Runtime) as
    /// descriptor 4: a worker of its own user may not be able to reach it by path.
    public static let runtimeDescriptorVariable = "QUARANTINE_WORKER_RUNTIME_DESCRIPTOR"
    /// The runtime folder's descriptor, when passed.
    public static let runtimeDescriptor: Int32 = 4

    /// Enters the sandbox: first thing in `main`, before any thread exists (capabilities are
    /// per thread, and threads inherit them from the one that starts them). With
    /// ``identityVariable`` set, first takes that user and group.
    public static func confine() -> Result<Void, ServiceError> {
        Result { () throws(ServiceError) in
            if let text = getenv(identityVariable).map({ String(cString: $0) }) {
                guard let identity = AnalysisSandbox.Identity(text) else {
                    throw ServiceError(code: .processLaunchFailed, operation: "take the analysis worker's own user",
                                       message: "\(identityVariable)=\(text) is not uid:gid")
                }
                try AnalysisSandbox.becomeWorker(identity)
            }
            try AnalysisSandbox.enter(keepingDescriptorsThrough: keepsRuntimeDescriptor ? runtimeDescriptor : socketDescriptor)
        }
    }

    static var keepsRuntimeDescriptor: Bool { getenv(runtimeDescriptorVariable).map { String(cString: $0) } == "\(runtimeDescriptor)" }

    /// The worker's user and group as the kernel has them, named (before the seal: the name
    /// comes from /etc/passwd), for its hello.
    static func identityText() -> String {
        var real: UInt32 = 0, effective: UInt32 = 0, saved: UInt32 = 0
        _ = qsys_user_ids(&real, &effective, &saved)
        var entry = passwd(), result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        let name = getpwuid_r(effective, &entry, &buffer, buffer.count, &result) == 0 && result != nil ? String(cString: entry.pw_name) : "uid \(effective)"
        return "user \(name) (uid \(effective), gid \(getegid()))"
    }

    /// The worker's async work runs here, never on libdispatch's global queues (``WorkerExecutor``).
    static let executor = WorkerExecutor(threads: 2, name: "worker-async")

    /// Runs the worker, confined by ``confine()`` (its result), and exits with its status. Its
    /// async work runs on ``executor``; it exits from there, not after a hop back to Swift's
    /// global executor (libdispatch's queues, which the sealed worker must leave alone).
    public static func run(environment: [String: String], confined: Result<Void, ServiceError>) async -> Int32 {
        await withTaskExecutorPreference(executor) { () async -> Int32 in
            let status = await serve(environment: environment, confined: confined)
            exit(status)
        }
    }

    static func serve(environment: [String: String], confined: Result<Void, ServiceError>) async -> Int32 {
        var info = stat()
        guard fstat(socketDescriptor, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            FileHandle.standardError.write(Data("quarantine analysis-worker: descriptor 3 is not a socket; this command is started by the agent and the guardian service, not by hand\n".utf8))
            return 2
        }
        let socket = LocalSocket(adopting: socketDescriptor)
        func hello(_ error: String?, confinement: String? = nil) {
            try? socket.send(WorkerMessage.encode(.hello, WorkerMessage.Hello(pid: getpid(), error: error, confinement: confinement)))
        }
        if case .failure(let error) = confined {
            hello("the analysis sandbox cannot be entered: \(error)")
            return 71
        }
        // Nothing is opened by path from here on: only what the service hands over.
        MediaFile.PassedDescriptors.makeExclusive()
        var configuration = SensitivityAnalyzer.Configuration()
        if let text = environment[configurationVariable],
           let decoded = try? JSONDecoder().decode(SensitivityAnalyzer.Configuration.self, from: Data(text.utf8)) {
            configuration = decoded
        }
        let clock = ContinuousClock.now
        let analyzer: SensitivityAnalyzer
        do {
            analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: configuration, catalog: .standard(environment: environment))
        } catch {
            hello("\(error)")
            return 0
        }
        // The media libraries, opened at their first use elsewhere, are opened now, while files
        // may still be opened (one that cannot be is said by `doctor`; a call into it ends the
        // worker saying so). Then every decoder once: what they load on first use (plugins,
        // fonts) is loaded now. Then the runtime folder goes, and the file system.
        LazyLibraries.openAll()
        let loaded = ContinuousClock.now
        let warmed = await warmUp(analyzer)
        // SQLite once, in memory, as a history lookup uses it (whatever it sets up on first use).
        HistoryParsing.warmUp()
        // A crash explains itself on standard error (the service logs it): the signal, where,
        // and the return addresses by library. Installed now that every library is loaded.
        _ = qsys_crash_report_install(2)
        if keepsRuntimeDescriptor { close(runtimeDescriptor) }
        // What the warm-up freed (decoded samples, the models' intermediate tensors) goes back to
        // the kernel: malloc keeps it otherwise, 50 MB of the worker's 200 (measured).
        _ = qsys_release_free_memory()
        let identity = identityText()
        let seal: AnalysisSandbox.FileSystemSeal
        do { seal = try AnalysisSandbox.sealFileSystem(readable: AnalysisSandbox.fontFolders) } catch {
            hello("\(error)")
            return 71
        }
        hello(nil, confinement: "\(identity), seccomp, \(seal)")
        if environment["QUARANTINE_LOG_LEVEL"].map({ ["debug", "trace"].contains($0) }) == true {
            let ms = { (d: Duration) in d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000 }
            let samples = warmed.map { "\($0.name) \(ms($0.took))" }.joined(separator: ", ")
            FileHandle.standardError.write(Data("ready in \(ms(ContinuousClock.now - clock)) ms after main: models \(ms(loaded - clock)) ms, warm-up \(samples) ms\n".utf8))
        }
        let marker = environment[testOnlyCrashMarkerVariable].flatMap { $0.isEmpty ? nil : $0 }

        let (requests, continuation) = AsyncStream<LocalSocket.Message>.makeStream()
        let reader = Thread {
            while let message = try? socket.receive() { continuation.yield(message) }
            continuation.finish()
        }
        reader.name = "worker-receive"
        reader.start()
        let tasks = RunningFiles()
        for await message in requests {
            if message.bytes.first == WorkerMessage.Kind.cancel.rawValue, let cancel = WorkerMessage.decode(WorkerMessage.Cancel.self, message.bytes) {
                tasks.cancel(cancel.id)
                continue
            }
            if message.bytes.first == WorkerMessage.Kind.history.rawValue {
                answerHistory(message, on: socket)
                continue
            }
            guard message.bytes.first == WorkerMessage.Kind.request.rawValue,
                  let request = WorkerMessage.decode(WorkerMessage.Request.self, message.bytes), message.descriptors.count == 1 else {
                message.descriptors.forEach { close($0) }
                continue
            }
            let fd = message.descriptors[0]
            // Its own task, on the worker's executor (an unstructured task would not inherit it).
            tasks.add(request.id, Task(executorPreference: executor) {
                defer { close(fd) }
                let report: FileReport
                if let marker, testOnlySwitch(marker: marker, fd: fd) {
                    report = await testOnlyWhere(request, analyzer: analyzer)
                } else {
                    report = await judge(request, fd: fd, analyzer: analyzer) { update in
                        try? socket.send(WorkerMessage.encode(.progress, WorkerMessage.Progress(id: request.id, fraction: update.fraction, video: update)))
                    }
                }
                var sent = report
                // A frame over the service's cap is not sent (the file then has no blurred preview).
                if let frame = sent.flaggedFrame, frame.pixels.count > WorkerMessage.maxFrameBytes { sent.flaggedFrame = nil }
                if let frame = sent.flaggedFrame {
                    for packet in WorkerMessage.framePackets(id: request.id, pixels: frame.pixels) { try? socket.send(packet) }
                }
                try? socket.send(WorkerMessage.encode(.report, WorkerMessage.Report(id: request.id, sent)))
                tasks.finish(request.id)
            })
        }
        // The service hung up: what is still running is not wanted any more.
        tasks.cancelAll()
        return 0
    }

    /// Looks a download up in the copied bytes of a browser's history (its memory files, passed
    /// with the message), on a thread of its own, and answers: the bytes are the protected
    /// account's, possibly crafted, so they are parsed here, in the sandbox, never by the service.
    static func answerHistory(_ message: LocalSocket.Message, on socket: LocalSocket) {
        guard let request = WorkerMessage.decode(WorkerMessage.HistoryRequest.self, message.bytes),
              message.descriptors.count == 1 + (request.hasWAL ? 1 : 0) + (request.hasJournal ? 1 : 0) else {
            message.descriptors.forEach { close($0) }
            return
        }
        let descriptors = message.descriptors
        let files = HistoryFiles(main: descriptors[0], wal: request.hasWAL ? descriptors[1] : nil,
                                 journal: request.hasJournal ? descriptors[descriptors.count - 1] : nil)
        let thread = Thread {
            defer { descriptors.forEach { close($0) } }
            var answer = WorkerMessage.HistoryAnswer(id: request.id, match: nil, problem: nil)
            do {
                answer.match = try HistoryParsing.match(request.query, files: files)
                if let match = answer.match, !match.isPlausible { answer.match = nil }
            } catch {
                answer.problem = String("\(error)".prefix(1024))
            }
            try? socket.send(WorkerMessage.encode(.origin, answer))
        }
        thread.name = "history-\(request.id)"
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Decodes each of ``WarmUpSamples`` once, from a memfd passed as if the service had sent
    /// it, as a preview: no model runs. ONNX Runtime's first run of a session costs what any
    /// later run does (320n.onnx 30-34 ms, open-nsfw.onnx 24-31 ms, the first of four runs
    /// included) and opens no file, so the first file judged loses nothing; judging the clip here
    /// as well made each start about 80 ms longer (ready median 398 ms against 310 here,
    /// docs/performance.md). The Landlock test judges every sample, the clip too, after the seal.
    /// Returns how long each sample took.
    @discardableResult
    static func warmUp(_ analyzer: SensitivityAnalyzer) async -> [(name: String, took: Duration)] {
        var timings: [(name: String, took: Duration)] = []
        for sample in WarmUpSamples.all {
            let started = ContinuousClock.now
            defer { timings.append((sample.name, ContinuousClock.now - started)) }
            guard let bytes = Data(base64Encoded: sample.base64, options: .ignoreUnknownCharacters) else { continue }
            let fd = qsys_memfd("quarantine-warm-up")
            guard fd >= 0 else { continue }
            defer { close(fd) }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == bytes.count, lseek(fd, 0, SEEK_SET) == 0 else { continue }
            let path = "/quarantine-warm-up/" + sample.name
            guard MediaFile.PassedDescriptors.add(fd, for: path) else { continue }
            defer { MediaFile.PassedDescriptors.remove(path) }
            if sample.name.hasSuffix(".pdf") {
                // Poppler's set-up and its font match, without a model run.
                if let file = try? MediaFile(path: path), let document = try? PDFDocument(descriptor: file.descriptor, path: path),
                   let area = try? document.pageArea(0) {
                    _ = try? document.render(0, area: area, longSide: 64)
                }
            } else {
                _ = await analyzer.previewFrame(forFileAt: path)
            }
        }
        return timings
    }

    /// The analysis of the file `fd` stands for.
    static func judge(_ request: WorkerMessage.Request, fd: Int32, analyzer: SensitivityAnalyzer,
                      progress: @escaping @Sendable (VideoProgress) -> Void) async -> FileReport {
        guard MediaFile.PassedDescriptors.add(fd, for: request.path) else {
            let failure = FileReport.Failure(code: "busy", message: "\(request.path): already being analysed")
            return FileReport(path: request.path, kind: .other, type: .other, analysis: nil, failure: failure, elapsedMilliseconds: 0)
        }
        defer { MediaFile.PassedDescriptors.remove(request.path) }
        if request.previewOnly == true {
            let frame = await analyzer.previewFrame(forFileAt: request.path)
            return FileReport(path: request.path, kind: .other, type: .other, analysis: nil, failure: nil, elapsedMilliseconds: 0, flaggedFrame: frame)
        }
        return await analyzer.report(forFileAt: request.path, policy: request.policy, videoOptions: request.video, progress: progress)
    }

    /// Test only (see ``testOnlyCrashMarkerVariable``): the marker at the start of the file, or
    /// at its end (after a picture's own bytes, which decoders ignore). Returns whether it is
    /// followed by `-where` (``testOnlyWhere(_:analyzer:)``).
    static func testOnlySwitch(marker: String, fd: Int32) -> Bool {
        let length = marker.utf8.count + 6
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        for offset in [0, max(0, Int(info.st_size) - length)] {
            var bytes = [UInt8](repeating: 0, count: length)
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard count > 0 else { continue }
            let text = String(decoding: bytes.prefix(count), as: UTF8.self)
            if text.hasPrefix(marker + "-crash") || text.hasSuffix(marker + "-crash") { abort() }
            if text.hasPrefix(marker + "-hang") || text.hasSuffix(marker + "-hang") { while true { sleep(3600) } }
            if text.hasPrefix(marker + "-where") || text.hasSuffix(marker + "-where") { return true }
        }
        return false
    }

    /// Test only: the name of the thread the file's task runs on after a hop through the
    /// analysis threads (a continuation resumed from one), as the report's failure
    /// (`test_only_where`): a test checks it is the worker's own (``executor``), never
    /// libdispatch's global queues, whose monitor crashed the sandboxed worker (WorkerExecutor).
    static func testOnlyWhere(_ request: WorkerMessage.Request, analyzer: SensitivityAnalyzer) async -> FileReport {
        _ = try? await analyzer.runBlocking { 0 }
        var name = [CChar](repeating: 0, count: 32)
        _ = qsys_thread_name(&name, Int32(name.count))
        let failure = FileReport.Failure(code: "test_only_where", message: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        return FileReport(path: request.path, kind: .other, type: .other, analysis: nil, failure: failure, elapsedMilliseconds: 0)
    }
}

/// The files a worker is judging, for cancelling them (one, or all when the service hangs up).
final class RunningFiles: Sendable {
    struct State {
        var tasks: [UInt64: Task<Void, Never>] = [:]
        /// Finished before they were added.
        var finishedEarly: Set<UInt64> = []
    }
    let state = Locked(State())

    func add(_ id: UInt64, _ task: Task<Void, Never>) {
        state.withLock { s in
            if s.finishedEarly.remove(id) == nil { s.tasks[id] = task }
        }
    }

    func finish(_ id: UInt64) {
        state.withLock { s in
            if s.tasks.removeValue(forKey: id) == nil { s.finishedEarly.insert(id) }
        }
    }

    func cancel(_ id: UInt64) { state.withLock { $0.tasks[id] }?.cancel() }

    func cancelAll() { for task in state.withLock({ Array($0.tasks.values) }) { task.cancel() } }
}
