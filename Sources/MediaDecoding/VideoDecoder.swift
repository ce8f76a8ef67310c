import CFFmpeg
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Samples a video's frames for analysis through libavformat and libavcodec, doing only the
/// decoding that the samples need.
///
/// The file is read through the descriptor ``MediaFile`` already opened (a custom AVIO context),
/// so it is never re-opened by path. Samples cover the whole duration with at most `maxGap`
/// seconds between them. Where the container's index lists keyframes, the decoder seeks to the
/// latest keyframe before each sample time; between a keyframe and a sample it decodes forward,
/// skipping non-reference frames and the loop filter until half a second before the sample.
/// Frames are converted once, with swscale, straight to the analysis size.
///
/// One thread samples; ``cancel()`` (atomic) is the only method another thread may call.
public final class VideoDecoder: @unchecked Sendable {
    /// What the container says about the video stream.
    public struct Info: Sendable, Codable, Equatable {
        public var width: Int
        public var height: Int
        /// Seconds, when known.
        public var duration: Double?
        public var codec: String
        public var container: String
        /// Clockwise rotation to apply for display (0, 90, 180, 270).
        public var rotation: Int
        public var frameRate: Double?
        /// Mean keyframe interval from the index, when the container has one.
        public var keyframeInterval: Double?
    }

    /// One sampled frame, upright, at analysis size.
    public struct Sample {
        public var image: RGBImage
        /// Media time in seconds.
        public var time: Double
        /// The displayed frame size (after rotation).
        public var displayWidth: Int
        public var displayHeight: Int
    }

    /// How far sampling got.
    public struct Summary: Sendable, Equatable {
        public var samples: Int
        /// The latest media time decoded.
        public var reachedTime: Double
        public var duration: Double?
        /// The largest distance between two consecutive samples, seconds.
        public var largestGap: Double
        /// The decoder stopped at damaged or missing data before the end.
        public var endedEarly: Bool
        /// Why it ended early, in the decoder's words.
        public var endReason: String?
    }

    public let info: Info
    let file: MediaFile
    let reader: DescriptorReader
    let limits: MediaLimits
    let minimumLongSide: Int
    let minimumShortSide: Int
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codecContext: UnsafeMutablePointer<AVCodecContext>?
    let streamIndex: Int32
    let timeBase: AVRational
    let startTime: Double
    /// Keyframes from the index, ascending by time (empty without an index): media time in
    /// seconds and the exact timestamp to seek to.
    let keyframes: [(time: Double, pts: Int64)]
    let stopRequested = Atomic<Bool>(false)

    /// Opens the video in `file`, checking its dimensions against `limits` before decoding.
    public init(file: MediaFile, limits: MediaLimits = .default, minimumLongSide: Int = 640, minimumShortSide: Int = 512) throws(MediaError) {
        FFmpeg.configureLogging()
        self.file = file
        self.limits = limits
        self.minimumLongSide = minimumLongSide
        self.minimumShortSide = minimumShortSide
        reader = DescriptorReader(descriptor: file.descriptor)
        do {
            // An animated PNG is read as one: ffmpeg's probe looks at the first 2 KiB, and an
            // APNG whose acTL chunk comes later (after an ICC profile) would be read as one
            // still PNG. (The type comes from the file's bytes: acTL was found before IDAT.)
            (format, streamIndex) = try Self.openContainer(reader: reader, demuxer: file.type == .png ? "apng" : nil)
        } catch {
            throw error.at(file.path)
        }
        let fmt = format!
        let stream = fmt.pointee.streams[Int(streamIndex)]!
        let parameters = stream.pointee.codecpar!
        timeBase = stream.pointee.time_base
        let width = Int(parameters.pointee.width), height = Int(parameters.pointee.height)
        do {
            try limits.check(width: width, height: height)
        } catch {
            Self.close(&format)
            throw MediaError(.dimensionsTooLarge, "is a \(width)x\(height) video, over the limit of \(limits.maxDimension) per side and \(limits.maxPixels / 1_000_000) megapixels; refused without decoding", path: file.path)
        }
        let startPTS = stream.pointee.start_time
        startTime = startPTS == qff_nopts_value() ? 0 : Double(startPTS) * av_q2d(timeBase)
        var duration: Double? = nil
        if stream.pointee.duration > 0 && stream.pointee.duration != qff_nopts_value() {
            duration = Double(stream.pointee.duration) * av_q2d(timeBase)
        } else if fmt.pointee.duration > 0 && fmt.pointee.duration != qff_nopts_value() {
            duration = Double(fmt.pointee.duration) / Double(AV_TIME_BASE)
        }
        var rotation = 0
        if let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nil) {
            let degrees = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
            if degrees.isFinite {
                // FFmpeg reports the counter-clockwise angle; display needs the clockwise turn.
                rotation = ((Int((-degrees).rounded()) % 360) + 360) % 360
            }
        }
        var frames: [(time: Double, pts: Int64)] = []
        let entries = avformat_index_get_entries_count(stream)
        if entries > 1 {
            for i in 0..<entries {
                guard let entry = avformat_index_get_entry(stream, i), entry.pointee.flags & AVINDEX_KEYFRAME != 0 else { continue }
                frames.append((Double(entry.pointee.timestamp) * av_q2d(timeBase) - startTime, entry.pointee.timestamp))
            }
            frames.sort { $0.time < $1.time }
        }
        keyframes = frames.count > 1 ? frames : []
        var keyframeInterval: Double? = nil
        if keyframes.count > 1, let last = keyframes.last { keyframeInterval = (last.time - keyframes[0].time) / Double(keyframes.count - 1) }
        let rate = stream.pointee.avg_frame_rate.den > 0 ? av_q2d(stream.pointee.avg_frame_rate) : nil
        info = Info(width: width, height: height, duration: duration,
                    codec: String(cString: avcodec_get_name(parameters.pointee.codec_id)),
                    container: String(cString: fmt.pointee.iformat.pointee.name), rotation: rotation,
                    frameRate: rate.flatMap { $0 > 0 && $0 < 1000 ? $0 : nil }, keyframeInterval: keyframeInterval)

        do {
            // Fast decoding flags; the single thread leaves the other core to inference on the
            // previous sample (measured: docs/analysis.md, "Videos").
            codecContext = try FFmpeg.openVideoDecoder(parameters, timeBase: timeBase, maxPixels: limits.maxPixels, type: file.type, path: file.path) {
                $0.pointee.flags2 |= AV_CODEC_FLAG2_FAST
            }
        } catch {
            Self.close(&format)
            throw error
        }
    }

    deinit {
        avcodec_free_context(&codecContext)
        Self.close(&format)
    }

    /// Asks a running ``sample(maxGap:body:)`` to stop as soon as possible (any thread).
    public func cancel() { stopRequested.store(true, ordering: .relaxed) }

    /// Decodes samples at most `maxGap` seconds apart and hands each to `body`, which returns
    /// `false` to stop (early exit). Damaged data ends sampling early; the summary says so.
    public func sample(maxGap: Double, body: (Sample) throws -> Bool) throws -> Summary {
        guard let fmt = format, let ctx = codecContext else { throw MediaError(.io, "the video is closed", path: file.path) }
        let gap = max(0.1, maxGap)
        let frameDuration = 1 / (info.frameRate ?? 25)
        var summary = Summary(samples: 0, reachedTime: 0, duration: info.duration, largestGap: 0, endedEarly: false, endReason: nil)
        var lastSample: Double? = nil
        var nextTarget = 0.0
        var position = -Double.infinity // media time the decoder has reached
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame) }
        guard let pkt = packet, let frm = frame else { throw MediaError(.io, "out of memory", path: file.path) }
        var draining = false
        var stop = false
        /// How much later than its decode position a frame may be shown (B-frame reordering),
        /// plus one frame: the margin kept before each sample time.
        var reorder: Double { Double(max(ctx.pointee.has_b_frames, 0) + 1) * frameDuration }

        /// How much later a keyframe is shown than its index time, learned at the first seek
        /// (MOV and MP4 index decode times); the reorder delay until then.
        var keyframeShift: Double? = nil
        var seekedTo: Double? = nil
        var previousIntraFrame: Double? = nil

        func frameTime() -> Double { mediaTime(of: frm, after: position, frameDuration: frameDuration) }

        /// Takes the decoded frame if it is the next sample; returns whether sampling continues.
        func consider(_ time: Double) throws -> Bool {
            position = max(position, time)
            summary.reachedTime = max(summary.reachedTime, time)
            if let keyframe = seekedTo {
                keyframeShift = max(0, time - keyframe)
                seekedTo = nil
            }
            // An intra frame off the index's regular keyframe grid is a scene cut: something new
            // is on screen, so it is sampled too (it was decoded anyway).
            var sceneCut = false
            if frm.pointee.pict_type == AV_PICTURE_TYPE_I {
                if let interval = info.keyframeInterval, let previous = previousIntraFrame, time - previous < 0.75 * interval,
                   time - (lastSample ?? -.infinity) >= 0.5 {
                    sceneCut = true
                }
                previousIntraFrame = time
            }
            guard time >= nextTarget - frameDuration / 2 || sceneCut else { return true }
            let image = try convert(frm)
            if let lastSample { summary.largestGap = max(summary.largestGap, time - lastSample) }
            lastSample = time
            summary.samples += 1
            // Aim early by the reorder margin: skipped non-reference frames and rounding can
            // then delay the actual sample without any gap exceeding maxGap.
            nextTarget = time + max(gap - reorder - frameDuration, frameDuration)
            let swaps = info.rotation == 90 || info.rotation == 270
            let sample = Sample(image: image, time: time, displayWidth: swaps ? info.height : info.width, displayHeight: swaps ? info.width : info.height)
            return try body(sample)
        }

        outer: while !stop {
            if stopRequested.load(ordering: .relaxed) { throw MediaError(.cancelled, "analysis was cancelled", path: file.path) }
            // Jump ahead when the index has a keyframe past the decoder's position that still
            // comes at or before the next sample time.
            // Index times can be decode times: with B-frames a keyframe is shown up to the reorder
            // delay later, so leave that much room before the sample time.
            let deadline = (lastSample ?? -gap) + gap
            if !draining, let keyframe = lastKeyframe(atOrBefore: deadline - (keyframeShift ?? reorder) + 1e-6), keyframe.time > position + frameDuration / 2 {
                // The index's own timestamp: a float round trip could land on the keyframe before.
                if av_seek_frame(fmt, streamIndex, keyframe.pts, 0) >= 0 || av_seek_frame(fmt, streamIndex, keyframe.pts, AVSEEK_FLAG_BACKWARD) >= 0 {
                    avcodec_flush_buffers(ctx)
                    position = keyframe.time - frameDuration
                    seekedTo = keyframe.time
                }
            }
            // Read and decode until the next sample has been taken.
            let samplesBefore = summary.samples
            while summary.samples == samplesBefore {
                if stopRequested.load(ordering: .relaxed) { throw MediaError(.cancelled, "analysis was cancelled", path: file.path) }
                if !draining {
                    let fed = feedNextPacket(fmt, ctx, pkt, position: position) { time in
                        // Non-reference frames are not needed for a video: a sample is taken from
                        // the next reference frame, and targets are set early by the reorder delay
                        // for it. An animation (a gap under a second) decodes every frame: each
                        // is a picture that may be shown on its own. The loop filter runs only
                        // within a few frames of the sample.
                        ctx.pointee.skip_frame = gap >= 1 ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
                        ctx.pointee.skip_loop_filter = time < nextTarget - reorder ? AVDISCARD_ALL : AVDISCARD_DEFAULT
                    }
                    switch fed {
                    case .otherStream: continue
                    case .sent: break
                    case .ended(let damage):
                        if let damage {
                            summary.endedEarly = true
                            summary.endReason = damage
                        }
                        draining = true
                    }
                }
                // Take every frame the decoder has ready.
                while true {
                    let received = avcodec_receive_frame(ctx, frm)
                    if received == qff_averror(EAGAIN) { break }
                    if received == qff_averror_eof() || (received < 0 && draining) { break outer }
                    if received < 0 { break }
                    defer { av_frame_unref(frm) }
                    if !(try consider(frameTime())) { stop = true; break outer }
                    if summary.samples != samplesBefore { break }
                }
                if draining && summary.samples == samplesBefore {
                    // The decoder may still hold frames after the last packet.
                    let received = avcodec_receive_frame(ctx, frm)
                    if received < 0 { break outer }
                    let keepGoing = try consider(frameTime())
                    av_frame_unref(frm)
                    if !keepGoing { stop = true; break outer }
                }
            }
        }
        if !stop, let duration = info.duration {
            // Data that ends well before the declared duration is a truncated file, even when
            // the demuxer calls it a normal end of file.
            if summary.reachedTime + gap + frameDuration < duration && !summary.endedEarly {
                summary.endedEarly = true
                summary.endReason = "the data ends at \(Int(summary.reachedTime)) s of \(Int(duration)) s"
            }
            if !summary.endedEarly, let lastSample {
                summary.largestGap = max(summary.largestGap, max(0, duration - lastSample - frameDuration))
            }
        }
        if summary.samples == 0 && !stop {
            throw MediaError(summary.endedEarly ? .corrupt : .truncated, "has no decodable video frame", path: file.path, cause: summary.endReason)
        }
        return summary
    }

    /// What reading the next packet did.
    enum Feed { case sent, otherStream, ended(damage: String?) }

    /// Reads the next packet; one of the video stream is sent to the decoder once `prepare` has
    /// had its media time (to set what the decoder may skip for it). At the end of the data, or at
    /// a packet the decoder refuses, the decoder is told to drain: `.ended`, with the decoder's
    /// words for damaged or missing data (nil at a normal end of file).
    func feedNextPacket(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ ctx: UnsafeMutablePointer<AVCodecContext>,
                        _ pkt: UnsafeMutablePointer<AVPacket>, position: Double, prepare: (Double) -> Void) -> Feed {
        let read = av_read_frame(fmt, pkt)
        if read < 0 {
            _ = avcodec_send_packet(ctx, nil)
            return .ended(damage: read == qff_averror_eof() ? nil : FFmpeg.message(read))
        }
        defer { av_packet_unref(pkt) }
        guard pkt.pointee.stream_index == streamIndex else { return .otherStream }
        let pts = pkt.pointee.pts != qff_nopts_value() ? pkt.pointee.pts : pkt.pointee.dts
        prepare(pts == qff_nopts_value() ? position : Double(pts) * av_q2d(timeBase) - startTime)
        let sent = avcodec_send_packet(ctx, pkt)
        if sent < 0 && sent != qff_averror(EAGAIN) && sent != qff_averror_invaliddata() {
            _ = avcodec_send_packet(ctx, nil)
            return .ended(damage: FFmpeg.message(sent))
        }
        return .sent
    }

    /// A decoded frame's media time (one frame after `position` when it has no timestamp).
    func mediaTime(of frame: UnsafeMutablePointer<AVFrame>, after position: Double, frameDuration: Double) -> Double {
        let ts = frame.pointee.best_effort_timestamp
        return ts == qff_nopts_value() ? max(position, 0) + frameDuration : Double(ts) * av_q2d(timeBase) - startTime
    }

    /// The last indexed keyframe at or before `time` (binary search).
    func lastKeyframe(atOrBefore time: Double) -> (time: Double, pts: Int64)? {
        var low = 0, high = keyframes.count
        while low < high {
            let mid = (low + high) / 2
            if keyframes[mid].time <= time { low = mid + 1 } else { high = mid }
        }
        return low > 0 ? keyframes[low - 1] : nil
    }

    /// Converts a frame to upright RGB at analysis size in one swscale pass.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> RGBImage {
        try limits.check(width: Int(frame.pointee.width), height: Int(frame.pointee.height))
        return try FFmpeg.Upright(rotation: info.rotation, minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide).image(of: frame)
    }

    // MARK: - Container

    /// Opens the container on `reader` and picks the best video stream.
    static func openContainer(reader: DescriptorReader, demuxer: String? = nil) throws(MediaError) -> (UnsafeMutablePointer<AVFormatContext>, Int32) {
        let bufferSize = 1 << 16
        guard let buffer = av_malloc(bufferSize)?.assumingMemoryBound(to: UInt8.self) else {
            throw MediaError(.io, "out of memory", operation: "av_malloc")
        }
        let opaque = Unmanaged.passUnretained(reader).toOpaque()
        guard let io = avio_alloc_context(buffer, Int32(bufferSize), 0, opaque, DescriptorReader.readCallback, nil, DescriptorReader.seekCallback) else {
            av_free(buffer)
            throw MediaError(.io, "out of memory", operation: "avio_alloc_context")
        }
        var fmt = avformat_alloc_context()
        guard fmt != nil else {
            var ioContext: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&ioContext)
            throw MediaError(.io, "out of memory", operation: "avformat_alloc_context")
        }
        fmt!.pointee.pb = io
        fmt!.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        let opened = avformat_open_input(&fmt, nil, demuxer.flatMap { av_find_input_format($0) }, nil)
        if opened < 0 {
            // avformat_open_input frees the context on failure, but not a custom AVIO context.
            var ioContext: UnsafeMutablePointer<AVIOContext>? = io
            av_freep(&ioContext!.pointee.buffer)
            avio_context_free(&ioContext)
            throw MediaError(opened == qff_averror_eof() ? .truncated : .corrupt,
                             opened == qff_averror_eof() ? "is a truncated video (the data ends inside its header)" : "is not a readable video container",
                             cause: FFmpeg.message(opened), operation: "avformat_open_input")
        }
        let info = avformat_find_stream_info(fmt, nil)
        if info < 0 {
            close(&fmt)
            throw MediaError(.corrupt, "is a damaged video: its streams cannot be read", cause: FFmpeg.message(info), operation: "avformat_find_stream_info")
        }
        var index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        // An AVIF or HEIF image sequence stores its alpha plane as a second, grey track, which
        // ffmpeg 5.1 does not tell apart from the picture and may prefer: a grey track is taken
        // only when no colour one exists.
        func isGrey(_ i: Int) -> Bool {
            let parameters = fmt!.pointee.streams[i]!.pointee.codecpar!.pointee
            return av_pix_fmt_desc_get(AVPixelFormat(rawValue: parameters.format))?.pointee.nb_components == 1
        }
        if index >= 0, isGrey(Int(index)), let colour = (0..<Int(fmt!.pointee.nb_streams)).first(where: { i in
            let stream = fmt!.pointee.streams[i]!.pointee
            return stream.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && stream.disposition & AV_DISPOSITION_ATTACHED_PIC == 0 && !isGrey(i)
        }) {
            index = Int32(colour)
        }
        if index < 0 {
            close(&fmt)
            throw MediaError(.noVideoStream, "has no video stream (audio only, or no picture at all)", operation: "av_find_best_stream")
        }
        return (fmt!, index)
    }

    static func close(_ format: inout UnsafeMutablePointer<AVFormatContext>?) {
        guard let fmt = format else { return }
        var io: UnsafeMutablePointer<AVIOContext>? = fmt.pointee.pb
        avformat_close_input(&format)
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
    }
}

/// Serves libavformat's reads from an open descriptor with `pread`, so the path is never used.
final class DescriptorReader {
    let descriptor: Int32
    var position: Int64 = 0

    init(descriptor: Int32) { self.descriptor = descriptor }

    static let readCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, buffer, size in
        let reader = Unmanaged<DescriptorReader>.fromOpaque(opaque!).takeUnretainedValue()
        while true {
            let n = pread(reader.descriptor, buffer, Int(size), off_t(reader.position))
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return qff_averror(errno) }
            if n == 0 { return qff_averror_eof() }
            reader.position += Int64(n)
            return Int32(n)
        }
    }

    static let seekCallback: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let reader = Unmanaged<DescriptorReader>.fromOpaque(opaque!).takeUnretainedValue()
        var info = stat()
        guard fstat(reader.descriptor, &info) == 0 else { return Int64(qff_averror(errno)) }
        let size = Int64(info.st_size)
        switch whence & ~Int32(AVSEEK_FORCE) {
        case Int32(AVSEEK_SIZE): return size
        case SEEK_SET: reader.position = offset
        case SEEK_CUR: reader.position += offset
        case SEEK_END: reader.position = size + offset
        default: return -1
        }
        return reader.position
    }
}
