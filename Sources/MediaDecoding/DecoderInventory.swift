import CFFmpeg
import CTurboJPEG

/// What this build can decode, for `quarantine doctor`.
public enum DecoderInventory {
    public struct Entry: Sendable, Codable {
        public var name: String
        public var available: Bool
        public var detail: String
    }

    public static func check() -> [Entry] {
        var entries: [Entry] = []
        if let handle = tjInitDecompress() {
            tjDestroy(handle)
            entries.append(Entry(name: "jpeg", available: true, detail: "libturbojpeg"))
        } else {
            entries.append(Entry(name: "jpeg", available: false, detail: "libturbojpeg could not create a decompressor"))
        }
        let version = avcodec_version()
        let ffmpeg = "libavcodec \(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
        let codecs: [(String, AVCodecID)] = [
            ("png", AV_CODEC_ID_PNG), ("gif", AV_CODEC_ID_GIF), ("webp", AV_CODEC_ID_WEBP), ("bmp", AV_CODEC_ID_BMP), ("tiff", AV_CODEC_ID_TIFF),
            ("h264", AV_CODEC_ID_H264), ("hevc", AV_CODEC_ID_HEVC), ("vp8", AV_CODEC_ID_VP8), ("vp9", AV_CODEC_ID_VP9),
            ("av1", AV_CODEC_ID_AV1), ("mpeg4", AV_CODEC_ID_MPEG4), ("mjpeg", AV_CODEC_ID_MJPEG),
        ]
        for (name, id) in codecs {
            if let codec = avcodec_find_decoder(id) {
                entries.append(Entry(name: name, available: true, detail: "\(ffmpeg) decoder \(String(cString: codec.pointee.name))"))
            } else {
                entries.append(Entry(name: name, available: false, detail: "\(ffmpeg) has no decoder"))
            }
        }
        return entries
    }
}
