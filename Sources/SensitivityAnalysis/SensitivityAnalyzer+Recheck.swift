import MediaDecoding

/// The re-check of ``DecisionRules/recheck``: a lone borderline part judged again on two copies
/// of the picture, so that only those cases pay for two more detector runs.
extension SensitivityAnalyzer {
    /// Grey of the re-framed copy's margin (the letterbox grey of YOLO-style detectors).
    static let reframeGrey: UInt8 = 114

    /// The best score of `part`'s label over the same region on a mirrored copy of `decoded`
    /// and on a copy set in a margin of a quarter of its long side; 0 where it is not found.
    func recheck(_ part: Detection, in decoded: DecodedImage) throws(InferenceError) -> [Double] {
        let image = decoded.image
        let sx = Double(image.width) / Double(decoded.originalWidth), sy = Double(image.height) / Double(decoded.originalHeight)
        let box = Box(x: part.box.x * sx, y: part.box.y * sy, width: part.box.width * sx, height: part.box.height * sy)
        let margin = max(image.width, image.height) / 4
        let copies: [(RGBImage, Box)] = [
            (image.mirrored(), Box(x: Double(image.width) - box.x - box.width, y: box.y, width: box.width, height: box.height)),
            (image.framed(margin: margin, grey: Self.reframeGrey), Box(x: box.x + Double(margin), y: box.y + Double(margin), width: box.width, height: box.height)),
        ]
        var scores: [Double] = []
        for (copy, expected) in copies {
            let found = try models.get().detector.detect(DecodedImage(image: copy, originalWidth: copy.width, originalHeight: copy.height, type: decoded.type))
            scores.append(found.filter { $0.label == part.label && $0.box.iou(expected) >= SensitivityPolicy.recheckIoU }.map(\.score).max() ?? 0)
        }
        return scores
    }
}

extension RGBImage {
    /// The picture mirrored left to right.
    func mirrored() -> RGBImage {
        var out = pixels
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    let row = y * width * 3
                    for x in 0..<width {
                        let s = row + x * 3, d = row + (width - 1 - x) * 3
                        dst[d] = src[s]; dst[d + 1] = src[s + 1]; dst[d + 2] = src[s + 2]
                    }
                }
            }
        }
        return RGBImage(width: width, height: height, pixels: out)
    }

    /// The picture in the middle of a `grey` canvas `margin` pixels wider on every side.
    func framed(margin: Int, grey: UInt8) -> RGBImage {
        let w = width + 2 * margin, h = height + 2 * margin
        var out = [UInt8](repeating: grey, count: w * h * 3)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    let from = y * width * 3, to = ((y + margin) * w + margin) * 3
                    for i in 0..<(width * 3) { dst[to + i] = src[from + i] }
                }
            }
        }
        return RGBImage(width: w, height: h, pixels: out)
    }
}
