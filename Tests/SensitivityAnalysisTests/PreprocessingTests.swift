import Foundation
import MediaDecoding
import Testing
@testable import SensitivityAnalysis

/// The model inputs themselves, against the upstream tensors recorded for a few photos.
@Suite("Pre-processing matches upstream tensors")
struct PreprocessingTests {
    static let entries = ((try? Golden.load().images) ?? []).filter { $0.debug != nil }

    func decoded(_ entry: Golden.Entry) throws -> DecodedImage {
        let file = try MediaFile(path: TestEnvironment.photos.appendingPathComponent(entry.file).path)
        return try ImageDecoder().decode(file)
    }

    @Test("NudeNet input tensor", arguments: entries.map(\.file))
    func nudeNetTensor(file: String) throws {
        let entry = try #require(Self.entries.first { $0.file == file })
        let tensor = NudeDetector.preprocess(try decoded(entry).image)
        let plane = 320 * 320
        for c in 0..<3 {
            let mean = tensor[(c * plane)..<((c + 1) * plane)].reduce(0, +) / Float(plane)
            #expect(abs(Double(mean) - entry.debug!.nudenet.channel_mean[c]) < 0.01, "channel \(c) mean \(mean) vs \(entry.debug!.nudenet.channel_mean[c])")
        }
    }

    @Test("open_nsfw input tensor", arguments: entries.map(\.file))
    func openNSFWTensor(file: String) throws {
        let entry = try #require(Self.entries.first { $0.file == file })
        let tensor = try NSFWClassifier.preprocess(try decoded(entry).image)
        let pixels = 224 * 224
        for c in 0..<3 {
            var sum: Float = 0
            for p in 0..<pixels { sum += tensor[p * 3 + c] }
            let mean = Double(sum / Float(pixels))
            #expect(abs(mean - entry.debug!.open_nsfw.channel_mean[c]) < 0.5, "channel \(c) mean \(mean) vs \(entry.debug!.open_nsfw.channel_mean[c])")
        }
        var worst = 0.0
        for row in entry.debug!.open_nsfw.at_yxc ?? [] {
            let (y, x, c) = (Int(row[0]), Int(row[1]), Int(row[2]))
            worst = max(worst, abs(Double(tensor[(y * 224 + x) * 3 + c]) - row[3]))
        }
        print("open_nsfw tensor \(file): worst sampled difference \(worst)")
    }
}
