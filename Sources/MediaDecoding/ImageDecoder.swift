/// Turns a still-image file into RGB pixels: JPEG through libturbojpeg, everything else through
/// ffmpeg's libraries. The type comes from the file's bytes, never its name.
public struct ImageDecoder: Sendable {
    public var limits: MediaLimits
    /// The displayed picture is decoded at least this large on its long side (when it is that large).
    public var minimumLongSide: Int
    /// ... and at least this large on its short side.
    public var minimumShortSide: Int

    public init(limits: MediaLimits = .default, minimumLongSide: Int = 320, minimumShortSide: Int = 256) {
        self.limits = limits
        self.minimumLongSide = minimumLongSide
        self.minimumShortSide = minimumShortSide
    }

    /// Decodes an opened file; errors carry the file's path.
    public func decode(_ file: MediaFile) throws(MediaError) -> DecodedImage {
        guard file.type.kind == .image else {
            throw MediaError(.unsupportedFormat, "is not a picture (\(file.type == .other ? "unrecognised content" : file.type.rawValue))", path: file.path)
        }
        do {
            let bytes = try file.readAll(limit: limits.maxImageFileBytes)
            return try decode(bytes, type: file.type)
        } catch {
            throw error.at(file.path)
        }
    }

    /// Decodes an in-memory picture of a known type.
    public func decode(_ bytes: [UInt8], type: MediaType? = nil) throws(MediaError) -> DecodedImage {
        let type = type ?? MediaType.sniff(bytes)
        guard let format = PictureFormats.format(for: type) else {
            throw MediaError(.unsupportedFormat, "is not a picture format this program decodes (\(type.rawValue))")
        }
        return try format.decode(bytes, request: DecodeRequest(minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide, limits: limits))
    }
}
