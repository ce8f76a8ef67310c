// MARK: - Resampling

extension RGBImage {
    /// Bilinear resize with half-pixel centres and no anti-aliasing, as OpenCV's `INTER_LINEAR`
    /// (used by `cv2.dnn.blobFromImage`, hence by NudeNet's pre-processing).
    ///
    /// The source may be padded virtually: it is treated as `paddedWidth`×`paddedHeight` with
    /// black beyond the real pixels, which is NudeNet's letterbox without allocating it.
    public func resizedBilinear(width outW: Int, height outH: Int, paddedWidth: Int? = nil, paddedHeight: Int? = nil) -> RGBImage {
        let srcW = paddedWidth ?? width, srcH = paddedHeight ?? height
        let xs = Self.linearTaps(from: srcW, to: outW)
        let ys = Self.linearTaps(from: srcH, to: outH)
        var out = [UInt8](repeating: 0, count: outW * outH * 3)
        let w = width, h = height
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for oy in 0..<outH {
                    let (y0, y1, fy) = ys[oy]
                    let rowValid0 = y0 < h, rowValid1 = y1 < h
                    for ox in 0..<outW {
                        let (x0, x1, fx) = xs[ox]
                        for c in 0..<3 {
                            @inline(__always) func px(_ x: Int, _ y: Int, _ valid: Bool) -> Float {
                                (valid && x < w) ? Float(src[(y * w + x) * 3 + c]) : 0
                            }
                            let top = px(x0, y0, rowValid0) * (1 - fx) + px(x1, y0, rowValid0) * fx
                            let bottom = px(x0, y1, rowValid1) * (1 - fx) + px(x1, y1, rowValid1) * fx
                            let v = top * (1 - fy) + bottom * fy
                            dst[(oy * outW + ox) * 3 + c] = UInt8(clamping: Int((v + 0.5).rounded(.down)))
                        }
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }

    /// For each output coordinate: the two source coordinates and the weight of the second.
    static func linearTaps(from src: Int, to dst: Int) -> [(Int, Int, Float)] {
        let scale = Double(src) / Double(dst)
        return (0..<dst).map { d in
            var s = (Double(d) + 0.5) * scale - 0.5
            if s < 0 { s = 0 }
            var i0 = Int(s.rounded(.down))
            var f = Float(s - Double(i0))
            if i0 >= src - 1 { i0 = src - 1; f = 0 }
            return (i0, min(i0 + 1, src - 1), f)
        }
    }

    /// Anti-aliased bilinear resize, as Pillow's `Image.resize(size, Image.BILINEAR)`:
    /// a triangle filter widened by the reduction factor, fixed-point coefficients with 22
    /// fraction bits, horizontal pass then vertical pass, each rounded to 8 bits.
    ///
    /// Used for open_nsfw, whose reference pre-processing is written with Pillow.
    public func resizedPillowBilinear(width outW: Int, height outH: Int) -> RGBImage {
        let horizontal = Self.pillowCoefficients(inSize: width, outSize: outW)
        let vertical = Self.pillowCoefficients(inSize: height, outSize: outH)
        // Horizontal pass: height rows of outW pixels.
        var mid = [UInt8](repeating: 0, count: outW * height * 3)
        let w = width
        pixels.withUnsafeBufferPointer { src in
            mid.withUnsafeMutableBufferPointer { dst in
                for y in 0..<height {
                    let rowBase = y * w * 3
                    for ox in 0..<outW {
                        let (start, weights) = horizontal[ox]
                        var r = Int64(1 << 21), g = Int64(1 << 21), b = Int64(1 << 21)
                        for (k, wt) in weights.enumerated() {
                            let s = rowBase + (start + k) * 3
                            r += Int64(src[s]) * wt; g += Int64(src[s + 1]) * wt; b += Int64(src[s + 2]) * wt
                        }
                        let d = (y * outW + ox) * 3
                        dst[d] = Self.clip8(r); dst[d + 1] = Self.clip8(g); dst[d + 2] = Self.clip8(b)
                    }
                }
            }
        }
        var out = [UInt8](repeating: 0, count: outW * outH * 3)
        mid.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for oy in 0..<outH {
                    let (start, weights) = vertical[oy]
                    for x in 0..<(outW * 3) {
                        var acc = Int64(1 << 21)
                        for (k, wt) in weights.enumerated() {
                            acc += Int64(src[(start + k) * outW * 3 + x]) * wt
                        }
                        dst[oy * outW * 3 + x] = Self.clip8(acc)
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }

    @inline(__always) static func clip8(_ value: Int64) -> UInt8 {
        let v = value >> 22
        return v < 0 ? 0 : (v > 255 ? 255 : UInt8(v))
    }

    /// Pillow's `precompute_coeffs` for the bilinear filter, then its 8-bit normalisation.
    static func pillowCoefficients(inSize: Int, outSize: Int) -> [(Int, [Int64])] {
        let scale = Double(inSize) / Double(outSize)
        let filterScale = max(scale, 1.0)
        let support = 1.0 * filterScale
        return (0..<outSize).map { xx in
            let center = (Double(xx) + 0.5) * scale
            let ss = 1.0 / filterScale
            let xmin = max(0, Int(center - support + 0.5))
            let xmax = min(inSize, Int(center + support + 0.5)) - xmin
            var weights = [Double](repeating: 0, count: max(0, xmax))
            var total = 0.0
            for x in 0..<max(0, xmax) {
                let t = abs((Double(x + xmin) - center + 0.5) * ss)
                let w = t < 1 ? 1 - t : 0
                weights[x] = w
                total += w
            }
            let fixed = weights.map { w -> Int64 in
                let n = total != 0 ? w / total : 0
                return n < 0 ? Int64(-0.5 + n * Double(1 << 22)) : Int64(0.5 + n * Double(1 << 22))
            }
            return (xmin, fixed)
        }
    }
}
