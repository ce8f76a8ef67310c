/// A picture as 8-bit RGB triplets, row by row, no padding.
public struct RGBImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// `width * height * 3` bytes: R, G, B for each pixel, rows top to bottom.
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width > 0 && height > 0 && pixels.count == width * height * 3, "RGBImage: \(width)x\(height) with \(pixels.count) bytes")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A picture of one colour.
    public init(width: Int, height: Int, filledWith rgb: (UInt8, UInt8, UInt8)) {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in stride(from: 0, to: pixels.count, by: 3) {
            pixels[i] = rgb.0; pixels[i + 1] = rgb.1; pixels[i + 2] = rgb.2
        }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// The rectangle `x..<x+width`, `y..<y+height` (clamped to the picture).
    public func cropped(x: Int, y: Int, width w: Int, height h: Int) -> RGBImage {
        let x0 = max(0, min(x, width - 1)), y0 = max(0, min(y, height - 1))
        let cw = max(1, min(w, width - x0)), ch = max(1, min(h, height - y0))
        var out = [UInt8](repeating: 0, count: cw * ch * 3)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for row in 0..<ch {
                    let s = ((y0 + row) * width + x0) * 3
                    let d = row * cw * 3
                    for i in 0..<(cw * 3) { dst[d + i] = src[s + i] }
                }
            }
        }
        return RGBImage(width: cw, height: ch, pixels: out)
    }
}

/// A decoded picture together with the size of the original it came from.
///
/// Decoders may shrink while decoding (JPEG DCT scaling); `originalWidth`/`originalHeight`
/// are the picture's own size after orientation, in which detections are reported.
public struct DecodedImage: Sendable {
    public var image: RGBImage
    public var originalWidth: Int
    public var originalHeight: Int
    public var type: MediaType
    /// Set when only part of the picture could be decoded (the data ends early): what is missing
    /// is grey, and the verdict is on what there is.
    public var partialReason: String?

    public init(image: RGBImage, originalWidth: Int, originalHeight: Int, type: MediaType, partialReason: String? = nil) {
        self.image = image
        self.originalWidth = originalWidth
        self.originalHeight = originalHeight
        self.type = type
        self.partialReason = partialReason
    }

    /// What `partial` says of a picture whose data ends before the picture does.
    public static let endsEarly = "the data ends before the picture does; the missing part is grey"
}
