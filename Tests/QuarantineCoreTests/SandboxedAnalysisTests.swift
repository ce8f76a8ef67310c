import Foundation
import Locking
import MediaDecoding
import SensitivityAnalysis
import ServiceSupport
import Testing
import TestSupport
@testable import AnalysisWorker

/// The confined analysis worker, as the agent and the guardian service run it: the built
/// `quarantine analysis-worker` with the real models, handed descriptors over its socket.
@Suite("Sandboxed analysis")
struct SandboxedAnalysisTests {
    /// The binary `swift build` made next to this test bundle.
    static var binary: String { BuiltProgram.quarantine.path }

    static let marker = "QUARANTINE-TEST-ONLY-POISON"

    struct Place {
        let folder: URL
        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-worker-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        func write(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        func cleanUp() { try? FileManager.default.removeItem(at: folder) }
    }

    func analysis(deadline: Duration = .seconds(60), environment extra: [String: String] = [:]) throws -> SandboxedAnalysis {
        var environment = ProcessInfo.processInfo.environment
        environment[AnalysisWorkerProcess.testOnlyCrashMarkerVariable] = Self.marker
        environment.merge(extra) { $1 }
        var configuration = SensitivityAnalyzer.Configuration(workers: 2)
        configuration.lowPriority = false
        return try SandboxedAnalysis(options: .init(executable: Self.binary, environment: environment, configuration: configuration, deadline: deadline))
    }

    static func card() throws -> [UInt8] { try PNGEncoder.encode(TestCard.render(width: 320, height: 240)) }
    static func grey(_ width: Int = 200) throws -> [UInt8] {
        try PNGEncoder.encode(RGBImage(width: width, height: 150, pixels: [UInt8](repeating: 128, count: width * 150 * 3)))
    }

    /// A `/proc/PID/status` field.
    static func status(_ pid: pid_t, _ field: String) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix(field + ":") }.map { $0.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    @Test("a preview without a verdict: the worker decodes the picture it is handed (a file hidden because it is blocked); nothing for a file that is no picture")
    func previewOnly() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        let grey = try place.write("item", try Self.grey(300))
        let frame = try #require(await sandboxed.previewFrame(forFileAt: grey))
        #expect(frame.width > 0 && frame.pixels.count == frame.width * frame.height * 3)
        #expect(frame.pixels.allSatisfy { $0 == 128 })
        let text = try place.write("notes", Array("just text".utf8))
        #expect(await sandboxed.previewFrame(forFileAt: text) == nil)
    }

    @Test("a worker that ends before its hello without saying why (killed at its start) is started again at once and judges; two such ends in a row are a problem that names both")
    func startedAgainAfterEndBeforeHello() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let tried = place.folder.appendingPathComponent("tried").path
        var configuration = SensitivityAnalyzer.Configuration(workers: 2)
        configuration.lowPriority = false
        // A stand-in start (a shell, not the real worker): the first time, it dies of SIGILL before
        // any hello, as libdispatch's thread-pool monitor killed a real worker during its start
        // (two saturated cores, the agent held to a quarter of one); after that, the real worker.
        let once = "if [ -e '\(tried)' ]; then exec '\(Self.binary)' analysis-worker; fi; : > '\(tried)'; kill -ILL $$"
        var options = SandboxedAnalysis.Options(executable: "/bin/sh", arguments: ["-c", once], environment: ProcessInfo.processInfo.environment,
                                                configuration: configuration, deadline: .seconds(60))
        let told = Locked<[String]>([])
        options.onStartedAgain = { why in told.withLock { $0.append(why) } }
        let sandboxed = try SandboxedAnalysis(options: options)
        defer { sandboxed.stop() }
        #expect(FileManager.default.fileExists(atPath: tried), "the first start did not run")
        let reasons = told.withLock { $0 }
        #expect(reasons.count == 1 && reasons.first?.contains("ended before it was ready") == true && reasons.first?.contains("signal 4") == true, "\(reasons)")
        #expect(sandboxed.startsAgainAfterEnd == 1 && sandboxed.starts == 1, "\(sandboxed.startsAgainAfterEnd) starts again, \(sandboxed.starts) started")
        let card = try place.write("card.png", try Self.card())
        let flagged = await sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
        #expect(flagged.failure == nil && flagged.isSensitive, "\(String(describing: flagged.failure))")
        // Every start ends so: not started a third time; the problem says what happened, twice.
        do {
            let never = try SandboxedAnalysis(options: .init(executable: "/bin/sh", arguments: ["-c", "kill -ILL $$"], environment: ProcessInfo.processInfo.environment,
                                                             configuration: configuration, deadline: .seconds(60)))
            never.stop()
            Issue.record("a worker that always ends before its hello was taken as started")
        } catch {
            #expect(error.description.contains("ended before it was ready") && error.description.contains("twice in a row")
                    && error.description.contains("signal 4"), "\(error)")
        }
    }

    @Test("the worker judges what it is handed: the card flagged with its frame for the preview, a grey picture clean; it holds no capability and runs under seccomp")
    func judges() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        let card = try place.write("card.png", try Self.card())
        let grey = try place.write("grey.png", try Self.grey())
        let flagged = await sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
        #expect(flagged.failure == nil)
        #expect(flagged.isSensitive)
        #expect(flagged.analysis?.reasons.first?.hasPrefix(TestCard.label) == true)
        #expect(flagged.analysis?.identity == (try MediaFile(path: card).identity))
        #expect(flagged.flaggedFrame.map { $0.width > 0 && $0.pixels.count == $0.width * $0.height * 3 } == true)
        let clean = await sandboxed.report(forFileAt: grey, policy: .defaults(for: .child), video: VideoOptions())
        #expect(clean.failure == nil)
        #expect(clean.isSensitive == false)
        #expect(clean.path == grey)

        let pid = try #require(sandboxed.workerProcesses.first)
        #expect(pid != getpid())
        for field in ["CapEff", "CapPrm", "CapInh", "CapAmb"] { #expect(Self.status(pid, field) == "0000000000000000", "\(field)") }
        #expect(Self.status(pid, "NoNewPrivs") == "1")
        #expect(Self.status(pid, "Seccomp") == "2")
        // This test runs as root with every capability: the worker gave them up itself.
        #expect(getuid() != 0 || Self.status(getpid(), "CapEff") != "0000000000000000")
    }

    @Test("a file that crashes the worker costs that worker and that file: tried once more alone, then 'analysis_crashed'; a picture in flight beside it still gets its verdict; the next file is judged by a new worker")
    func poisonFile() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        let poison = try place.write("poison.png", Array((Self.marker + "-crash").utf8) + (try Self.grey()))
        let card = try place.write("card.png", try Self.card())
        let first = try #require(sandboxed.workerProcesses.first)
        async let crashed = sandboxed.report(forFileAt: poison, policy: .defaults(for: .child), video: VideoOptions())
        async let beside = sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
        let (poisonReport, cardReport) = await (crashed, beside)
        #expect(poisonReport.failure?.code == "analysis_crashed")
        #expect(poisonReport.failure?.message.contains("signal 6") == true, "\(poisonReport.failure?.message ?? "")")
        #expect(cardReport.isSensitive, "\(cardReport.failure?.message ?? "")")
        #expect(kill(first, 0) != 0, "the crashed worker is gone")
        let after = await sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
        #expect(after.isSensitive)
        #expect(sandboxed.workerProcesses.contains(first) == false)
    }

    @Test("the sealed worker's async work runs on threads of its own, never libdispatch's global queues, whose pool monitor opens /proc/TID/stat when work waits (under load) and crashes the process when Landlock refuses it (was: SIGILL on a 120-s video in loaded runs)")
    func asyncWorkOnOwnThreads() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        // The test-only switch: the file's task says where it runs after a hop through the
        // analysis threads.
        let probe = try place.write("where.png", try Self.grey() + Array((Self.marker + "-where").utf8))
        let report = await sandboxed.report(forFileAt: probe, policy: .defaults(for: .adult), video: VideoOptions())
        #expect(report.failure?.code == "test_only_where", "\(String(describing: report.failure))")
        #expect(report.failure?.message.hasPrefix("worker-async") == true, "ran on \(report.failure?.message ?? "?")")
    }

    @Test("a file that hangs the worker is stopped at the deadline, tried once more, then 'analysis_timed_out'")
    func hangingFile() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(deadline: .seconds(1)); defer { sandboxed.stop() }
        let hang = try place.write("hang.png", Array((Self.marker + "-hang").utf8) + (try Self.grey()))
        let start = ContinuousClock.now
        let report = await sandboxed.report(forFileAt: hang, policy: .defaults(for: .child), video: VideoOptions())
        #expect(report.failure?.code == "analysis_timed_out")
        #expect(ContinuousClock.now - start < .seconds(20))
        let grey = try place.write("grey.png", try Self.grey())
        #expect(await sandboxed.report(forFileAt: grey, policy: .defaults(for: .adult), video: VideoOptions()).failure == nil)
    }

    @Test("after Landlock takes the file system away, the worker still judges every format it decodes (each decoder's lazily loaded part was loaded before): JPEG, PNG, GIF, WebP, BMP, TIFF, HEIC, AVIF, JPEG XL, SVG with text, MP4, WebM, a PDF with text")
    func everyFormatAfterTheSeal() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        if AnalysisSandbox.landlockABI != nil {
            #expect(sandboxed.confinement.contains("no file-system access"), "\(sandboxed.confinement)")
        }
        for sample in WarmUpSamples.all {
            let bytes = try #require(Data(base64Encoded: sample.base64, options: .ignoreUnknownCharacters))
            let path = try place.write("judged-" + sample.name, [UInt8](bytes))
            let isVideo = sample.name.hasSuffix(".mp4") || sample.name.hasSuffix(".webm") || sample.name.hasSuffix(".pdf")
            let report = await sandboxed.report(forFileAt: path, policy: .defaults(for: .child), video: VideoOptions(), isVideo: isVideo)
            #expect(report.failure == nil, "\(sample.name): \(report.failure?.message ?? "")")
            #expect(report.analysis != nil, "\(sample.name): no analysis")
        }
        // And a picture the warm-up never saw: a text in another font family, bigger.
        let svg = ##"<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200"><rect width="300" height="200" fill="#789"/><text x="10" y="100" font-size="40" font-family="serif" font-weight="bold">Hello</text></svg>"##
        let other = await sandboxed.report(forFileAt: try place.write("other.svg", Array(svg.utf8)), policy: .defaults(for: .child), video: VideoOptions())
        #expect(other.failure == nil, "\(other.failure?.message ?? "")")
    }

    @Test("after the seal an SVG's text is still drawn, even in a family and style the warm-up never drew: the system's fonts stay readable (FreeType opens a font each time it draws)")
    func svgTextAfterTheSeal() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let sandboxed = try analysis(); defer { sandboxed.stop() }
        let svg = ##"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200"><rect width="400" height="200" fill="#fff"/><text x="10" y="150" font-size="150" font-family="fantasy" font-weight="bold" font-style="italic" fill="#000">WWW</text></svg>"##
        let frame = try #require(await sandboxed.previewFrame(forFileAt: try place.write("text.svg", Array(svg.utf8))))
        let dark = stride(from: 0, to: frame.pixels.count, by: 3).filter { frame.pixels[$0] < 64 }.count
        #expect(dark > frame.width * frame.height / 20, "\(dark) dark pixels of \(frame.width * frame.height): the text was not drawn")
    }

    @Test("as root (as a service holding CAP_SETUID and CAP_SETGID): the worker takes a user of its own before it loads anything, gets its models through a descriptor from a folder its user cannot reach, and still judges", .enabled(if: getuid() == 0, "needs root to make a user and switch to it"))
    func ownUser() async throws {
        let place = try Place(); defer { place.cleanUp() }
        let user = "qwt\(UInt32.random(in: 10000...99999))"
        #expect(Self.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user]) == 0)
        defer { _ = Self.run(["userdel", user]) }
        let entry = try #require(getpwnam(user))
        let (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        // The models in a folder only root can reach (0700), as /var/lib/quarantine is the service's.
        let data = place.folder.appendingPathComponent("runtime")
        let source = URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share/quarantine")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        for folder in ["lib", "models"] { try FileManager.default.copyItem(at: source.appendingPathComponent(folder), to: data.appendingPathComponent(folder)) }
        #expect(chmod(place.folder.path, 0o700) == 0)
        let card = try place.write("card.png", try Self.card())
        #expect(chmod(card, 0o600) == 0)

        let sandboxed = try analysis(environment: ["QUARANTINE_DATA_DIR": data.path, SandboxedAnalysis.Options.workerUserVariable: user])
        defer { sandboxed.stop() }
        let pid = try #require(sandboxed.workerProcesses.first)
        #expect(Self.status(pid, "Uid")?.split(whereSeparator: \.isWhitespace) == ["\(uid)", "\(uid)", "0", "\(uid)"], "real, effective, saved (the service's), fs")
        #expect(Self.status(pid, "Gid")?.split(whereSeparator: \.isWhitespace) == ["\(gid)", "\(gid)", "\(gid)", "\(gid)"])
        #expect(Self.status(pid, "Groups") == "")
        #expect(sandboxed.confinement.contains("user \(user)"), "\(sandboxed.confinement)")
        // Only its standard descriptors and its socket: the runtime folder's is closed.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap(Int.init).sorted()
        let targets = descriptors.map { fd in (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) ?? "?" }
        #expect(!targets.contains { $0.hasPrefix("/") && !$0.hasPrefix("/dev/") }, "\(zip(descriptors, targets).map { "\($0) -> \($1)" })")
        #expect(!descriptors.contains(Int(AnalysisWorkerProcess.runtimeDescriptor)) || targets[descriptors.firstIndex(of: 4)!] != data.path, "the runtime folder's descriptor is still open")
        let flagged = await sandboxed.report(forFileAt: card, policy: .defaults(for: .adult), video: VideoOptions())
        #expect(flagged.failure == nil && flagged.isSensitive, "\(flagged.failure?.message ?? "")")
    }

    static func run(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test("without the models the worker says so, and no worker runs")
    func missingModels() throws {
        let place = try Place(); defer { place.cleanUp() }
        #expect {
            try analysis(environment: ["QUARANTINE_DATA_DIR": place.folder.path])
        } throws: { error in
            "\(error)".contains("onnxruntime") || "\(error)".contains("model")
        }
    }
}
