// MARK: - Resampling

extension RGBImage {
    /// Bilinear resize with half-pixel centres and no anti-aliasing, bit-exact with OpenCV's
    /// 8-bit `INTER_LINEAR` on x86-64 (used by `cv2.dnn.blobFromImage`, hence by NudeNet):
    /// coefficients in 1/2048ths computed in single precision, an exact horizontal pass, and the
    /// vertical pass rounded as OpenCV's vectorised kernel does; an exact 2× reduction is a 2×2
    /// average, as OpenCV switches to `INTER_AREA` there.
    ///
    /// The source may be padded virtually: it is treated as `paddedWidth`×`paddedHeight` with
    /// black beyond the real pixels, which is NudeNet's letterbox without allocating it.
    public func resizedBilinear(width outW: Int, height outH: Int, paddedWidth: Int? = nil, paddedHeight: Int? = nil) -> RGBImage {
        let srcW = paddedWidth ?? width, srcH = paddedHeight ?? height
        if srcW == outW * 2 && srcH == outH * 2 { return halved(paddedWidth: srcW, paddedHeight: srcH) }
        let xs = Self.openCVTaps(from: srcW, to: outW)
        let ys = Self.openCVTaps(from: srcH, to: outH)
        let w = width, h = height
        var out = [UInt8](repeating: 0, count: outW * outH * 3)
        // Horizontal pass of one source row into `row` (values × 2048), black outside the picture.
        var rowA = [Int32](repeating: 0, count: outW * 3), rowB = rowA
        var cachedA = -1, cachedB = -1
        pixels.withUnsafeBufferPointer { src in
            func horizontal(_ y: Int, into row: inout [Int32]) {
                row.withUnsafeMutableBufferPointer { dst in
                    guard y < h else { for i in 0..<dst.count { dst[i] = 0 }; return }
                    let base = y * w * 3
                    for ox in 0..<outW {
                        let (x0, a0, a1) = xs[ox]
                        for c in 0..<3 {
                            let p0 = x0 < w ? Int32(src[base + x0 * 3 + c]) : 0
                            let p1 = a1 != 0 && x0 + 1 < w ? Int32(src[base + (x0 + 1) * 3 + c]) : 0
                            dst[ox * 3 + c] = p0 * a0 + p1 * a1
                        }
                    }
                }
            }
            out.withUnsafeMutableBufferPointer { dst in
                for oy in 0..<outH {
                    let (y0, b0, b1) = ys[oy]
                    let y1 = min(y0 + 1, srcH - 1)
                    if cachedA != y0 {
                        if cachedB == y0 { swap(&rowA, &rowB); swap(&cachedA, &cachedB) } else { horizontal(y0, into: &rowA); cachedA = y0 }
                    }
                    if cachedB != y1 { horizontal(y1, into: &rowB); cachedB = y1 }
                    for i in 0..<(outW * 3) {
                        // OpenCV's VResizeLinearVec_32s8u: ((S0>>4)·b0 >> 16) + ((S1>>4)·b1 >> 16), then (+2) >> 2.
                        let t0 = ((rowA[i] >> 4) * b0) >> 16
                        let t1 = ((rowB[i] >> 4) * b1) >> 16
                        let v = (t0 + t1 + 2) >> 2
                        dst[oy * outW * 3 + i] = v < 0 ? 0 : (v > 255 ? 255 : UInt8(v))
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }

    /// OpenCV's fast `INTER_AREA` for an exact 2× reduction: rounded 2×2 averages.
    func halved(paddedWidth: Int, paddedHeight: Int) -> RGBImage {
        let outW = paddedWidth / 2, outH = paddedHeight / 2
        var out = [UInt8](repeating: 0, count: outW * outH * 3)
        let w = width, h = height
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for oy in 0..<outH {
                    for ox in 0..<outW {
                        for c in 0..<3 {
                            var sum = 2
                            for dy in 0..<2 {
                                let y = oy * 2 + dy
                                guard y < h else { continue }
                                for dx in 0..<2 where ox * 2 + dx < w { sum += Int(src[(y * w + ox * 2 + dx) * 3 + c]) }
                            }
                            dst[(oy * outW + ox) * 3 + c] = UInt8(sum >> 2)
                        }
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }

    /// OpenCV's linear taps: first source index and both weights in 1/2048ths.
    static func openCVTaps(from src: Int, to dst: Int) -> [(Int, Int32, Int32)] {
        let scale = 1.0 / (Double(dst) / Double(src))
        return (0..<dst).map { d in
            var f = Float((Double(d) + 0.5) * scale - 0.5)
            var i = Int(f.rounded(.down))
            f -= Float(i)
            if i < 0 { f = 0; i = 0 }
            if i >= src - 1 { f = 0; i = src - 1 }
            return (i, Int32(((1 - f) * 2048).rounded(.toNearestOrEven)), Int32((f * 2048).rounded(.toNearestOrEven)))
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
        let w = width, h = height
        // Horizontal pass: h rows of outW pixels. 32-bit sums as in Pillow: the weights add up
        // to 2^22, so 255 · 2^22 still fits.
        var mid = [UInt8](repeating: 0, count: outW * h * 3)
        pixels.withUnsafeBufferPointer { src in
            mid.withUnsafeMutableBufferPointer { dst in
                horizontal.weights.withUnsafeBufferPointer { k in
                    let k = k.baseAddress!, s = src.baseAddress!, d = dst.baseAddress!
                    for y in 0..<h {
                        let row = s + y * w * 3
                        let out = d + y * outW * 3
                        for ox in 0..<outW {
                            let start = horizontal.starts[ox], count = horizontal.counts[ox]
                            let kk = k + ox * horizontal.stride
                            var r: Int32 = 1 << 21, g: Int32 = 1 << 21, b: Int32 = 1 << 21
                            var p = row + start * 3
                            for t in 0..<count {
                                let wt = kk[t]
                                r &+= Int32(p[0]) &* wt; g &+= Int32(p[1]) &* wt; b &+= Int32(p[2]) &* wt
                                p += 3
                            }
                            out[ox * 3] = Self.clip8(r); out[ox * 3 + 1] = Self.clip8(g); out[ox * 3 + 2] = Self.clip8(b)
                        }
                    }
                }
            }
        }
        // Vertical pass over whole rows.
        var out = [UInt8](repeating: 0, count: outW * outH * 3)
        let rowLength = outW * 3
        var accumulator = [Int32](repeating: 0, count: rowLength)
        mid.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                accumulator.withUnsafeMutableBufferPointer { acc in
                    let s = src.baseAddress!, a = acc.baseAddress!
                    for oy in 0..<outH {
                        let start = vertical.starts[oy], count = vertical.counts[oy]
                        for x in 0..<rowLength { a[x] = 1 << 21 }
                        for t in 0..<count {
                            let wt = vertical.weights[oy * vertical.stride + t]
                            let row = s + (start + t) * rowLength
                            for x in 0..<rowLength { a[x] &+= Int32(row[x]) &* wt }
                        }
                        let o = dst.baseAddress! + oy * rowLength
                        for x in 0..<rowLength { o[x] = Self.clip8(a[x]) }
                    }
                }
            }
        }
        return RGBImage(width: outW, height: outH, pixels: out)
    }

    @inline(__always) static func clip8(_ value: Int32) -> UInt8 {
        let v = value >> 22
        return v < 0 ? 0 : (v > 255 ? 255 : UInt8(truncatingIfNeeded: v))
    }

    /// Pillow's resampling coefficients, flattened: for output `i`, `counts[i]` weights from
    /// `weights[i * stride]`, applied from input `starts[i]`.
    struct PillowCoefficients {
        var starts: [Int]
        var counts: [Int]
        var weights: [Int32]
        var stride: Int
    }

    /// Pillow's `precompute_coeffs` for the bilinear filter, then its 8-bit normalisation.
    static func pillowCoefficients(inSize: Int, outSize: Int) -> PillowCoefficients {
        let rows = pillowCoefficientRows(inSize: inSize, outSize: outSize)
        let stride = rows.map { $0.1.count }.max() ?? 0
        var weights = [Int32](repeating: 0, count: stride * outSize)
        for (i, row) in rows.enumerated() { for (t, w) in row.1.enumerated() { weights[i * stride + t] = Int32(w) } }
        return PillowCoefficients(starts: rows.map(\.0), counts: rows.map { $0.1.count }, weights: weights, stride: stride)
    }

    static func pillowCoefficientRows(inSize: Int, outSize: Int) -> [(Int, [Int64])] {
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
