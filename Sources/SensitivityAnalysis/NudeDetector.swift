import MediaDecoding

/// NudeNet 320n: a YOLOv8-style region detector with 18 classes.
///
/// Pre-processing as upstream (nudenet 3.4.2): pad right and bottom to a black square, resize to
/// 320×320 bilinearly, scale to 0...1, channels first; fed **RGB**, as the model was trained.
/// Post-processing as upstream: candidates whose best class score ≥ 0.2, class-agnostic
/// non-maximum suppression (score > 0.25, IoU ≤ 0.45), boxes mapped to the original picture.
public final class NudeDetector: Sendable {
    public static let labels = [
        "FEMALE_GENITALIA_COVERED", "FACE_FEMALE", "BUTTOCKS_EXPOSED", "FEMALE_BREAST_EXPOSED",
        "FEMALE_GENITALIA_EXPOSED", "MALE_BREAST_EXPOSED", "ANUS_EXPOSED", "FEET_EXPOSED",
        "BELLY_COVERED", "FEET_COVERED", "ARMPITS_COVERED", "ARMPITS_EXPOSED", "FACE_MALE",
        "BELLY_EXPOSED", "MALE_GENITALIA_EXPOSED", "ANUS_COVERED", "FEMALE_BREAST_COVERED",
        "BUTTOCKS_COVERED",
    ]
    public static let inputSize = 320
    static let candidateThreshold: Float = 0.2
    static let nmsScoreThreshold: Float = 0.25
    static let nmsIoUThreshold = 0.45

    let session: InferenceSession

    public init(session: InferenceSession) throws(InferenceError) {
        let n = Int64(Self.inputSize)
        guard session.inputShape.count == 4, session.inputShape[1] == 3,
              session.inputShape[2] == n || session.inputShape[2] < 0, session.inputShape[3] == n || session.inputShape[3] < 0,
              session.outputShape.count == 3, session.outputShape[1] == Int64(4 + Self.labels.count) else {
            throw InferenceError(.modelUnexpected, "the NudeNet model has input \(session.inputShape) and output \(session.outputShape), expected [1,3,320,320] and [1,22,N]")
        }
        self.session = session
    }

    /// Detects labelled regions in a decoded picture; boxes are in the original's pixels.
    public func detect(_ decoded: DecodedImage) throws(InferenceError) -> [Detection] {
        var input = Self.preprocess(decoded.image)
        let n = Int64(Self.inputSize)
        let output = try session.run(&input, shape: [1, 3, n, n])
        return Self.postprocess(output, originalWidth: decoded.originalWidth, originalHeight: decoded.originalHeight)
    }

    /// The letterboxed, channels-first RGB tensor in 0...1.
    public static func preprocess(_ image: RGBImage) -> [Float] {
        let side = max(image.width, image.height)
        let square = image.resizedBilinear(width: inputSize, height: inputSize, paddedWidth: side, paddedHeight: side)
        let plane = inputSize * inputSize
        var tensor = [Float](repeating: 0, count: plane * 3)
        square.pixels.withUnsafeBufferPointer { src in
            tensor.withUnsafeMutableBufferPointer { dst in
                for p in 0..<plane {
                    dst[p] = Float(src[p * 3]) / 255
                    dst[plane + p] = Float(src[p * 3 + 1]) / 255
                    dst[2 * plane + p] = Float(src[p * 3 + 2]) / 255
                }
            }
        }
        return tensor
    }

    /// Turns the raw `[1, 22, N]` output into detections in original-picture pixels.
    public static func postprocess(_ output: [Float], originalWidth: Int, originalHeight: Int) -> [Detection] {
        let rows = 4 + labels.count
        let count = output.count / rows
        let side = Double(max(originalWidth, originalHeight))
        let scale = side / Double(inputSize)
        let W = Double(originalWidth), H = Double(originalHeight)
        var candidates: [(box: Box, score: Float, label: Int)] = []
        for i in 0..<count {
            var best: Float = -1, bestClass = 0
            for c in 0..<labels.count where output[(4 + c) * count + i] > best {
                best = output[(4 + c) * count + i]; bestClass = c
            }
            guard best >= candidateThreshold else { continue }
            let cx = Double(output[i]), cy = Double(output[count + i])
            let w = Double(output[2 * count + i]), h = Double(output[3 * count + i])
            var x = (cx - w / 2) * scale, y = (cy - h / 2) * scale
            var bw = w * scale, bh = h * scale
            x = max(0, min(x, W)); y = max(0, min(y, H))
            bw = min(bw, W - x); bh = min(bh, H - y)
            candidates.append((Box(x: x, y: y, width: bw, height: bh), best, bestClass))
        }
        // OpenCV's NMSBoxes: scores strictly above the threshold, stable order by score.
        let order = candidates.indices.filter { candidates[$0].score > nmsScoreThreshold }
            .sorted { candidates[$0].score != candidates[$1].score ? candidates[$0].score > candidates[$1].score : $0 < $1 }
        var kept: [Int] = []
        for index in order where kept.allSatisfy({ candidates[$0].box.iou(candidates[index].box) <= nmsIoUThreshold }) {
            kept.append(index)
        }
        return kept.map { Detection(label: labels[candidates[$0].label], score: Double(candidates[$0].score), box: candidates[$0].box) }
    }
}
