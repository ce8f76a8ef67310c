/// Stretches of a video's media time, in seconds: disjoint, ascending, merged where they touch.
/// A video analysis reports the stretches it has covered (every frame in them within the gap of
/// an analysed one, all judged clean), so an interrupted analysis can resume from them.
public struct CoveredRanges: Sendable, Equatable, Codable {
    public private(set) var ranges: [ClosedRange<Double>] = []

    public init(_ ranges: [ClosedRange<Double>] = []) {
        for range in ranges { insert(range) }
    }

    /// `[[start, end], ...]`, as stored and sent.
    public init(pairs: [[Double]]) {
        self.init(pairs.compactMap { $0.count == 2 && $0[0].isFinite && $0[1].isFinite && $0[0] <= $0[1] ? $0[0]...$0[1] : nil })
    }

    public var pairs: [[Double]] { ranges.map { [$0.lowerBound, $0.upperBound] } }
    public var isEmpty: Bool { ranges.isEmpty }

    /// Adds `range`, merging it with those it overlaps or touches (within `tolerance`).
    public mutating func insert(_ range: ClosedRange<Double>, tolerance: Double = 1e-6) {
        var merged = range
        var kept: [ClosedRange<Double>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            if existing.upperBound + tolerance < merged.lowerBound || merged.upperBound + tolerance < existing.lowerBound {
                kept.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)...max(existing.upperBound, merged.upperBound)
            }
        }
        kept.append(merged)
        ranges = kept.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Seconds covered.
    public var measure: Double { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Whether `time` lies in a covered stretch.
    public func contains(_ time: Double) -> Bool { ranges.contains { $0.contains(time) } }

    /// Whether the whole of `range` is covered.
    public func covers(_ range: ClosedRange<Double>) -> Bool {
        ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }

    /// The share of `0...duration` covered (0...1).
    public func fraction(of duration: Double) -> Double {
        guard duration > 0 else { return 0 }
        return min(1, ranges.reduce(0) { $0 + max(0, min($1.upperBound, duration) - max($1.lowerBound, 0)) } / duration)
    }
}

/// Which frames of an indexed video are analysed, coarse to fine: first keyframes spread over
/// the whole file (they decode on their own, and encoders start one at a scene cut), then the
/// stretches between them, each filled in from its keyframe until no two analysed frames are more
/// than the gap apart.
struct VideoPlan {
    /// The keyframes analysed in the coarse pass: indexes into the decoder's keyframes.
    let picks: [Int]
    /// Their index times, seconds.
    let times: [Double]

    /// Picks keyframes so that consecutive ones are at most `maxGap` apart where the index
    /// allows (from each pick, the last keyframe within the gap; else the next one: nothing lies
    /// between them, and that stretch is filled in later).
    init(keyframes: [Double], maxGap: Double) {
        var picks: [Int] = []
        var i = 0
        while i < keyframes.count {
            picks.append(i)
            var next = i + 1
            while next + 1 < keyframes.count && keyframes[next + 1] <= keyframes[i] + maxGap + 1e-6 { next += 1 }
            i = next
        }
        self.picks = picks
        times = picks.map { keyframes[$0] }
    }

    /// The coarse pass's order: the picks in bit-reversed order of their position, so the whole
    /// file is touched early (a flagged stretch anywhere is met after a fraction of the pass).
    var coarseOrder: [Int] {
        guard picks.count > 2 else { return Array(picks.indices) }
        var bits = 0
        while 1 << bits < picks.count { bits += 1 }
        var order: [Int] = []
        order.reserveCapacity(picks.count)
        for n in 0..<(1 << bits) {
            var reversed = 0
            for b in 0..<bits where n & (1 << b) != 0 { reversed |= 1 << (bits - 1 - b) }
            if reversed < picks.count { order.append(reversed) }
        }
        return order
    }
}
