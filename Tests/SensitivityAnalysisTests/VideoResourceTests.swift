import Foundation
import MediaDecoding
import Testing
import TestSupport
@testable import SensitivityAnalysis

/// What a video analysis holds once it is over (issue 16: the soak saw the analysis worker keep
/// one descriptor, and about 4 MB, per video it had judged).
@Suite("Video resources")
struct VideoResourceTests {
    /// Open descriptors of this process that stand for `path`.
    static func descriptors(of path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path }.count
    }

    @Test("after a video's report, clean or flagged, with one decoder or two, nothing holds its file open", arguments: [1, 2])
    func nothingHeldOpen(decoders: Int) async throws {
        let dir = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clean = dir.appendingPathComponent("clean.mp4"), flagged = dir.appendingPathComponent("card.mp4")
        try VideoFixtures.make(clean, seconds: 8, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50"])
        try VideoFixtures.make(flagged, seconds: 8, cardFrom: 5, cardTo: 6, encoder: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "50"])
        let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 2),
                                               videoOptions: VideoOptions(maxGap: 2, decoders: decoders, denseShortClips: false))
        for url in [clean, flagged] {
            let report = await analyzer.report(forFileAt: url.path)
            #expect(report.failure == nil, "\(report.failure.map { "\($0)" } ?? "")")
            #expect(report.analysis?.isSensitive == (url == flagged))
        }
        // The progress watcher and the pool's threads let go within moments.
        for _ in 0..<50 where Self.descriptors(of: clean.path) + Self.descriptors(of: flagged.path) > 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(Self.descriptors(of: clean.path) == 0)
        #expect(Self.descriptors(of: flagged.path) == 0)
    }
}
