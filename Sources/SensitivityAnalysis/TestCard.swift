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
///
/// The card is recognised where it fills the picture and also where it covers at least a
/// quarter of it, upright, anywhere in it (a card inside a larger frame, a screenshot of the
/// card, letterboxed video): `locate(_:)` finds the card's grid lines first (see `gridCandidates`)
/// and measures the cells inside the rectangle they give.
public enum TestCard {
    public static let label = "TEST_CARD"
    public static let grid = 8
    /// The separation (0...255) from which a picture is the card.
    public static let threshold = 64.0
    /// The least part of the picture's area the card must cover to be looked for inside it.
    public static let minimumCover = 0.25

    /// A rectangle in picture coordinates, pixel `i` spanning `i..<i+1`.
    public struct Frame: Sendable, Equatable, CustomStringConvertible {
        public var x: Double, y: Double, width: Double, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x; self.y = y; self.width = width; self.height = height
        }
        public var description: String {
            func f(_ v: Double) -> String { String(Double(Int((v * 10).rounded())) / 10) }
            return "\(f(width))x\(f(height))+\(f(x))+\(f(y))"
        }
    }

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
        draw(into: &pixels, stride: width, x: 0, y: 0, width: width, height: height)
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    /// `background` with the card drawn over it, `width`×`height` at `x`, `y` (clipped to it):
    /// a card inside a larger frame.
    public static func render(width: Int, height: Int, on background: RGBImage, x: Int, y: Int) -> RGBImage {
        var pixels = background.pixels
        draw(into: &pixels, stride: background.width, x: x, y: y, width: width, height: height,
             clipWidth: background.width, clipHeight: background.height)
        return RGBImage(width: background.width, height: background.height, pixels: pixels)
    }

    static func draw(into pixels: inout [UInt8], stride: Int, x x0: Int, y y0: Int, width: Int, height: Int,
                     clipWidth: Int = .max, clipHeight: Int = .max) {
        let left = max(0, -x0), right = min(width, clipWidth - x0)
        guard left < right else { return }
        var band = [UInt8](repeating: 0, count: (right - left) * 3) // one row of a row of cells
        var bandRow = -1
        for y in max(0, -y0)..<min(height, clipHeight - y0) {
            let row = min(grid - 1, y * grid / height)
            if row != bandRow {
                bandRow = row
                for x in left..<right {
                    let cell = row * grid + min(grid - 1, x * grid / width)
                    for c in 0..<3 { band[(x - left) * 3 + c] = pattern[c][cell] ? 235 : 20 }
                }
            }
            let start = ((y0 + y) * stride + x0 + left) * 3
            pixels.replaceSubrange(start..<(start + band.count), with: band)
        }
    }

    /// How clearly `image` is the test card, filling it: for the weakest channel, the gap between
    /// the darkest "on" cell and the brightest "off" cell (0...255; ≤ 0 means not the card).
    public static func separation(_ image: RGBImage) -> Double {
        separation(image, in: Frame(x: 0, y: 0, width: Double(image.width), height: Double(image.height)))
    }

    /// The same for the card drawn in `frame`.
    public static func separation(_ image: RGBImage, in frame: Frame) -> Double {
        let means = cellMeans(image, in: frame)
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

    /// Whether `image` is the test card or holds it over at least a quarter of its area. The
    /// margin (64 of 255) leaves room for compression and scaling, which move cell means by a
    /// few levels, while a photo never separates at all.
    public static func recognises(_ image: RGBImage) -> Bool {
        locate(image) != nil
    }

    /// Where the card is in `image`, if it is recognised there.
    public static func locate(_ image: RGBImage) -> Frame? {
        let match = bestMatch(image)
        return match.separation >= threshold ? match.frame : nil
    }

    /// The most card-like rectangle: the whole picture, or else the best of the rectangles the
    /// card's grid lines suggest (`gridCandidates`), with its separation. Stops at the first
    /// rectangle that reaches the threshold.
    public static func bestMatch(_ image: RGBImage) -> (frame: Frame, separation: Double) {
        let whole = Frame(x: 0, y: 0, width: Double(image.width), height: Double(image.height))
        guard image.width >= grid * 4 && image.height >= grid * 4 else { return (whole, -.infinity) }
        var best = (frame: whole, separation: separation(image, in: whole))
        if best.separation >= threshold { return best }
        for frame in gridCandidates(image) {
            let s = separation(image, in: frame)
            if s > best.separation { best = (frame, s) }
            if s >= threshold { break }
        }
        return best
    }

    /// The mean colour of the central half of each cell of the card drawn in `frame`, sampled on
    /// a 6×6 lattice per cell.
    static func cellMeans(_ image: RGBImage, in frame: Frame) -> [Double] {
        let samples = 6, n = grid * samples
        // Sample positions cover the middle half of each cell: 0.25...0.75.
        func positions(_ origin: Double, _ size: Double, _ limit: Int) -> [Int] {
            (0..<n).map { i in
                let f = (Double(i / samples) + 0.25 + 0.5 * (Double(i % samples) + 0.5) / Double(samples)) / Double(grid)
                return max(0, min(limit - 1, Int(origin + f * size)))
            }
        }
        let xs = positions(frame.x, frame.width, image.width), ys = positions(frame.y, frame.height, image.height)
        var sums = [Int](repeating: 0, count: grid * grid * 3)
        image.pixels.withUnsafeBufferPointer { px in
            for sy in 0..<n {
                let rowBase = ys[sy] * image.width, cellRow = sy / samples * grid
                for sx in 0..<n {
                    let p = (rowBase + xs[sx]) * 3, cell = (cellRow + sx / samples) * 3
                    sums[cell] += Int(px[p]); sums[cell + 1] += Int(px[p + 1]); sums[cell + 2] += Int(px[p + 2])
                }
            }
        }
        let count = Double(samples * samples)
        return sums.map { Double($0) / count }
    }

    // MARK: - Finding the card inside a larger picture

    /// How far apart (pixels) the two pixels compared across a grid line are: a line blurred by
    /// scaling or compression still has card colours on both sides.
    static let edgeReach = 2
    /// Lines sampled across the picture for each profile.
    static let profileLines = 128
    /// Comb fits kept per axis; their products are measured.
    static let fitsPerAxis = 4

    /// The colour class of a pixel as the card paints it, one channel at a time:
    /// `classes[c * 256 + value]` is 0 for a clearly low value, `1 << c` for a clearly high one and
    /// 8 for one in between. Or-ed over the three channels: 0...7 for a card colour (bit c set when
    /// channel c is high), 8 or more for any other colour. Tables, so that the loops over a photo's
    /// pixels do not branch.
    static let classes: [UInt8] = (0..<768).map { i in
        let value = i % 256
        return value <= 100 ? 0 : value >= 155 ? UInt8(1 << (i / 256)) : 8
    }

    /// `jumps[a << 4 | b]`: 1 when classes `a` and `b` are two different card colours, one of them
    /// a colour (not black or white). The card's inner lines are such jumps in 6 to 8 of their 8
    /// cells, while a black and white picture (text, a greyscale photo) has none.
    static let jumps: [Int32] = (0..<256).map { i in
        let a = i >> 4, b = i & 15
        return a < 8 && b < 8 && a != b && !([0, 7].contains(a) && [0, 7].contains(b)) ? 1 : 0
    }

    /// Rectangles where the card may be, best first: where the picture has 7 evenly spaced
    /// lines across which the colour jumps between two card colours, vertically (on 128 sampled
    /// rows) and horizontally (on 128 sampled columns), for a card covering at least
    /// `minimumCover` of the picture. The card's 7 inner grid lines are such lines in 6 to 8 of
    /// its 8 rows (columns) of cells; a photo rarely has even one. Each axis is fitted on its own
    /// (a comb of 7 teeth through the strongest line positions, `combFits`), and the rectangles
    /// are the products of the best fits of both axes.
    static func gridCandidates(_ image: RGBImage) -> [Frame] {
        let w = image.width, h = image.height, reach = edgeReach
        // A cell must be wide enough for lines `reach` apart on both sides of it.
        let minX = max(Double(3 * reach), Double(w) * minimumCover / Double(grid)), maxX = Double(w) / Double(grid) * 1.02
        let minY = max(Double(3 * reach), Double(h) * minimumCover / Double(grid)), maxY = Double(h) / Double(grid) * 1.02
        guard minX <= maxX, minY <= maxY else { return [] }
        var across = [Int32](repeating: 0, count: w) // colour jumps at each x, over sampled rows
        var down = [Int32](repeating: 0, count: h)   // colour jumps at each y, over sampled columns
        // Lines sampled: 128, fewer across a very long picture (a panorama, a long screenshot), so
        // that the work stays within that of a 1280×1280 picture (but 32 at least).
        func lines(_ length: Int) -> Int { min(profileLines, max(32, profileLines * 1280 / length)) }
        let rowStep = max(1, h / lines(w)), colStep = max(1, w / lines(h))
        // Along each line, every second pixel where the card's cells are 12 pixels or more (the
        // jumps are then counted at every second position, `reach` apart on both sides still):
        // half the work, and a line is still found to half a pixel.
        let xStep = minX >= 12 ? 2 : 1, yStep = minY >= 12 ? 2 : 1
        let columns = Array(stride(from: colStep / 2, to: w, by: colStep)), n = columns.count
        let xs = (w + xStep - 1) / xStep, ys = (h + yStep - 1) / yStep
        var row = [UInt8](repeating: 0, count: xs)
        var sampled = [UInt8](repeating: 0, count: ys * n) // classes at the sampled columns, row by row
        image.pixels.withUnsafeBufferPointer { px in
        classes.withUnsafeBufferPointer { classes in
        jumps.withUnsafeBufferPointer { jumps in
            @inline(__always) func colourClass(_ p: Int) -> UInt8 {
                classes[Int(px[p])] | classes[256 &+ Int(px[p &+ 1])] | classes[512 &+ Int(px[p &+ 2])]
            }
            @inline(__always) func jump(_ a: UInt8, _ b: UInt8) -> Int32 { jumps[Int(a) << 4 | Int(b)] }
            row.withUnsafeMutableBufferPointer { row in
                across.withUnsafeMutableBufferPointer { across in
                    let r = reach / xStep
                    for y in stride(from: rowStep / 2, to: h, by: rowStep) {
                        let base = y &* w &* 3
                        for i in 0..<xs { row[i] = colourClass(base &+ i &* xStep &* 3) }
                        for i in r..<(xs - r) { across[i &* xStep] &+= jump(row[i &- r], row[i &+ r]) }
                    }
                }
            }
            sampled.withUnsafeMutableBufferPointer { sampled in
                down.withUnsafeMutableBufferPointer { down in
                    columns.withUnsafeBufferPointer { columns in
                        for j in 0..<ys {
                            let base = j &* yStep &* w &* 3, out = j &* n
                            for i in 0..<n { sampled[out &+ i] = colourClass(base &+ columns[i] &* 3) }
                        }
                    }
                    let r = reach / yStep
                    for j in r..<(ys - r) {
                        let above = (j &- r) &* n, below = (j &+ r) &* n
                        var count: Int32 = 0
                        for i in 0..<n { count &+= jump(sampled[above &+ i], sampled[below &+ i]) }
                        down[j &* yStep] = count
                    }
                }
            }
        }
        }
        }
        let xFits = combFits(across, minCell: minX, maxCell: maxX), yFits = combFits(down, minCell: minY, maxCell: maxY)
        var frames: [(Frame, Double)] = []
        let area = Double(w * h)
        for x in xFits {
            for y in yFits where x.cell * y.cell * Double(grid * grid) >= area * minimumCover * 0.9 {
                frames.append((Frame(x: x.origin, y: y.origin, width: x.cell * Double(grid), height: y.cell * Double(grid)), x.score + y.score))
            }
        }
        return frames.sorted { $0.1 > $1.1 }.map(\.0)
    }

    /// The best few combs of 7 evenly spaced lines (the card's inner grid lines) in a profile of
    /// colour jumps: (where the card's first cell starts, the cell size, the fit's score).
    static func combFits(_ profile: [Int32], minCell: Double, maxCell: Double) -> [(origin: Double, cell: Double, score: Double)] {
        let n = profile.count
        guard n > 8 else { return [] }
        // Smoothed, so that a line found a pixel off still counts.
        var smooth = [Int32](repeating: 0, count: n)
        for x in 1..<(n - 1) { smooth[x] = profile[x - 1] + 2 * profile[x] + profile[x + 1] }
        // A jump between pixels b-1 and b is counted at b-reach...b+reach-1: its centre is b - 1/2.
        func centroid(_ around: Double, _ radius: Double) -> (Double, Double)? {
            let lo = max(0, Int((around - radius).rounded(.up))), hi = min(n - 1, Int((around + radius).rounded(.down)))
            guard lo <= hi else { return nil }
            var mass = 0.0, moment = 0.0
            for x in lo...hi { mass += Double(profile[x]); moment += Double(profile[x]) * Double(x) }
            return mass > 0 ? (moment / mass, mass) : nil
        }
        // The strongest local maxima, at least 4 pixels apart.
        var peaks: [(x: Int, s: Int32)] = []
        for x in 1..<(n - 1) where smooth[x] > 0 && smooth[x] > smooth[x - 1] && smooth[x] >= smooth[x + 1] { peaks.append((x, smooth[x])) }
        peaks.sort { $0.s > $1.s }
        var kept: [Double] = []
        for peak in peaks where kept.count < 24 {
            if kept.allSatisfy({ abs($0 - Double(peak.x)) >= 4 }), let (c, _) = centroid(Double(peak.x), 3) { kept.append(c) }
        }
        kept.sort()
        @inline(__always) func at(_ x: Double) -> Int32 {
            let i = Int(x + 0.5) // rounded (x > -1; smooth[0] is 0)
            return i >= 0 && i < n ? smooth[i] : 0
        }
        // Teeth on the 7 inner lines, less what lies in the middle of the 8 cells (where the card
        // has none): a busy stretch of picture gives every comb the same. No line under a tooth:
        // no comb.
        func score(_ first: Double, _ cell: Double) -> Double {
            var teeth: Int32 = 0, middles: Int32 = 0
            for k in 1..<grid {
                let t = at(first + Double(k) * cell)
                if t == 0 { return -.infinity }
                teeth &+= t
            }
            for k in 0..<grid { middles &+= at(first + (Double(k) + 0.5) * cell) }
            return Double(teeth) - Double(middles) * Double(grid - 1) / Double(grid)
        }
        // `first` is where line 0 (the card's left or top edge) would be, in profile positions.
        var best: [(first: Double, cell: Double, score: Double)] = []
        let slack = 2.0
        func consider(_ first: Double, _ cell: Double) {
            guard first >= -0.5 - slack, first + Double(grid) * cell <= Double(n) - 0.5 + slack else { return }
            let s = score(first, cell)
            guard s > 0 else { return }
            if best.count == 16, s <= best[15].score { return }
            let same = best.firstIndex { abs($0.first - first) < cell / 8 && abs($0.cell - cell) < cell / 32 }
            if let same { if best[same].score >= s { return }; best.remove(at: same) }
            let at = best.firstIndex { $0.score < s } ?? best.count
            best.insert((first, cell, s), at: at)
            if best.count > 16 { best.removeLast() }
        }
        for i in 0..<kept.count {
            for j in (i + 1)..<kept.count {
                let gap = kept[j] - kept[i]
                for m in 1..<(grid - 1) {
                    let cell = gap / Double(m)
                    guard cell >= minCell * 0.97 && cell <= maxCell else { continue }
                    for a in 1..<(grid - m) { consider(kept[i] - Double(a) * cell, cell) }
                }
            }
        }
        // Refit each comb to its lines (weighted least squares): near each tooth, the strongest
        // line (not the mean of all jumps near it: a photo's own next to the card's would pull it).
        var fits: [(origin: Double, cell: Double, score: Double)] = []
        for candidate in best {
            var first = candidate.first, cell = candidate.cell
            for pass in 0..<2 {
                let radius = pass == 0 ? max(3, cell / 6) : 3
                var sw = 0.0, sk = 0.0, sx = 0.0, skk = 0.0, skx = 0.0
                for k in 1..<grid {
                    let p = first + Double(k) * cell
                    let lo = max(1, Int((p - radius).rounded(.up))), hi = min(n - 2, Int((p + radius).rounded(.down)))
                    guard lo <= hi else { continue }
                    var top = lo
                    for x in lo...hi where smooth[x] > smooth[top] { top = x }
                    guard smooth[top] > 0, let (c, _) = centroid(Double(top), 3) else { continue }
                    let weight = Double(smooth[top]), kk = Double(k)
                    sw += weight; sk += weight * kk; sx += weight * c; skk += weight * kk * kk; skx += weight * kk * c
                }
                let det = sw * skk - sk * sk
                guard det > 0 else { break }
                cell = (sw * skx - sk * sx) / det
                first = (sx - cell * sk) / sw
            }
            guard cell >= minCell * 0.95, cell <= maxCell,
                  first >= -0.5 - slack, first + Double(grid) * cell <= Double(n) - 0.5 + slack else { continue }
            let s = score(first, cell)
            let origin = max(0, first + 0.5), size = min(Double(n) - origin, cell * Double(grid))
            if fits.contains(where: { abs($0.origin - origin) < cell / 8 && abs($0.cell - cell) < cell / 32 }) { continue }
            fits.append((origin, size / Double(grid), s))
        }
        return Array(fits.sorted { $0.score > $1.score }.prefix(fitsPerAxis))
    }
}
