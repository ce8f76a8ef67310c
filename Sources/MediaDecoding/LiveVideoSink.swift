import CFFmpeg
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a live video frame by frame through libavformat: to a V4L2 output device (a
/// v4l2loopback virtual camera, through libavdevice's `v4l2` muxer, as
/// `ffmpeg ... -f v4l2 /dev/videoM` does), or as a standard uncompressed stream to a file, a FIFO
/// or standard output (YUV4MPEG, `.y4m`, the default; or NUT with raw video, `.nut`), which a
/// person can record or pipe into a player.
///
/// Every destination gets the same thing: planar YUV 4:2:0 frames at one size, each written as
/// soon as it is given (a pipe's buffer is flushed after each frame). The code that talks to the
/// device is ffmpeg's; this type only chooses the muxer by what the destination is.
///
/// One thread writes; the sink is not shared.
public final class LiveVideoSink {
    /// What the destination is.
    public enum Kind: String, Sendable, Codable {
        /// A V4L2 device that takes output (a v4l2loopback virtual camera).
        case virtualCamera = "virtual camera"
        /// Standard output (`-`), or a FIFO.
        case pipe
        /// A regular file, made or truncated.
        case file
    }

    /// The muxer, as ffmpeg names it.
    public enum Container: String, Sendable, Codable {
        case v4l2
        case yuv4mpegpipe
        case nut
    }

    /// Where the frames go and how, decided before anything is read (``resolve(_:)``).
    public struct Destination: Sendable, Equatable {
        public var target: String
        public var kind: Kind
        public var container: Container
        /// What libavformat opens (`file:` prefixed for paths, `pipe:1` for standard output).
        public var url: String
    }

    public let destination: Destination
    public let width: Int
    public let height: Int
    /// Frames written so far.
    public private(set) var frames = 0
    var format: UnsafeMutablePointer<AVFormatContext>?
    var encoder: UnsafeMutablePointer<AVCodecContext>?
    var stream: UnsafeMutablePointer<AVStream>?
    var packet: UnsafeMutablePointer<AVPacket>?
    let rate: AVRational
    var lastPTS: Int64 = -1
    var finished = false

    /// Decides how `target` is written: an existing character device must be a V4L2 device that
    /// takes output (else refused: `/dev/null`, a capture-only camera); a path under `/dev/` that
    /// does not exist is refused (a virtual camera was meant); `-` is standard output; anything
    /// else is a file or a FIFO, written as NUT when its name ends in `.nut`, else as YUV4MPEG.
    /// The file being read (`input`) is refused: writing it would truncate it under the reader.
    public static func resolve(_ target: String, input: String? = nil) throws(MediaError) -> Destination {
        func byName(_ kind: Kind, _ url: String) -> Destination {
            Destination(target: target, kind: kind, container: target.lowercased().hasSuffix(".nut") ? .nut : .yuv4mpegpipe, url: url)
        }
        if target == "-" { return Destination(target: target, kind: .pipe, container: .yuv4mpegpipe, url: "pipe:1") }
        var info = stat()
        guard stat(target, &info) == 0 else {
            let code = errno
            if code == ENOENT && target.hasPrefix("/dev/") {
                throw MediaError(.notFound, "does not exist: no V4L2 device of that name", path: target, cause: String(cString: strerror(code)), operation: "stat")
            }
            guard code == ENOENT else {
                throw MediaError(code == EACCES ? .permissionDenied : .io, "cannot be written", path: target, cause: String(cString: strerror(code)), operation: "stat")
            }
            return byName(.file, "file:" + target)
        }
        var read = stat()
        if let input, info.st_mode & S_IFMT == S_IFREG, stat(input, &read) == 0, read.st_dev == info.st_dev, read.st_ino == info.st_ino {
            throw MediaError(.io, "is the input itself: writing it would destroy what is being read", path: target)
        }
        switch info.st_mode & S_IFMT {
        case S_IFCHR:
            try checkOutputDevice(target)
            return Destination(target: target, kind: .virtualCamera, container: .v4l2, url: target)
        case S_IFIFO: return byName(.pipe, "file:" + target)
        case S_IFREG: return byName(.file, "file:" + target)
        default: throw MediaError(.notRegularFile, "is neither a V4L2 device, a pipe nor a file", path: target)
        }
    }

    /// `VIDIOC_QUERYCAP`: `_IOR('V', 0, struct v4l2_capability)`, a 104-byte structure.
    static let queryCapability: UInt = 0x8068_5600
    /// `V4L2_CAP_VIDEO_OUTPUT`, `V4L2_CAP_VIDEO_OUTPUT_MPLANE`, `V4L2_CAP_DEVICE_CAPS`.
    static let outputCapabilities: UInt32 = 0x0000_0002 | 0x0000_2000
    static let deviceCapabilities: UInt32 = 0x8000_0000

    /// Refuses a character device that is not a V4L2 device taking output frames.
    static func checkOutputDevice(_ path: String) throws(MediaError) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw MediaError(code == EACCES ? .permissionDenied : .io, "cannot be opened", path: path, cause: String(cString: strerror(code)), operation: "open")
        }
        defer { _ = Glibc.close(fd) }
        var capability = [UInt8](repeating: 0, count: 104)
        var result: Int32 = -1
        var code: Int32 = 0
        repeat {
            result = capability.withUnsafeMutableBytes { ioctl(fd, queryCapability, $0.baseAddress!) }
            code = errno
        } while result < 0 && code == EINTR
        guard result == 0 else {
            throw MediaError(.unsupportedFormat, "is not a V4L2 device", path: path, cause: String(cString: strerror(code)), operation: "VIDIOC_QUERYCAP")
        }
        func word(_ offset: Int) -> UInt32 { capability[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        let all = word(84), device = word(88)
        let caps = all & deviceCapabilities != 0 ? device : all
        guard caps & outputCapabilities != 0 else {
            let driver = String(decoding: capability[0..<16].prefix(while: { $0 != 0 }), as: UTF8.self)
            throw MediaError(.unsupportedFormat, "is a V4L2 device (\(driver)) that takes no output frames: a capture device, not a virtual camera", path: path,
                             operation: "VIDIOC_QUERYCAP")
        }
    }

    /// Opens `destination` for `width`×`height` frames at `frameRate` (default 30) and writes
    /// the container's header (for a virtual camera: sets the device's format to YUV 4:2:0 at
    /// that size).
    public init(_ destination: Destination, width: Int, height: Int, frameRate: Double?) throws(MediaError) {
        FFmpeg.configureLogging()
        _ = CameraSupport.status  // registers libavdevice's v4l2 muxer
        self.destination = destination
        self.width = width
        self.height = height
        rate = av_d2q(min(max(frameRate ?? 30, 1), 240), 1_001_000)
        let target = destination.target
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        let allocated = avformat_alloc_output_context2(&context, nil, destination.container.rawValue, destination.url)
        guard allocated >= 0, let context else {
            throw MediaError(.unsupportedFormat, "cannot be written as \(destination.container.rawValue)", path: target, cause: FFmpeg.message(allocated),
                             operation: "avformat_alloc_output_context2")
        }
        format = context
        // YUV4MPEG takes whole frames (wrapped_avframe); the v4l2 muxer and NUT take raw video.
        let codecID = destination.container == .yuv4mpegpipe ? AV_CODEC_ID_WRAPPED_AVFRAME : AV_CODEC_ID_RAWVIDEO
        guard let codec = avcodec_find_encoder(codecID), let encoder = avcodec_alloc_context3(codec),
              let stream = avformat_new_stream(context, nil), let packet = av_packet_alloc() else {
            avformat_free_context(context)
            format = nil
            throw MediaError(.io, "cannot be written: no encoder for raw video", path: target, operation: "avcodec_find_encoder")
        }
        self.encoder = encoder
        self.stream = stream
        self.packet = packet
        encoder.pointee.width = Int32(width)
        encoder.pointee.height = Int32(height)
        encoder.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        encoder.pointee.time_base = AVRational(num: rate.den, den: rate.num)
        encoder.pointee.framerate = rate
        stream.pointee.time_base = encoder.pointee.time_base
        stream.pointee.avg_frame_rate = rate
        do {
            try Self.check(avcodec_open2(encoder, codec, nil), "avcodec_open2", target)
            try Self.check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder), "avcodec_parameters_from_context", target)
            if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
                try Self.check(avio_open(&context.pointee.pb, destination.url, AVIO_FLAG_WRITE), "avio_open", target)
            }
            try Self.check(avformat_write_header(context, nil), "avformat_write_header", target)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    static func check(_ code: Int32, _ operation: String, _ target: String) throws(MediaError) {
        guard code < 0 else { return }
        throw MediaError(code == qff_averror(EACCES) ? .permissionDenied : .io, "cannot be written", path: target, cause: FFmpeg.message(code), operation: operation)
    }

    /// Writes one YUV 4:2:0 frame of the sink's size, shown at media time `time` (seconds).
    public func write(_ frame: RawVideoFrame, time: Double) throws(MediaError) {
        guard frame.format == .yuv420p, frame.width == width, frame.height == height else {
            throw MediaError(.corrupt, "is a \(width)x\(height) yuv420p stream; a \(frame.width)x\(frame.height) \(frame.format.rawValue) frame cannot be written to it",
                             path: destination.target)
        }
        guard let context = format, let encoder, let stream, let packet else { throw MediaError(.io, "the sink is closed", path: destination.target) }
        var avFrame = av_frame_alloc()
        defer { av_frame_free(&avFrame) }
        guard let f = avFrame else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        var pts = Int64((time * av_q2d(rate)).rounded())
        if pts <= lastPTS { pts = lastPTS + 1 }
        lastPTS = pts
        f.pointee.pts = pts
        try Self.check(av_frame_get_buffer(f, 0), "av_frame_get_buffer", destination.target)
        frame.bytes.withUnsafeBufferPointer { source in
            var offset = 0
            let halfW = (width + 1) / 2, halfH = (height + 1) / 2
            withUnsafeMutablePointer(to: &f.pointee.data) { dataTuple in
                withUnsafeMutablePointer(to: &f.pointee.linesize) { strideTuple in
                    dataTuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { planes in
                        strideTuple.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            for (plane, (w, h)) in [(width, height), (halfW, halfH), (halfW, halfH)].enumerated() {
                                for row in 0..<h {
                                    (planes[plane]! + row * Int(strides[plane])).update(from: source.baseAddress! + offset + row * w, count: w)
                                }
                                offset += w * h
                            }
                        }
                    }
                }
            }
        }
        try Self.check(avcodec_send_frame(encoder, f), "avcodec_send_frame", destination.target)
        while true {
            let received = avcodec_receive_packet(encoder, packet)
            if received == qff_averror(EAGAIN) || received == qff_averror_eof() { break }
            try Self.check(received, "avcodec_receive_packet", destination.target)
            packet.pointee.stream_index = stream.pointee.index
            av_packet_rescale_ts(packet, encoder.pointee.time_base, stream.pointee.time_base)
            let written = av_write_frame(context, packet)
            av_packet_unref(packet)
            try Self.check(written, "av_write_frame", destination.target)
        }
        if let pb = context.pointee.pb {
            avio_flush(pb)
            if pb.pointee.error < 0 { try Self.check(pb.pointee.error, "avio_flush", destination.target) }
        }
        frames += 1
    }

    /// Writes packed RGB pixels (any size: scaled to the sink's) as the next frame.
    public func write(_ image: RGBImage, time: Double) throws(MediaError) {
        try write(Self.yuv420p(image, width: width, height: height), time: time)
    }

    /// Writes the container's trailer and closes the destination.
    public func finish() throws(MediaError) {
        guard !finished, let context = format else { return }
        finished = true
        let ended = av_write_trailer(context)
        close()
        try Self.check(ended, "av_write_trailer", destination.target)
    }

    func close() {
        if let context = format {
            if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
            format = nil
        }
        avcodec_free_context(&encoder)
        av_packet_free(&packet)
        stream = nil
    }

    /// Packed RGB as a `width`×`height` YUV 4:2:0 frame (scaled by swscale when the sizes differ).
    public static func yuv420p(_ image: RGBImage, width: Int, height: Int) throws(MediaError) -> RawVideoFrame {
        try image.pixels.withUnsafeBufferPointer { pixels throws(MediaError) -> RawVideoFrame in
            var frame = av_frame_alloc()
            defer { av_frame_free(&frame) }
            guard let f = frame else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
            f.pointee.width = Int32(image.width)
            f.pointee.height = Int32(image.height)
            f.pointee.format = AV_PIX_FMT_RGB24.rawValue
            f.pointee.data.0 = UnsafeMutablePointer(mutating: pixels.baseAddress)
            f.pointee.linesize.0 = Int32(image.width * 3)
            defer { f.pointee.data.0 = nil }
            return try yuv420p(f, width: width, height: height)
        }
    }

    /// A decoded frame as a tightly packed `width`×`height` YUV 4:2:0 frame: the planes copied
    /// as they are when the frame is already that, else converted (and scaled) by swscale.
    static func yuv420p(_ frame: UnsafeMutablePointer<AVFrame>, width: Int, height: Int) throws(MediaError) -> RawVideoFrame {
        let srcW = frame.pointee.width, srcH = frame.pointee.height
        let size = RawVideoFrame.PixelFormat.yuv420p.byteCount(width: width, height: height)
        var bytes = [UInt8](repeating: 0, count: size)
        let halfW = (width + 1) / 2, halfH = (height + 1) / 2
        let same = AVPixelFormat(frame.pointee.format) == AV_PIX_FMT_YUV420P && Int(srcW) == width && Int(srcH) == height
        let rows: Int32 = bytes.withUnsafeMutableBufferPointer { dst -> Int32 in
            let base = dst.baseAddress!
            var dstPlanes: [UnsafeMutablePointer<UInt8>?] = [base, base + width * height, base + width * height + halfW * halfH, nil]
            var dstStrides: [Int32] = [Int32(width), Int32(halfW), Int32(halfW), 0]
            return withUnsafePointer(to: &frame.pointee.data) { dataTuple in
                withUnsafePointer(to: &frame.pointee.linesize) { strideTuple in
                    dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                        strideTuple.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            if same {
                                for (plane, (w, h)) in [(width, height), (halfW, halfH), (halfW, halfH)].enumerated() {
                                    for row in 0..<h {
                                        dstPlanes[plane]!.advanced(by: row * w).update(from: planes[plane]! + row * Int(strides[plane]), count: w)
                                    }
                                }
                                return srcH
                            }
                            guard let sws = sws_getContext(srcW, srcH, AVPixelFormat(frame.pointee.format), Int32(width), Int32(height),
                                                           AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil) else { return -1 }
                            defer { sws_freeContext(sws) }
                            return sws_scale(sws, planes, strides, 0, srcH, &dstPlanes, &dstStrides)
                        }
                    }
                }
            }
        }
        guard rows > 0 else { throw MediaError(.unsupportedFormat, "could not be converted to YUV 4:2:0 (pixel format \(frame.pointee.format))", operation: "sws_scale") }
        return try RawVideoFrame(format: .yuv420p, width: width, height: height, bytes: bytes)
    }
}
