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
    /// The largest video file judged, in bytes (config `analysis.max_video_file_gib`). A video
    /// is never read whole to be analysed (its frames are sampled), but it is hashed whole before
    /// (the allow and block lists, the verdict cache): a larger one is refused before that
    /// read, as an oversized picture is, and `on_error` decides (child mode holds it as
    /// unverified, unread). 32 GiB: over an hour of 4K from a phone or a camera.
    public var maxVideoFileBytes: Int64 = 32 << 30

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
