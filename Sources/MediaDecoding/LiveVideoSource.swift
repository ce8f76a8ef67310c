import CFFmpeg
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Reads a live video frame by frame through libavformat and libavcodec: a V4L2 camera
/// (`/dev/videoN`), a pipe (`-` for standard input, or a FIFO), or a file played at its own rate
/// (paced by its timestamps, like `ffmpeg -re`).
///
/// Unlike ``VideoDecoder`` (which samples a file, seeking through its index), every frame is
/// decoded, in order, and handed over at analysis size as soon as it is due. Only local inputs
/// are opened: libavformat's protocols are limited to `file` and `pipe`, so a playlist or a
/// concat list cannot make it reach the network.
///
/// One thread calls ``run(_:)``; ``cancel()`` (atomic, and interrupting a blocked read) is the
/// only method another thread may call.
public final class LiveVideoSource: @unchecked Sendable {
    /// What the input is.
    public enum Kind: String, Sendable, Codable {
        /// A V4L2 capture device, read through libavdevice's `v4l2` demuxer.
        case camera
        /// A pipe or FIFO: frames arrive at the writer's rate.
        case pipe
        /// A regular file, played at its own rate unless pacing is off.
        case file
    }

    /// One decoded frame: upright, at analysis size when asked (``image()``).
    public struct Frame: Sendable {
        /// The frame as a picture, converted at the first ask (``FramePicture``).
        public var picture: FramePicture
        /// Media time, seconds from the stream's first frame.
        public var time: Double
        /// The frame's own size.
        public var width: Int
        public var height: Int
        /// 0 for the first frame decoded, then 1, 2, ...
        public var index: Int
        /// The frame as decoded, at its full size in YUV 4:2:0 (display rotation not applied),
        /// when the source keeps originals (``LiveVideoSource/keepsOriginals``): what a
        /// ``LiveVideoSink`` writes.
        public var original: RawVideoFrame?

        /// A frame whose picture is already converted.
        public init(image: RGBImage, time: Double, width: Int, height: Int, index: Int, original: RawVideoFrame?) {
            self.init(picture: FramePicture(image), time: time, width: width, height: height, index: index, original: original)
        }

        public init(picture: FramePicture, time: Double, width: Int, height: Int, index: Int, original: RawVideoFrame?) {
            self.picture = picture
            self.time = time
            self.width = width
            self.height = height
            self.index = index
            self.original = original
        }

        /// Upright RGB at analysis size (converted now if nobody asked before).
        public func image() throws(MediaError) -> RGBImage { try picture.image() }
    }

    /// What the input turned out to be.
    public struct Info: Sendable, Codable, Equatable {
        public var kind: Kind
        public var width: Int
        public var height: Int
        public var codec: String
        public var container: String
        public var frameRate: Double?
        /// Frames are handed over at their media times (a file played at its own rate).
        public var paced: Bool
    }

    /// How the reading ended.
    public struct Summary: Sendable, Codable, Equatable {
        public var frames: Int
        /// The last frame's media time, seconds.
        public var mediaTime: Double
        /// Packets the decoder refused (a live stream's glitches are skipped, not fatal).
        public var damagedPackets: Int
        /// Stopped by ``cancel()`` or by the frame handler, not by the end of the input.
        public var stopped: Bool
        /// Why the input ended, when not at a normal end of data.
        public var endReason: String?
    }

    public let info: Info
    public let input: String
    let limits: MediaLimits
    let minimumLongSide: Int
    let minimumShortSide: Int
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codecContext: UnsafeMutablePointer<AVCodecContext>?
    let streamIndex: Int32
    let timeBase: AVRational
    let rotation: Int
    let stopFlag = StopFlag()
    /// Each ``Frame`` also carries the decoded frame at full size (``Frame/original``).
    public let keepsOriginals: Bool

    /// Opens `input`: `-` (standard input), `pipe:N` (descriptor N), `/dev/videoN` (a camera),
    /// or the path of a FIFO or a file. `paced` (default: files only) hands frames over at their
    /// media times; off, a file is decoded as fast as it can be. `keepOriginals` hands each
    /// frame over at full size too (``Frame/original``), for a ``LiveVideoSink``.
    public init(input: String, paced: Bool? = nil, limits: MediaLimits = .default,
                minimumLongSide: Int = 640, minimumShortSide: Int = 512, keepOriginals: Bool = false) throws(MediaError) {
        FFmpeg.configureLogging()
        keepsOriginals = keepOriginals
        self.input = input
        self.limits = limits
        self.minimumLongSide = minimumLongSide
        self.minimumShortSide = minimumShortSide
        let (kind, url) = try Self.resolve(input)
        var demuxer: UnsafePointer<AVInputFormat>? = nil
        if kind == .camera {
            guard case .available = CameraSupport.status else {
                throw MediaError(.unsupportedFormat, "is a camera, but \(CameraSupport.status.words)", path: input)
            }
            demuxer = av_find_input_format("v4l2")
        }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "protocol_whitelist", "file,pipe", 0)
        if kind != .file {
            // A live source starts at once: a short probe (the packets it reads are kept and
            // decoded; AVFMT_FLAG_NOBUFFER would lose them, and with them the stream's first second).
            av_dict_set(&options, "probesize", "500000", 0)
            av_dict_set(&options, "analyzeduration", "500000", 0)
        }
        var fmt = avformat_alloc_context()
        guard fmt != nil else { throw MediaError(.io, "out of memory", path: input, operation: "avformat_alloc_context") }
        fmt!.pointee.interrupt_callback = AVIOInterruptCB(callback: Self.interruptCallback, opaque: nil)
        fmt!.pointee.interrupt_callback.opaque = Unmanaged.passUnretained(stopFlag).toOpaque()
        let opened = avformat_open_input(&fmt, url, demuxer, &options)
        guard opened >= 0, let context = fmt else {
            throw MediaError(.corrupt, kind == .camera ? "cannot be opened as a V4L2 camera" : "is not a readable video stream",
                             path: input, cause: FFmpeg.message(opened), operation: "avformat_open_input")
        }
        format = context
        let found = avformat_find_stream_info(context, nil)
        let index = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard found >= 0, index >= 0 else {
            avformat_close_input(&format)
            throw MediaError(index < 0 && found >= 0 ? .noVideoStream : .corrupt,
                             index < 0 && found >= 0 ? "has no video stream" : "is a damaged video stream: its streams cannot be read",
                             path: input, cause: found < 0 ? FFmpeg.message(found) : nil, operation: "avformat_find_stream_info")
        }
        streamIndex = index
        // Only the video stream is read: the demuxer drops the others' packets.
        for i in 0..<Int(context.pointee.nb_streams) where i != Int(index) {
            context.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
        let stream = context.pointee.streams[Int(index)]!
        let parameters = stream.pointee.codecpar!
        timeBase = stream.pointee.time_base
        let width = Int(parameters.pointee.width), height = Int(parameters.pointee.height)
        do {
            try limits.check(width: width, height: height)
        } catch {
            avformat_close_input(&format)
            throw error.at(input)
        }
        var degrees = 0
        if let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nil) {
            let angle = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
            if angle.isFinite { degrees = ((Int((-angle).rounded()) % 360) + 360) % 360 }
        }
        rotation = degrees
        let rate = stream.pointee.avg_frame_rate.den > 0 ? av_q2d(stream.pointee.avg_frame_rate)
            : (stream.pointee.r_frame_rate.den > 0 ? av_q2d(stream.pointee.r_frame_rate) : 0)
        info = Info(kind: kind, width: width, height: height,
                    codec: String(cString: avcodec_get_name(parameters.pointee.codec_id)),
                    container: String(cString: context.pointee.iformat.pointee.name),
                    frameRate: rate > 0 && rate < 1000 ? rate : nil, paced: paced ?? (kind == .file))
        do {
            // No frame threading either (it would delay every frame by a frame per thread), and
            // low delay: the other core judges frames.
            codecContext = try FFmpeg.openVideoDecoder(parameters, timeBase: timeBase, maxPixels: limits.maxPixels, type: .other, path: input) {
                $0.pointee.flags |= AV_CODEC_FLAG_LOW_DELAY
            }
        } catch {
            avformat_close_input(&format)
            throw error
        }
    }

    deinit {
        avcodec_free_context(&codecContext)
        avformat_close_input(&format)
    }

    /// Asks a running ``run(_:)`` to stop as soon as possible, also from inside a blocked read
    /// (any thread).
    public func cancel() { stopFlag.value.store(true, ordering: .relaxed) }

    /// libavformat asks this during blocking reads whether to give up.
    static let interruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
        guard let opaque else { return 0 }
        return Unmanaged<StopFlag>.fromOpaque(opaque).takeUnretainedValue().value.load(ordering: .relaxed) ? 1 : 0
    }

    /// Decodes every frame and hands each to `body` on the calling thread (paced, when
    /// ``Info/paced``), until the input ends, ``cancel()`` is called or `body` returns false.
    public func run(_ body: (Frame) throws -> Bool) throws -> Summary {
        guard let fmt = format, let ctx = codecContext else { throw MediaError(.io, "the source is closed", path: input) }
        var summary = Summary(frames: 0, mediaTime: 0, damagedPackets: 0, stopped: false, endReason: nil)
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame) }
        guard let pkt = packet, let frm = frame else { throw MediaError(.io, "out of memory", path: input, operation: "av_frame_alloc") }
        var firstTimestamp: Int64? = nil
        var lastTime = 0.0
        var wallStart: UInt64? = nil
        let frameDuration = 1 / (info.frameRate ?? 30)
        var draining = false

        /// Hands the decoded frame over; false to stop.
        func deliver() throws -> Bool {
            let ts = frm.pointee.best_effort_timestamp
            var time: Double
            if ts == qff_nopts_value() {
                time = summary.frames == 0 ? 0 : lastTime + frameDuration
            } else {
                if firstTimestamp == nil { firstTimestamp = ts }
                time = Double(ts - firstTimestamp!) * av_q2d(timeBase)
            }
            // Timestamps never go back (a wrapped or damaged one follows the last frame).
            if summary.frames > 0 && time < lastTime { time = lastTime + frameDuration }
            lastTime = time
            if info.paced {
                let now = DispatchTime.now().uptimeNanoseconds
                if wallStart == nil { wallStart = now - UInt64(time * 1e9) }
                let due = wallStart! + UInt64(time * 1e9)
                while !stopFlag.value.load(ordering: .relaxed) {
                    let current = DispatchTime.now().uptimeNanoseconds
                    guard current < due else { break }
                    usleep(useconds_t(min(due - current, 50_000_000) / 1000))
                }
            }
            if stopFlag.value.load(ordering: .relaxed) { return false }
            let w = Int(frm.pointee.width), h = Int(frm.pointee.height)
            // Checked now (a frame over the limits is skipped); converted when a judge asks.
            try limits.check(width: w, height: h)
            let picture = try FramePicture(referencing: frm, conversion: conversion)
            let swaps = rotation == 90 || rotation == 270
            let original = keepsOriginals ? try LiveVideoSink.yuv420p(frm, width: w, height: h) : nil
            let handed = Frame(picture: picture, time: time, width: swaps ? h : w, height: swaps ? w : h, index: summary.frames, original: original)
            summary.frames += 1
            summary.mediaTime = time
            return try body(handed)
        }

        outer: while true {
            if stopFlag.value.load(ordering: .relaxed) { summary.stopped = true; break }
            if !draining {
                let read = av_read_frame(fmt, pkt)
                if read < 0 {
                    if stopFlag.value.load(ordering: .relaxed) { summary.stopped = true; break }
                    if read != qff_averror_eof() { summary.endReason = FFmpeg.message(read) }
                    _ = avcodec_send_packet(ctx, nil)
                    draining = true
                } else {
                    defer { av_packet_unref(pkt) }
                    guard pkt.pointee.stream_index == streamIndex else { continue }
                    let sent = avcodec_send_packet(ctx, pkt)
                    if sent < 0 && sent != qff_averror(EAGAIN) { summary.damagedPackets += 1 }
                }
            }
            while true {
                let received = avcodec_receive_frame(ctx, frm)
                if received == qff_averror(EAGAIN) { break }
                if received < 0 { if draining { break outer } else { break } }
                defer { av_frame_unref(frm) }
                do {
                    if !(try deliver()) { summary.stopped = true; break outer }
                } catch let error as MediaError where error.code == .dimensionsTooLarge {
                    // A frame over the limits mid-stream (a changed resolution) is skipped.
                    summary.damagedPackets += 1
                }
            }
        }
        if summary.frames == 0 && !summary.stopped {
            throw MediaError(.truncated, "ended before its first video frame", path: input, cause: summary.endReason)
        }
        return summary
    }

    /// How this source's frames become pictures.
    var conversion: FFmpeg.Upright {
        FFmpeg.Upright(rotation: rotation, minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide)
    }

    /// The kind of `input` and the URL libavformat opens for it (`file:` prefixed, so that a
    /// name with a colon is never taken for a protocol).
    static func resolve(_ input: String) throws(MediaError) -> (Kind, String) {
        if input == "-" { return (.pipe, "pipe:0") }
        if input.hasPrefix("pipe:"), Int32(input.dropFirst(5)) != nil { return (.pipe, input) }
        var info = stat()
        guard stat(input, &info) == 0 else {
            let code = errno
            throw MediaError(code == ENOENT ? .notFound : (code == EACCES ? .permissionDenied : .io),
                             code == ENOENT ? "does not exist" : "cannot be opened", path: input, cause: String(cString: strerror(code)), operation: "stat")
        }
        switch info.st_mode & S_IFMT {
        case S_IFCHR: return (.camera, input)
        case S_IFIFO: return (.pipe, "file:" + input)
        case S_IFREG: return (.file, "file:" + input)
        default: throw MediaError(.notRegularFile, "is neither a camera, a pipe nor a file", path: input)
        }
    }
}

/// The stop request a ``LiveVideoSource``'s blocking reads poll (a class, so libavformat's
/// interrupt callback can hold it before the source is fully made).
final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}
