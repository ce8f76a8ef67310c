import AnalysisWorker
import Foundation
import MediaDecoding
import SensitivityAnalysis
import Testing

/// The confined analysis worker, as the agent and the guardian service run it: the built
/// `quarantine analysis-worker` with the real models, handed descriptors over its socket.
@Suite("Sandboxed analysis", .serialized)
struct SandboxedAnalysisTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The binary `swift build` made next to this test bundle.
    static var binary: String {
        let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("quarantine").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return repositoryRoot.appendingPathComponent(".build/debug/quarantine").path
    }

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
