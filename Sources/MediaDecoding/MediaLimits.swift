/// Bounds checked before any large allocation, so hostile or absurd files are refused early.
public struct MediaLimits: Sendable, Equatable, Codable {
    /// The largest still-image file read into memory, in bytes.
    public var maxImageFileBytes: Int
    /// The largest width or height accepted.
    public var maxDimension: Int
    /// The largest width × height accepted.
    public var maxPixels: Int
    /// What all pictures being decoded at once may use together: the file's bytes plus the
    /// decoder's working memory (see ``DecodeMemoryBudget``). A picture that would need more on
    /// its own is refused (`dimensions_too_large`).
    public var decodeMemoryBytes: Int
    /// PNGs with more pixels than this are decoded row by row and reduced on the way (16
    /// megapixels: 64 MiB as RGBA, 128 MiB at 16 bits, if decoded whole).
    public var rowByRowPixels = 16_000_000
    /// Archives, zip-based documents and PDFs.
    public var containers = ContainerLimits()

    public init(maxImageFileBytes: Int = 256 << 20, maxDimension: Int = 30_000, maxPixels: Int = 200_000_000, decodeMemoryBytes: Int = 256 << 20) {
        self.maxImageFileBytes = maxImageFileBytes
        self.maxDimension = maxDimension
        self.maxPixels = maxPixels
        self.decodeMemoryBytes = decodeMemoryBytes
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
