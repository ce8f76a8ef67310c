import CFFmpeg
import Locking

/// Helpers shared by every libav* caller: error codes to ``MediaError``, logging, and
/// frame conversion with swscale.
enum FFmpeg {
    /// libav* print to stderr by default; quarantine reports errors itself. And no single
    /// libav* allocation may exceed ``defaultAllocationCap`` (or what ``raiseAllocationCap(to:)``
    /// set; libavutil's own default is 2 GiB). Both are told at the first use of libav*, which
    /// opens FFmpeg (``configureLogging()``), not before: a process that decodes only JPEGs
    /// (libturbojpeg) never loads FFmpeg's libraries and their 150 dependencies (about 45 ms of
    /// CPU here, a tenth of a `quarantine scan` of one JPEG; it was loaded by every
    /// ``ImageDecoder``'s creation).
    private static let state = Locked((cap: defaultAllocationCap, told: false))

    /// Called before any use of libav*: opens FFmpeg (the first time) and tells it the above.
    static func configureLogging() {
        state.withLock { state in
            guard !state.told else { return }
            av_log_set_level(AV_LOG_QUIET)
            av_max_alloc(state.cap)
            state.told = true
        }
    }

    /// The largest single allocation libav* may make: 256 MiB, the default decode memory budget
    /// (a picture that needs more is refused by ``ImageDecoder`` before any decoding, and a 4K
    /// video frame is 12 MiB). Without it, a 1.5 KB MP4 whose sample tables declare billions of
    /// entries made libavformat's mov demuxer reallocate to 2 GiB (2.8 GB resident, 5 s, for
    /// `quarantine scan` on the file; found by `make fuzz`, video harness); now that allocation
    /// fails and the file is refused as needing too much memory. Raised, never lowered, by
    /// ``raiseAllocationCap(to:)`` when a larger decode budget is configured.
    static let defaultAllocationCap = 256 << 20

    /// Lets libav* allocate up to `bytes` at once (a configured `analysis.decode_memory_mib` over
    /// the default): pictures within the budget must still decode. Told to libav* now if it is
    /// in use, else at its first use.
    static func raiseAllocationCap(to bytes: Int) {
        state.withLock { state in
            guard bytes > state.cap else { return }
            state.cap = bytes
            if state.told { av_max_alloc(bytes) }
        }
    }

    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        qff_err2str(code, &buffer, buffer.count)
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    static func error(_ code: Int32, _ operation: String, type: MediaType) -> MediaError {
        let name = type.rawValue.uppercased()
        let cause = message(code)
        if code == qff_averror_eof() {
            return MediaError(.truncated, "is a truncated \(name) (the data ends before the picture does)", cause: cause, operation: operation)
        }
        if code == qff_averror(ENOMEM) {
            return MediaError(.dimensionsTooLarge, "needs more memory than allowed to decode", cause: cause, operation: operation)
        }
        if code == qff_averror(EINVAL) || code == qff_averror_invaliddata() {
            return MediaError(.corrupt, "is a corrupt or truncated \(name)", cause: cause, operation: operation)
        }
        if code == qff_averror(ENOSYS) || code == qff_averror_decoder_not_found() {
            return MediaError(.unsupportedFormat, "uses a \(name) feature this ffmpeg cannot decode", cause: cause, operation: operation)
        }
        return MediaError(.corrupt, "could not be decoded as \(name)", cause: cause, operation: operation)
    }

    static func check(_ code: Int32, _ operation: String, type: MediaType) throws(MediaError) {
        if code < 0 { throw error(code, operation, type: type) }
    }

    /// An opened decoder for a video stream: one decoding thread (frame threads cost more CPU
    /// than they save, and the other core judges the previous sample), pictures above
    /// `maxPixels` refused by the decoder itself, `configure` for the caller's own flags. On
    /// failure nothing is left allocated (the caller still owns and closes its demuxer); the error
    /// names `path`.
    static func openVideoDecoder(_ parameters: UnsafeMutablePointer<AVCodecParameters>, timeBase: AVRational, maxPixels: Int,
                                 type: MediaType, path: String,
                                 configure: (UnsafeMutablePointer<AVCodecContext>) -> Void) throws(MediaError) -> UnsafeMutablePointer<AVCodecContext> {
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            throw MediaError(.unsupportedFormat, "uses the \(name) video codec, which this ffmpeg cannot decode", path: path)
        }
        var context = avcodec_alloc_context3(codec)
        guard let ctx = context, avcodec_parameters_to_context(ctx, parameters) >= 0 else {
            avcodec_free_context(&context)
            throw MediaError(.io, "out of memory", path: path, operation: "avcodec_alloc_context3")
        }
        ctx.pointee.max_pixels = Int64(maxPixels)
        ctx.pointee.thread_count = 1
        ctx.pointee.pkt_timebase = timeBase
        configure(ctx)
        let opened = avcodec_open2(ctx, codec, nil)
        if opened < 0 {
            avcodec_free_context(&context)
            throw error(opened, "avcodec_open2", type: type).at(path)
        }
        return ctx
    }

    /// The size a picture is reduced to before analysis: unchanged unless it is more than twice
    /// what both models need (or larger at all, with `alwaysShrink`), then shrunk, keeping its
    /// aspect, to just what they need.
    static func reducedSize(width: Int, height: Int, minimumLongSide: Int, minimumShortSide: Int, alwaysShrink: Bool = false) -> (width: Int, height: Int) {
        let long = max(width, height), short = min(width, height)
        let factor = max(Double(minimumLongSide) / Double(long), Double(minimumShortSide) / Double(short))
        guard factor > 0, factor <= (alwaysShrink ? 0.999 : 0.5) else { return (width, height) }
        return (max(1, Int((Double(width) * factor).rounded(.up))), max(1, Int((Double(height) * factor).rounded(.up))))
    }

    /// A packed picture another library decoded (libheif's RGB plane, libwebp's RGBA canvas),
    /// converted to RGB at the given size by swscale as every other format is, without a copy
    /// at full size.
    static func convertPacked(_ pixels: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, format: AVPixelFormat,
                              to target: (width: Int, height: Int)) throws(MediaError) -> RGBImage {
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let f = frame else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = format.rawValue
        f.pointee.data.0 = UnsafeMutablePointer(mutating: pixels)
        f.pointee.linesize.0 = Int32(stride)
        defer { f.pointee.data.0 = nil }
        return try convertToRGB(f, width: target.width, height: target.height)
    }

    /// Converts a decoded frame to packed RGB at the given size (area averaging when shrinking).
    /// `fast` (video samples): plain bilinear filtering, without swscale's accurate-rounding and
    /// full-chroma paths.
    static func convertToRGB(_ frame: UnsafeMutablePointer<AVFrame>, width: Int, height: Int, fast: Bool = false) throws(MediaError) -> RGBImage {
        let srcW = frame.pointee.width, srcH = frame.pointee.height
        let shrinking = width < Int(srcW) || height < Int(srcH)
        let flags = fast ? SWS_BILINEAR : (shrinking ? SWS_AREA : SWS_BILINEAR) | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT
        guard let sws = sws_getContext(srcW, srcH, AVPixelFormat(frame.pointee.format), Int32(width), Int32(height),
                                       AV_PIX_FMT_RGB24, flags, nil, nil, nil) else {
            throw MediaError(.unsupportedFormat, "has a pixel format swscale cannot convert (\(frame.pointee.format))", operation: "sws_getContext")
        }
        defer { sws_freeContext(sws) }
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        let rows = pixels.withUnsafeMutableBufferPointer { dst -> Int32 in
            var dstPlanes: [UnsafeMutablePointer<UInt8>?] = [dst.baseAddress, nil, nil, nil]
            var dstStrides: [Int32] = [Int32(width * 3), 0, 0, 0]
            return withUnsafePointer(to: &frame.pointee.data) { dataTuple in
                withUnsafePointer(to: &frame.pointee.linesize) { strideTuple in
                    dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                        strideTuple.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            sws_scale(sws, planes, strides, 0, srcH, &dstPlanes, &dstStrides)
                        }
                    }
                }
            }
        }
        guard rows > 0 else { throw MediaError(.corrupt, "could not be converted to RGB", operation: "sws_scale") }
        return RGBImage(width: width, height: height, pixels: pixels)
    }
}

extension FFmpeg {
    /// How a decoded video frame becomes an analysis picture: turned upright by its stream's
    /// display rotation, at analysis size, in one swscale pass (the frame's size is checked
    /// against the limits by the caller, before).
    struct Upright: Sendable {
        var rotation: Int
        var minimumLongSide: Int
        var minimumShortSide: Int

        func image(of frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> RGBImage {
            let w = Int(frame.pointee.width), h = Int(frame.pointee.height)
            let swaps = rotation == 90 || rotation == 270
            let target = FFmpeg.reducedSize(width: swaps ? h : w, height: swaps ? w : h, minimumLongSide: minimumLongSide,
                                            minimumShortSide: minimumShortSide, alwaysShrink: true)
            let image = try FFmpeg.convertToRGB(frame, width: swaps ? target.height : target.width, height: swaps ? target.width : target.height, fast: true)
            switch rotation {
            case 90: return image.applyingOrientation(6)
            case 180: return image.applyingOrientation(3)
            case 270: return image.applyingOrientation(8)
            default: return image
            }
        }
    }
}
