import MediaDecoding

/// The project's synthetic test card, after the EICAR test file: a harmless picture that the
/// analyzer always reports as sensitive (label `TEST_CARD`), so a person can check an
/// installation end to end without any real sensitive material.
///
/// The card is an 8×8 grid of saturated colours. Each colour channel is on in exactly 32 cells,
/// in a fixed pseudo-random pattern per channel. Recognition measures the mean colour in the
/// middle of each cell and asks, for every channel, that the 32 "on" cells be clearly brighter
/// than every one of the 32 "off" cells. Averaging over whole cells survives JPEG at quality 50,
/// shrinking to a quarter and video compression; a natural photo matching 3 × 64 random cell
/// orderings at once is, in practice, impossible.
public enum TestCard {
    public static let label = "TEST_CARD"
    public static let grid = 8

    /// `pattern[channel][cell]`: whether that channel is on in that cell (row-major cells).
    public static let pattern: [[Bool]] = {
        var state: UInt64 = 0x5155_4152_414E_5449 // "QUARANTI"
        func next() -> UInt64 { // splitmix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return (0..<3).map { _ in
            var cells = Array(repeating: false, count: grid * grid)
            for i in 0..<(grid * grid / 2) { cells[i] = true }
            for i in stride(from: cells.count - 1, to: 0, by: -1) { cells.swapAt(i, Int(next() % UInt64(i + 1))) }
            return cells
        }
    }()

    /// Draws the card at the given size.
    public static func render(width: Int = 1024, height: Int = 1024) -> RGBImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let row = min(grid - 1, y * grid / height)
            for x in 0..<width {
                let cell = row * grid + min(grid - 1, x * grid / width)
                let p = (y * width + x) * 3
                for c in 0..<3 { pixels[p + c] = pattern[c][cell] ? 235 : 20 }
            }
        }
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    /// How clearly `image` is the test card: for the weakest channel, the gap between the
    /// darkest "on" cell and the brightest "off" cell (0...255; ≤ 0 means not the card).
    public static func separation(_ image: RGBImage) -> Double {
        let means = cellMeans(image)
        var weakest = Double.infinity
        for c in 0..<3 {
            var minOn = Double.infinity, maxOff = -Double.infinity
            for cell in 0..<(grid * grid) {
                let v = means[cell * 3 + c]
                if pattern[c][cell] { minOn = min(minOn, v) } else { maxOff = max(maxOff, v) }
            }
            weakest = min(weakest, minOn - maxOff)
        }
        return weakest
    }

    /// Whether `image` is the test card. The margin (64 of 255) leaves room for compression and
    /// scaling, which move cell means by a few levels, while a photo never separates at all.
    public static func recognises(_ image: RGBImage) -> Bool {
        image.width >= grid * 4 && image.height >= grid * 4 && separation(image) >= 64
    }

    /// The mean colour of the central half of each cell, sampled on a 6×6 lattice.
    static func cellMeans(_ image: RGBImage) -> [Double] {
        var means = [Double](repeating: 0, count: grid * grid * 3)
        let samples = 6
        image.pixels.withUnsafeBufferPointer { px in
            for row in 0..<grid {
                for col in 0..<grid {
                    var sum = (0, 0, 0)
                    for sy in 0..<samples {
                        // Sample positions cover the middle half of the cell: 0.25...0.75.
                        let fy = (Double(row) + 0.25 + 0.5 * (Double(sy) + 0.5) / Double(samples)) / Double(grid)
                        let y = min(image.height - 1, Int(fy * Double(image.height)))
                        for sx in 0..<samples {
                            let fx = (Double(col) + 0.25 + 0.5 * (Double(sx) + 0.5) / Double(samples)) / Double(grid)
                            let x = min(image.width - 1, Int(fx * Double(image.width)))
                            let p = (y * image.width + x) * 3
                            sum.0 += Int(px[p]); sum.1 += Int(px[p + 1]); sum.2 += Int(px[p + 2])
                        }
                    }
                    let n = Double(samples * samples), cell = (row * grid + col) * 3
                    means[cell] = Double(sum.0) / n; means[cell + 1] = Double(sum.1) / n; means[cell + 2] = Double(sum.2) / n
                }
            }
        }
        return means
    }
}
