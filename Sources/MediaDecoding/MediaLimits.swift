/// Bounds checked before any large allocation, so hostile or absurd files are refused early.
public struct MediaLimits: Sendable, Equatable {
    /// The largest still-image file read into memory, in bytes.
    public var maxImageFileBytes: Int
    /// The largest width or height accepted.
    public var maxDimension: Int
    /// The largest width × height accepted.
    public var maxPixels: Int

    public init(maxImageFileBytes: Int = 256 << 20, maxDimension: Int = 30_000, maxPixels: Int = 200_000_000) {
        self.maxImageFileBytes = maxImageFileBytes
        self.maxDimension = maxDimension
        self.maxPixels = maxPixels
    }

    public static let `default` = MediaLimits()

    /// Throws ``MediaError/Code/dimensionsTooLarge`` if `width`×`height` is outside the limits.
    public func check(width: Int, height: Int) throws(MediaError) {
        guard width > 0, height > 0 else {
            throw MediaError(.corrupt, "declares an empty picture (\(width)x\(height))")
        }
        if width > maxDimension || height > maxDimension || width.multipliedReportingOverflow(by: height).partialValue > maxPixels
            || width.multipliedReportingOverflow(by: height).overflow {
            throw MediaError(.dimensionsTooLarge,
                             "is \(width)x\(height) pixels, over the limit of \(maxDimension) per side and \(maxPixels / 1_000_000) megapixels; refused without decoding")
        }
    }
}
