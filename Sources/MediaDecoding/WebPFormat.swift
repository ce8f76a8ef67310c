import CFFmpeg
import CWebP

/// WebP: a still through libavcodec as before; an animation through libwebp's animation
/// decoder, which composes each frame on its canvas as a browser shows it. Every frame is judged
/// up to ``maxFrames``; a longer animation is sampled evenly.
struct WebPFormat: PictureFormat {
    static let maxFrames = 48
    let still = FFmpegPictureFormat(type: .webp, codec: AV_CODEC_ID_WEBP) { _ in true }

    var type: MediaType { .webp }

    func matches(_ head: ArraySlice<UInt8>) -> Bool {
        head.starts(with: Array("RIFF".utf8)) && head.dropFirst(8).starts(with: Array("WEBP".utf8))
    }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try decodeAll(bytes, request: request)[0]
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        guard ImageHeader.isAnimated(bytes, type: .webp) else { return [try still.decode(bytes, request: request)] }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(MediaError) -> [DecodedImage] in
            var data = WebPData(bytes: buffer.baseAddress, size: buffer.count)
            var options = WebPAnimDecoderOptions()
            guard WebPAnimDecoderOptionsInit(&options) != 0 else { throw MediaError(.io, "libwebp version mismatch", operation: "WebPAnimDecoderOptionsInit") }
            options.color_mode = MODE_RGBA
            options.use_threads = 0
            guard let decoder = WebPAnimDecoderNew(&data, &options) else {
                throw MediaError(.corrupt, "is a damaged animated WebP", operation: "WebPAnimDecoderNew")
            }
            defer { WebPAnimDecoderDelete(decoder) }
            var info = WebPAnimInfo()
            guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else { throw MediaError(.corrupt, "is a damaged animated WebP", operation: "WebPAnimDecoderGetInfo") }
            let width = Int(info.canvas_width), height = Int(info.canvas_height), count = Int(info.frame_count)
            try request.limits.check(width: width, height: height)
            let step = max(1, (count + Self.maxFrames - 1) / Self.maxFrames)
            let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
            var images: [DecodedImage] = []
            var index = 0
            while WebPAnimDecoderHasMoreFrames(decoder) != 0 {
                var canvas: UnsafeMutablePointer<UInt8>? = nil
                var timestamp: Int32 = 0
                guard WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0, let canvas else {
                    if images.isEmpty { throw MediaError(.corrupt, "is a damaged animated WebP (frame \(index + 1))", operation: "WebPAnimDecoderGetNext") }
                    images[0].partialReason = "frames after \(index) cannot be decoded"
                    break
                }
                defer { index += 1 }
                guard index % step == 0 else { continue }
                let rgb = try FFmpeg.convertPacked(canvas, stride: width * 4, width: width, height: height, format: AV_PIX_FMT_RGBA, to: target)
                images.append(DecodedImage(image: rgb, originalWidth: width, originalHeight: height, type: .webp))
            }
            guard !images.isEmpty else { throw MediaError(.corrupt, "is an animated WebP without frames") }
            return images
        }
    }

    /// The canvas (RGBA) and the analysed frames at analysis size.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        guard let size = try? ImageHeader.dimensions(header, type: .webp) else { return .max / 4 }
        try request.limits.check(width: size.width, height: size.height)
        let target = FFmpeg.reducedSize(width: size.width, height: size.height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        let frames = ImageHeader.isAnimated(try header.head(30), type: .webp) ? Self.maxFrames : 1
        return size.width * size.height * 4 * 2 + frames * target.width * target.height * 3
    }

    func inventory() -> DecoderInventory.Entry {
        let entry = still.inventory()
        let version = WebPGetDemuxVersion()
        return DecoderInventory.Entry(name: "webp", available: entry.available,
                                      detail: entry.detail + "; animations: libwebp \(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)")
    }
}
