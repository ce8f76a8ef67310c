import CFFmpeg
import CTurboJPEG

/// How large a picture is decoded, and within which limits.
public struct DecodeRequest: Sendable {
    public var minimumLongSide: Int
    public var minimumShortSide: Int
    public var limits: MediaLimits

    public init(minimumLongSide: Int, minimumShortSide: Int, limits: MediaLimits) {
        self.minimumLongSide = minimumLongSide
        self.minimumShortSide = minimumShortSide
        self.limits = limits
    }
}

/// One still-picture format: the rule that recognises its bytes, the decoder, and what
/// `quarantine doctor` says about it. A new format is one type conforming to this, plus its
/// entry in ``PictureFormats/all`` (and its case in ``MediaType``).
public protocol PictureFormat: Sendable {
    /// The media type this format decodes.
    var type: MediaType { get }
    /// Whether a file's leading bytes (up to ``MediaType/sniffLength``) are this format.
    func matches(_ head: ArraySlice<UInt8>) -> Bool
    /// The picture, decoded no smaller than the request asks (where it is that large).
    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage
    /// The decoder's working memory for this file, in bytes (the file's own bytes not included),
    /// estimated from its header (read through `header` by the format's structure, wherever it
    /// is) before the file is read or anything allocated. Errs high; `.max / 4` when the header
    /// holds no size.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int
    /// Whether this build can decode it, and with what.
    func inventory() -> DecoderInventory.Entry
    /// Every picture a viewer could show of this file, the displayed one first (the other
    /// images of a HEIF collection...). Default: the one ``decode(_:request:)`` gives.
    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage]
}

extension PictureFormat {
    /// The same, from bytes in memory (a whole file, or its first part).
    public func workingMemory(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> Int {
        try workingMemory(HeaderReader(bytes: bytes), request: request)
    }

    public func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        [try decode(bytes, request: request)]
    }
}

/// The registry of still-picture formats, in sniffing order.
public enum PictureFormats {
    public static let all: [any PictureFormat] = [
        JPEGFormat(),
        PNGFormat(),
        FFmpegPictureFormat(type: .gif, codec: AV_CODEC_ID_GIF) { $0.starts(with: Array("GIF87a".utf8)) || $0.starts(with: Array("GIF89a".utf8)) },
        WebPFormat(),
        FFmpegPictureFormat(type: .bmp, codec: AV_CODEC_ID_BMP) { $0.starts(with: Array("BM".utf8)) && $0.count >= 26 },
        TIFFFormat(),
        HEIFFormat(type: .heif),
        HEIFFormat(type: .avif),
        JXLFormat(),
        SVGFormat(),
        RecognisedOnly(type: .jxr, library: "a JPEG XR decoder (jxrlib), which Debian 12 does not package") { $0.starts(with: [0x49, 0x49, 0xBC, 0x01]) },
    ]

    /// The format of `type`, if it is a picture format this program decodes.
    public static func format(for type: MediaType) -> (any PictureFormat)? {
        all.first { $0.type == type }
    }

    /// The picture format whose sniff rule matches, if any.
    static func sniff(_ head: ArraySlice<UInt8>) -> MediaType? {
        all.first { $0.matches(head) }?.type
    }
}

/// JPEG through libturbojpeg (DCT scaling, EXIF orientation, CMYK).
struct JPEGFormat: PictureFormat {
    var type: MediaType { .jpeg }

    func matches(_ head: ArraySlice<UInt8>) -> Bool { head.starts(with: [0xFF, 0xD8, 0xFF]) }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try JPEGCodec.decode(bytes, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide, limits: request.limits)
    }

    /// The picture, then its EXIF thumbnail when it has one (viewers and file managers show the
    /// thumbnail, which need not be a reduction of the picture). A thumbnail that does not
    /// decode is passed over: the picture itself is judged.
    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        let picture = try decode(bytes, request: request)
        guard let thumbnail = EXIFOrientation.thumbnail(jpeg: bytes),
              var small = try? JPEGCodec.decode(thumbnail, minimumLongSide: 0, minimumShortSide: 0, limits: request.limits) else { return [picture] }
        small.partialReason = nil
        return [picture, small]
    }

    /// The scaled output (and its oriented copy); for a progressive JPEG also the coefficient
    /// buffer of the whole picture (64 two-byte coefficients per 8x8 block of every component).
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        guard let frame = try ImageHeader.jpegFrame(header) else { return .max / 4 }
        try request.limits.check(width: frame.width, height: frame.height)
        let factor = JPEGCodec.scalingFactor(width: frame.width, height: frame.height,
                                             minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        let sw = Int(qtj_scaled(Int32(frame.width), factor)), sh = Int(qtj_scaled(Int32(frame.height), factor))
        var bytes = sw * sh * 4 * 3 + frame.width * 16 * 4 * 3
        if frame.progressive {
            let hMax = frame.sampling.map(\.h).max() ?? 1, vMax = frame.sampling.map(\.v).max() ?? 1
            for s in frame.sampling {
                let blocksWide = (frame.width * s.h / hMax + 7) / 8 + 1, blocksHigh = (frame.height * s.v / vMax + 7) / 8 + 1
                bytes += blocksWide * blocksHigh * 128
            }
        }
        return bytes
    }

    func inventory() -> DecoderInventory.Entry {
        guard let handle = tjInitDecompress() else {
            return DecoderInventory.Entry(name: "jpeg", available: false, detail: "libturbojpeg could not create a decompressor")
        }
        tjDestroy(handle)
        return DecoderInventory.Entry(name: "jpeg", available: true, detail: "libturbojpeg")
    }
}

/// A picture that libavcodec decodes as one packet (the first frame of an animation).
struct FFmpegPictureFormat: PictureFormat {
    let type: MediaType
    let codec: AVCodecID
    let rule: @Sendable (ArraySlice<UInt8>) -> Bool

    init(type: MediaType, codec: AVCodecID, signature: [UInt8]) {
        self.init(type: type, codec: codec) { $0.starts(with: signature) }
    }

    init(type: MediaType, codec: AVCodecID, rule: @escaping @Sendable (ArraySlice<UInt8>) -> Bool) {
        self.type = type
        self.codec = codec
        self.rule = rule
    }

    func matches(_ head: ArraySlice<UInt8>) -> Bool { rule(head) }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try FFmpegImageDecoder.decode(bytes, type: type, codecID: codec, minimumLongSide: request.minimumLongSide,
                                      minimumShortSide: request.minimumShortSide, limits: request.limits)
    }

    /// libavcodec's whole frame (up to 4 bytes a pixel; 8 for 16-bit PNGs), swscale's output.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        guard let size = try? ImageHeader.dimensions(header, type: type) else { return .max / 4 }
        try request.limits.check(width: size.width, height: size.height)
        return Self.wholeFrameMemory(width: size.width, height: size.height, bytesPerPixel: 4, request: request)
    }

    static func wholeFrameMemory(width: Int, height: Int, bytesPerPixel: Int, request: DecodeRequest) -> Int {
        let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        return width * height * bytesPerPixel + width * bytesPerPixel * 4 + target.width * target.height * 3 * 2
    }

    func inventory() -> DecoderInventory.Entry {
        DecoderInventory.ffmpegEntry(type.rawValue, codec)
    }
}

/// PNG: through libavcodec as the other formats while the whole frame is small; a picture over
/// ``MediaLimits/rowByRowPixels`` is decoded by libpng one row at a time and averaged down on the way, so its
/// memory is its output, never its full size.
struct PNGFormat: PictureFormat {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    let whole = FFmpegPictureFormat(type: .png, codec: AV_CODEC_ID_PNG, signature: PNGFormat.signature)

    var type: MediaType { .png }

    func matches(_ head: ArraySlice<UInt8>) -> Bool { head.starts(with: Self.signature) }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        let size = try ImageHeader.dimensions(bytes, type: .png)
        guard let size, size.width * size.height > request.limits.rowByRowPixels else {
            do {
                return try whole.decode(bytes, request: request)
            } catch where error.code == .truncated || error.code == .corrupt {
                // libavcodec gives nothing of a PNG that ends early; libpng gives its rows so far.
                guard let size else { throw error }
                let rows = try? PNGRows.decodeReduced(bytes, width: size.width, height: size.height, request: request, alwaysShrink: false)
                guard let rows, rows.partialReason != nil else { throw error }
                return rows
            }
        }
        try request.limits.check(width: size.width, height: size.height)
        return try PNGRows.decodeReduced(bytes, width: size.width, height: size.height, request: request)
    }

    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        guard let size = try ImageHeader.dimensions(header, type: .png) else { return .max / 4 }
        try request.limits.check(width: size.width, height: size.height)
        if size.width * size.height <= request.limits.rowByRowPixels {
            return FFmpegPictureFormat.wholeFrameMemory(width: size.width, height: size.height, bytesPerPixel: 8, request: request)
        }
        let target = PNGRows.targetSize(width: size.width, height: size.height, request: request)
        // Sums (3 x 8 bytes) and a count (4) per output pixel, the output, one source row at 16 bits.
        return target.width * target.height * (24 + 4 + 3) + size.width * 8 * 2
    }

    func inventory() -> DecoderInventory.Entry {
        let entry = whole.inventory()
        return DecoderInventory.Entry(name: entry.name, available: entry.available, detail: entry.detail + "; libpng row by row over 16 megapixels")
    }
}

/// A picture format recognised by its bytes that this build does not decode: its files are an
/// `unsupported_format` error naming it, handled by `on_error` (held as unverified in child
/// mode), never passed over as "other".
struct RecognisedOnly: PictureFormat {
    let type: MediaType
    let library: String
    let rule: @Sendable (ArraySlice<UInt8>) -> Bool

    func matches(_ head: ArraySlice<UInt8>) -> Bool { rule(head) }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        throw MediaError(.unsupportedFormat, "is a \(type.displayName) picture, which this build cannot decode yet (it needs \(library)); it is not analysed")
    }

    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int { 0 }

    func inventory() -> DecoderInventory.Entry {
        DecoderInventory.Entry(name: type.rawValue, available: false,
                               detail: "recognised, not decoded (needs \(library)): such files go through on_error", expected: false)
    }
}
