import Foundation
import Testing
import TestSupport
@testable import MediaDecoding
@testable import QuarantineCLI
@testable import SensitivityAnalysis

/// `--blur-to`'s holding rule, without models: which verdict vouches for which frame.
@Suite("Blurred stream writer", .ownThread)
struct BlurredStreamWriterTests {
    /// A 64x48 frame with fine detail (a one-pixel checkerboard shifted by `n`), as the source hands it.
    static func frame(_ n: Int, time: Double) throws -> LiveVideoSource.Frame {
        let w = 64, h = 48
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h { for x in 0..<w where (x + y + n) % 2 == 0 { for c in 0..<3 { rgb[(y * w + x) * 3 + c] = 255 } } }
        let image = RGBImage(width: w, height: h, pixels: rgb)
        return LiveVideoSource.Frame(image: image, time: time, width: w, height: h, index: n, original: try LiveVideoSink.yuv420p(image, width: w, height: h))
    }

    static func judgement(_ index: Int, _ time: Double, failed: Bool = false, indicate: Bool = false) -> VideoStreamAnalyzer.Judgement {
        var advice = StreamInterventions.State()
        advice.indicate = indicate
        return VideoStreamAnalyzer.Judgement(frameIndex: index, mediaTime: time, failed: failed, advice: advice)
    }

    @Test("a clean verdict vouches for the frames up to it within 0.5 s; a failed one, a flagged one, a far one or none within the hold: blurred")
    func vouching() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("out.y4m").path
        let sink = try LiveVideoSink(LiveVideoSink.resolve(path), width: 64, height: 48, frameRate: 10)
        let writer = BlurredStreamWriter(sink: sink, hold: 1.0)
        let times = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.2, 1.3]
        let frames = try times.enumerated().map { try Self.frame($0.offset, time: $0.element) }
        for frame in frames.prefix(8) { #expect(writer.submit(frame)) }
        writer.judged(Self.judgement(2, 0.2))                  // frames 0 to 2: clean
        writer.judged(Self.judgement(4, 0.4, failed: true))    // 3 and 4: not judged after all
        writer.judged(Self.judgement(5, 0.5, indicate: true))  // 5: flagged
        writer.judged(Self.judgement(7, 1.2))                  // 6 is 0.6 s before it: too far; 7 clean
        #expect(writer.submit(frames[8]))                      // 8: no verdict within the hold
        Thread.sleep(forTimeInterval: 1.4)
        writer.condition.lock()
        let writtenBeforeEnd = writer.summary.written
        writer.condition.unlock()
        #expect(writtenBeforeEnd == 9, "frame 8 still held after the 1 s hold")
        let summary = try writer.finish()
        #expect(summary.written == 9 && summary.blurredFlagged == 1 && summary.blurredUnjudged == 4, "\(summary)")
        #expect(summary.longestHold >= 1.0, "\(summary)")

        let source = try LiveVideoSource(input: path, paced: false, keepOriginals: true)
        var read: [RawVideoFrame] = []
        _ = try source.run { read.append($0.original!); return true }
        try #require(read.count == 9)
        let asWritten = zip(read, frames).map { $0.bytes == $1.original!.bytes }
        #expect(asWritten == [true, true, true, false, false, false, false, true, false], "\(asWritten)")
    }
}
