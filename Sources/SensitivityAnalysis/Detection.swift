/// A rectangle in the original picture's pixels (x, y of the top-left corner).
public struct Box: Sendable, Codable, Equatable, Hashable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    public var area: Double { max(0, width) * max(0, height) }

    /// Intersection over union with `other`.
    public func iou(_ other: Box) -> Double {
        let ix = max(0, min(x + width, other.x + other.width) - max(x, other.x))
        let iy = max(0, min(y + height, other.y + other.height) - max(y, other.y))
        let inter = ix * iy
        let union = area + other.area - inter
        return union > 0 ? inter / union : 0
    }
}

/// One labelled region a model found.
public struct Detection: Sendable, Codable, Equatable, Hashable {
    /// A NudeNet class such as `FEMALE_BREAST_EXPOSED`, or `TEST_CARD`.
    public var label: String
    public var score: Double
    public var box: Box

    public init(label: String, score: Double, box: Box) {
        self.label = label; self.score = score; self.box = box
    }
}
