import Foundation
import MediaDecoding

extension SensitivityAnalyzer {
    /// A picture of the file at `path` to blur for the vault's preview, when no analysis gave one
    /// (a file hidden on sight because its bytes or its site are blocked): the displayed picture,
    /// or for a video or animation the first of its first few samples that is not one flat
    /// colour (a fade from black). Nil when nothing can be decoded. No model runs.
    public func previewFrame(forFileAt path: String) async -> RGBImage? {
        try? await pool.run { [self] in try previewFrameSynchronously(forFileAt: path) }
    }

    func previewFrameSynchronously(forFileAt path: String) throws -> RGBImage? {
        let file = try MediaFile(path: path)
        let moving: Bool
        switch file.type {
        case .gif: moving = ImageHeader.isAnimated(try file.readAll(limit: configuration.limits.maxImageFileBytes), type: .gif)
        case .png: moving = try ImageHeader.pngAnimationControl { try file.read(8, at: $0) }
        default: moving = file.type.kind == .video
        }
        if !moving {
            guard file.type.kind == .image else { return nil }
            return try decoder.decode(file).image
        }
        let video = try VideoDecoder(file: file, limits: configuration.limits,
                                     minimumLongSide: Self.shrinkFloorFactor * NudeDetector.inputSize,
                                     minimumShortSide: Self.shrinkFloorFactor * NSFWClassifier.resizeSide)
        var chosen: RGBImage?
        var looked = 0
        _ = try video.sample(maxGap: 1) { sample in
            looked += 1
            chosen = sample.image
            return !(sample.image.hasDetail) && looked < 5
        }
        return chosen
    }
}

extension RGBImage {
    /// Whether the picture is more than one flat colour (a black or white frame has no detail).
    var hasDetail: Bool {
        guard !pixels.isEmpty else { return false }
        var low: UInt8 = 255, high: UInt8 = 0
        let step = max(3, (pixels.count / 3 / 4096) * 3)
        var index = 0
        while index < pixels.count {
            low = Swift.min(low, pixels[index]); high = Swift.max(high, pixels[index])
            index += step
        }
        return high - low > 24
    }
}
