import CFFmpeg

/// Writes RGB pictures as PNG through libavcodec's encoder.
public enum PNGEncoder {
    public static func encode(_ image: RGBImage) throws(MediaError) -> [UInt8] {
        FFmpeg.configureLogging()
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_PNG) else {
            throw MediaError(.unsupportedFormat, "this ffmpeg build has no PNG encoder", operation: "avcodec_find_encoder")
        }
        var context = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&context) }
        guard let ctx = context else { throw MediaError(.io, "out of memory", operation: "avcodec_alloc_context3") }
        ctx.pointee.width = Int32(image.width)
        ctx.pointee.height = Int32(image.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_RGB24
        ctx.pointee.time_base = AVRational(num: 1, den: 1)
        try FFmpeg.check(avcodec_open2(ctx, codec, nil), "avcodec_open2", type: .png)
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        guard let frm = frame, let pkt = packet else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
        frm.pointee.width = Int32(image.width)
        frm.pointee.height = Int32(image.height)
        frm.pointee.format = AV_PIX_FMT_RGB24.rawValue
        try FFmpeg.check(av_frame_get_buffer(frm, 0), "av_frame_get_buffer", type: .png)
        let stride = Int(frm.pointee.linesize.0)
        image.pixels.withUnsafeBufferPointer { src in
            for row in 0..<image.height {
                (frm.pointee.data.0! + row * stride).update(from: src.baseAddress! + row * image.width * 3, count: image.width * 3)
            }
        }
        try FFmpeg.check(avcodec_send_frame(ctx, frm), "avcodec_send_frame", type: .png)
        try FFmpeg.check(avcodec_receive_packet(ctx, pkt), "avcodec_receive_packet", type: .png)
        return Array(UnsafeBufferPointer(start: pkt.pointee.data, count: Int(pkt.pointee.size)))
    }
}
