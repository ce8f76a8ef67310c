import CFFmpeg
/// Turns a still-image file into RGB pixels: JPEG through libturbojpeg, everything else through
/// ffmpeg's libraries. The type comes from the file's bytes, never its name.
public struct ImageDecoder: Sendable {
    public var limits: MediaLimits
    /// The displayed picture is decoded at least this large on its long side (when it is that large).
    public var minimumLongSide: Int
    /// ... and at least this large on its short side.
    public var minimumShortSide: Int
    /// Shared by every copy of this decoder (all workers of one analyzer).
    public let budget: DecodeMemoryBudget

    /// A file this small whose header holds no size goes to its decoder anyway (it needs no
    /// more memory than the file); the most of a JPEG XL codestream given to libjxl for its size.
    /// Headers are found by walking each format's structure (``HeaderReader``), not in a window.
    static let headLength = 256 << 10

    public init(limits: MediaLimits = .default, minimumLongSide: Int = 320, minimumShortSide: Int = 256) {
        self.limits = limits
        self.minimumLongSide = minimumLongSide
        self.minimumShortSide = minimumShortSide
        self.budget = DecodeMemoryBudget(capacity: limits.decodeMemoryBytes)
        FFmpeg.raiseAllocationCap(to: limits.decodeMemoryBytes)
    }

    /// Decodes an opened file within the memory budget: the file's bytes plus its decoder's
    /// working memory are reserved first (waiting while other large pictures decode), and a
    /// picture that alone would need more than the whole budget is refused unread. Errors carry
    /// the file's path.
    public func decode(_ file: MediaFile) throws(MediaError) -> DecodedImage {
        try decodeAll(file)[0]
    }

    /// Every picture a viewer could show of the file (``PictureFormat/decodeAll(_:request:)``),
    /// the displayed one first, within the memory budget.
    public func decodeAll(_ file: MediaFile) throws(MediaError) -> [DecodedImage] {
        // Every picture type has its registry entry (those not decoded refuse by name).
        guard file.type.kind == .image, let format = PictureFormats.format(for: file.type) else {
            throw MediaError(.unsupportedFormat, "is not a picture (\(file.type == .other ? "unrecognised content" : file.type.rawValue))", path: file.path)
        }
        do throws(MediaError) {
            guard file.identity.size > 0 else { throw MediaError(.empty, "is empty") }
            let size = Int(file.identity.size)
            guard size <= limits.maxImageFileBytes else {
                throw MediaError(.fileTooLarge, "is \(size >> 20) MiB, over the \(limits.maxImageFileBytes >> 20) MiB limit for pictures")
            }
            var working = try format.workingMemory(HeaderReader(file: file), request: request)
            if working >= Int.max / 4 && size <= Self.headLength {
                // A small file whose header holds no size: too short or damaged, and the
                // decoder says which; it needs no more than the file.
                working = size
            }
            let needed = size + min(working, Int.max / 4)
            guard needed <= budget.capacity else {
                throw MediaError(.dimensionsTooLarge, working >= Int.max / 4
                    ? "is a \(file.type.rawValue.uppercased()) whose header declares no picture size where its format puts one, so its decoding memory cannot be bounded; refused"
                    : "would need \(needed >> 20) MiB to decode, over the decode memory budget of \(budget.capacity >> 20) MiB (analysis.decode_memory_mib); refused without decoding")
            }
            return try budget.withReservation(needed) { () throws(MediaError) -> [DecodedImage] in
                let bytes = try file.readAll(limit: limits.maxImageFileBytes)
                let images = try format.decodeAll(bytes, request: request)
                guard !images.isEmpty else { throw MediaError(.corrupt, "holds no picture") }
                return images
            }
        } catch {
            throw error.at(file.path)
        }
    }

    var request: DecodeRequest {
        DecodeRequest(minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide, limits: limits)
    }

    /// Decodes an in-memory picture of a known type.
    public func decode(_ bytes: [UInt8], type: MediaType? = nil) throws(MediaError) -> DecodedImage {
        let type = type ?? MediaType.sniff(bytes)
        guard let format = PictureFormats.format(for: type) else {
            throw MediaError(.unsupportedFormat, "is not a picture format this program decodes (\(type.rawValue))")
        }
        return try format.decode(bytes, request: request)
    }

    /// libavcodec's TIFF decoder (the first page, whole), which tests compare libtiff's pages with.
    public static func ffmpegTIFF(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try FFmpegPictureFormat(type: .tiff, codec: AV_CODEC_ID_TIFF) { _ in true }.decode(bytes, request: request)
    }
}
