import CFFmpeg
import CTurboJPEG

/// How large a picture is decoded, and within which limits.
public struct DecodeRequest: Sendable {
    public var minimumLongSide: Int
    public var minimumShortSide: Int
    public var limits: MediaLimits
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
    /// Whether this build can decode it, and with what.
    func inventory() -> DecoderInventory.Entry
}

/// The registry of still-picture formats, in sniffing order.
public enum PictureFormats {
    public static let all: [any PictureFormat] = [
        JPEGFormat(),
        FFmpegPictureFormat(type: .png, codec: AV_CODEC_ID_PNG, signature: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
        FFmpegPictureFormat(type: .gif, codec: AV_CODEC_ID_GIF) { $0.starts(with: Array("GIF87a".utf8)) || $0.starts(with: Array("GIF89a".utf8)) },
        FFmpegPictureFormat(type: .webp, codec: AV_CODEC_ID_WEBP) { $0.starts(with: Array("RIFF".utf8)) && $0.dropFirst(8).starts(with: Array("WEBP".utf8)) },
        FFmpegPictureFormat(type: .bmp, codec: AV_CODEC_ID_BMP) { $0.starts(with: Array("BM".utf8)) && $0.count >= 26 },
        FFmpegPictureFormat(type: .tiff, codec: AV_CODEC_ID_TIFF) { $0.starts(with: [0x49, 0x49, 0x2A, 0x00]) || $0.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) },
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

    func inventory() -> DecoderInventory.Entry {
        DecoderInventory.ffmpegEntry(type.rawValue, codec)
    }
}
