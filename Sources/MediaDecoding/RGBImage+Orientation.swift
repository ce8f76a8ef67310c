// MARK: - EXIF orientation

extension RGBImage {
    /// The picture as it should be displayed for EXIF orientation `orientation` (1...8).
    public func applyingOrientation(_ orientation: Int) -> RGBImage {
        guard (2...8).contains(orientation) else { return self }
        let swaps = orientation >= 5
        let outW = swaps ? height : width, outH = swaps ? width : height
        var out = [UInt8](repeating: 0, count: pixels.count)
        let w = width, h = height
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for y in 0..<outH {
                    for x in 0..<outW {
                        // Where the displayed pixel (x, y) is stored in the file.
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case 2: (sx, sy) = (w - 1 - x, y)              // mirrored
                        case 3: (sx, sy) = (w - 1 - x, h - 1 - y)      // 180°
                        case 4: (sx, sy) = (x, h - 1 - y)              // mirrored vertically
                        case 5: (sx, sy) = (y, x)                      // transpose
                        case 6: (sx, sy) = (y, h - 1 - x)              // 90° clockwise
                        case 7: (sx, sy) = (w - 1 - y, h - 1 - x)      // transverse
                        default: (sx, sy) = (w - 1 - y, x)             // 8: 90° anticlockwise
                        }
                        let s = (sy * w + sx) * 3, d = (y * outW + x) * 3
                        dst[d] = src[s]; dst[d + 1] = src[s + 1]; dst[d + 2] = src[s + 2]
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }
}
