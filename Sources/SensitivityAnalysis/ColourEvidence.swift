import MediaDecoding

/// Colour statistics of a picture that the skin rule of ``DecisionRules`` reads: how colourful
/// the picture is, and how much of a box is skin-coloured.
///
/// Skin is the chrominance box of Chai and Ngan (Cb 77...127, Cr 133...173 in BT.601 YCbCr),
/// which holds for light and dark skin alike because it ignores brightness. A picture whose
/// pixels all sit close to one chrominance (greyscale, sepia, a strong colour cast, night vision)
/// has too little colour to tell skin from anything: it is not ``inColour`` and the rule does
/// not apply to it.
public struct ColourEvidence: Sendable {
    /// Mean distance of the pixels' (Cb, Cr) from their mean: 0 for greyscale or a uniform tint;
    /// 18-50 for colour photos and colourful drawings (measured: docs/analysis.md, "Decision rules").
    public let spread: Double
    /// Distance of the mean (Cb, Cr) from grey: how strongly the picture as a whole is tinted.
    public let tint: Double
    /// The fraction of the whole picture's pixels that are skin-coloured (a grid of at most ~64k points).
    public let skinShare: Double
    let fraction: @Sendable (Box) -> Double

    /// Hand-made statistics (tests).
    public init(spread: Double, tint: Double = 0, skinShare: Double = 1, skinFraction: @escaping @Sendable (Box) -> Double) {
        self.spread = spread
        self.tint = tint
        self.skinShare = skinShare
        self.fraction = skinFraction
    }

    /// Whether the picture has colours to judge skin by: its colours spread at least
    /// ``DecisionRules/colourSpread``, and at least ``DecisionRules/tintRatio`` times its tint
    /// (a sepia or red-lit photo has all its pixels along one tint: spread under 0.4 times it;
    /// natural colour photos measure about 1).
    public var inColour: Bool { spread >= DecisionRules.colourSpread && spread >= DecisionRules.tintRatio * tint }

    /// The fraction of skin-coloured pixels in `box` (original picture pixels); 0 for an empty box.
    public func skinFraction(in box: Box) -> Double { fraction(box) }

    /// Whether the chrominance (cb, cr) is skin's.
    static func isSkin(cb: Double, cr: Double) -> Bool { (77...127).contains(cb) && (133...173).contains(cr) }

    static func chroma(_ r: Double, _ g: Double, _ b: Double) -> (cb: Double, cr: Double) {
        (128 - 0.168736 * r - 0.331264 * g + 0.5 * b, 128 + 0.5 * r - 0.418688 * g - 0.081312 * b)
    }

    /// The statistics of `image`, the analysis-size copy of a picture `originalWidth` x `originalHeight`.
    public init(_ image: RGBImage, originalWidth: Int, originalHeight: Int) {
        let pixels = image.pixels
        let w = image.width, h = image.height
        // The spread from every pixel of a grid of at most ~64k points.
        let step = max(1, Int((Double(w * h) / 65_536).squareRoot()))
        var cbs: [Double] = [], crs: [Double] = []
        var skinPoints = 0
        cbs.reserveCapacity((w / step + 1) * (h / step + 1)); crs.reserveCapacity(cbs.capacity)
        for y in stride(from: 0, to: h, by: step) {
            for x in stride(from: 0, to: w, by: step) {
                let i = (y * w + x) * 3
                let c = Self.chroma(Double(pixels[i]), Double(pixels[i + 1]), Double(pixels[i + 2]))
                cbs.append(c.cb); crs.append(c.cr)
                if Self.isSkin(cb: c.cb, cr: c.cr) { skinPoints += 1 }
            }
        }
        let n = Double(max(1, cbs.count))
        let mcb = cbs.reduce(0, +) / n, mcr = crs.reduce(0, +) / n
        var sum = 0.0
        for i in cbs.indices { sum += ((cbs[i] - mcb) * (cbs[i] - mcb) + (crs[i] - mcr) * (crs[i] - mcr)).squareRoot() }
        spread = cbs.isEmpty ? 0 : sum / n
        skinShare = Double(skinPoints) / n
        tint = ((mcb - 128) * (mcb - 128) + (mcr - 128) * (mcr - 128)).squareRoot()
        let sx = Double(w) / Double(max(1, originalWidth)), sy = Double(h) / Double(max(1, originalHeight))
        fraction = { box in
            let x0 = max(0, min(w, Int((box.x * sx).rounded(.down)))), y0 = max(0, min(h, Int((box.y * sy).rounded(.down))))
            let x1 = max(x0, min(w, Int(((box.x + box.width) * sx).rounded(.up)))), y1 = max(y0, min(h, Int(((box.y + box.height) * sy).rounded(.up))))
            guard x1 > x0, y1 > y0 else { return 0 }
            var skin = 0
            for y in y0..<y1 {
                for x in x0..<x1 {
                    let i = (y * w + x) * 3
                    let c = Self.chroma(Double(pixels[i]), Double(pixels[i + 1]), Double(pixels[i + 2]))
                    if Self.isSkin(cb: c.cb, cr: c.cr) { skin += 1 }
                }
            }
            return Double(skin) / Double((x1 - x0) * (y1 - y0))
        }
    }
}
