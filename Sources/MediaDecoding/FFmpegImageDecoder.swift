import CFFmpeg

/// Still pictures other than JPEG (PNG, GIF's first frame, WebP, BMP, TIFF) through
/// libavcodec: the whole file is one packet, the first frame is the picture.
enum FFmpegImageDecoder {
    static func decode(_ bytes: [UInt8], type: MediaType, codecID: AVCodecID, minimumLongSide: Int, minimumShortSide: Int,
                       limits: MediaLimits) throws(MediaError) -> DecodedImage {
        FFmpeg.configureLogging()
        if let size = try ImageHeader.dimensions(bytes, type: type) {
            try limits.check(width: size.width, height: size.height)
        }
        if type == .gif { try ImageHeader.checkGIFFirstFrameComplete(bytes) }
        guard let codec = avcodec_find_decoder(codecID) else {
            throw MediaError(.unsupportedFormat, "needs the \(type.rawValue) decoder, which this ffmpeg build lacks", operation: "avcodec_find_decoder")
        }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        guard let ctx = context else { throw MediaError(.io, "out of memory", operation: "avcodec_alloc_context3") }
        ctx.pointee.max_pixels = Int64(limits.maxPixels)
        ctx.pointee.thread_count = 1
        try FFmpeg.check(avcodec_open2(ctx, codec, nil), "avcodec_open2", type: type)

        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let pkt = packet, av_new_packet(pkt, Int32(bytes.count)) == 0 else {
            throw MediaError(.io, "out of memory", operation: "av_new_packet")
        }
        bytes.withUnsafeBufferPointer { pkt.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let frm = frame else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }

        let sent = avcodec_send_packet(ctx, pkt)
        if sent < 0 { throw FFmpeg.error(sent, "avcodec_send_packet", type: type) }
        var received = avcodec_receive_frame(ctx, frm)
        if received == qff_averror(EAGAIN) {
            _ = avcodec_send_packet(ctx, nil)
            received = avcodec_receive_frame(ctx, frm)
        }
        if received < 0 { throw FFmpeg.error(received, "avcodec_receive_frame", type: type) }
        if frm.pointee.decode_error_flags != 0 || (frm.pointee.flags & AV_FRAME_FLAG_CORRUPT) != 0 {
            throw MediaError(.corrupt, "is a damaged \(type.rawValue.uppercased()) (the decoder reported corrupt data)", operation: "avcodec_receive_frame")
        }
        let width = Int(frm.pointee.width), height = Int(frm.pointee.height)
        try limits.check(width: width, height: height)
        let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide)
        let image = try FFmpeg.convertToRGB(frm, width: target.width, height: target.height)
        return DecodedImage(image: image, originalWidth: width, originalHeight: height, type: type)
    }
}
