import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// Random access for coarse-to-fine sampling: one indexed keyframe decoded on its own (cheap: no
/// reference frames), and the stretch after a keyframe filled in with samples at most a gap
/// apart. Each call seeks first, so calls may come in any order; two decoders opened on the same
/// file can work on different stretches at once (each has its own demuxer and reads with `pread`).
extension VideoDecoder {
    /// The indexed keyframes' media times, ascending (empty when the container has no index:
    /// such a file is sampled front to back with ``sample(maxGap:body:)``).
    public var keyframeTimes: [Double] { keyframes.map(\.time) }

    /// How a filled stretch ended.
    public struct Stretch: Sendable, Equatable {
        /// Samples handed to the body.
        public var samples: Int
        /// The latest media time decoded.
        public var reachedTime: Double
        /// The stretch was decoded to its end (or to the end of the data, for the last one).
        public var complete: Bool
        /// The body asked to stop.
        public var stopped: Bool
        /// Why decoding stopped before the end, in the decoder's words (damaged or missing data).
        public var damage: String?
        /// The largest distance between consecutive samples in the stretch, its start included.
        public var largestGap: Double
    }

    /// Decodes only the indexed keyframe `index` (non-key packets are discarded) and returns it
    /// as a sample at its presentation time; nil when its data cannot be decoded.
    public func decodeKeyframe(_ index: Int) throws -> Sample? {
        guard let fmt = format, let ctx = codecContext else { throw MediaError(.io, "the video is closed", path: file.path) }
        guard keyframes.indices.contains(index) else { return nil }
        if stopRequested.load(ordering: .relaxed) { throw MediaError(.cancelled, "analysis was cancelled", path: file.path) }
        let keyframe = keyframes[index]
        guard seek(fmt, ctx, to: keyframe.pts) else { return nil }
        var packet = av_packet_alloc(), frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame); avcodec_flush_buffers(ctx) }
        guard let pkt = packet, let frm = frame else { throw MediaError(.io, "out of memory", path: file.path) }
        ctx.pointee.skip_frame = AVDISCARD_NONKEY
        ctx.pointee.skip_loop_filter = AVDISCARD_DEFAULT
        // The keyframe is the first packet of the stream after the seek; a few packets of other
        // streams may come first.
        var sent = false
        for _ in 0..<256 {
            guard av_read_frame(fmt, pkt) >= 0 else { break }
            defer { av_packet_unref(pkt) }
            guard pkt.pointee.stream_index == streamIndex else { continue }
            guard pkt.pointee.flags & AV_PKT_FLAG_KEY != 0 else { continue }
            sent = avcodec_send_packet(ctx, pkt) >= 0
            break
        }
        guard sent else { return nil }
        // Draining hands out the frame a reordering decoder would otherwise hold back.
        _ = avcodec_send_packet(ctx, nil)
        guard avcodec_receive_frame(ctx, frm) >= 0 else { return nil }
        defer { av_frame_unref(frm) }
        let ts = frm.pointee.best_effort_timestamp
        let time = ts == qff_nopts_value() ? keyframe.time : Double(ts) * av_q2d(timeBase) - startTime
        return try makeSample(frm, time: time)
    }

    /// Decodes forward from the indexed keyframe `index` and hands `body` samples at most
    /// `maxGap` apart, until `end` (the next analysed point) is within `maxGap` of the last
    /// sample, decoding reaches `end`, or the data ends. The keyframe is a sample itself only
    /// when `sampleKeyframe` (otherwise it was analysed already, at `start`). Intra frames met on
    /// the way (scene cuts the index does not list) are sampled too. Damaged data ends the stretch
    /// early, without throwing: ``Stretch/damage`` says why.
    ///
    /// Each sample is the latest decoded frame still within the gap of the one before: the frame
    /// last decoded is held (a reference, not converted) until the next one would leave more than
    /// the gap, and only then converted and handed over. So samples are as far apart as the gap
    /// allows (every 6th frame at 25 fps for a 0.25-s gap), not aimed short of it by a safety
    /// margin for frames that might not come (every 4th frame before: half as many samples again
    /// for a short clip's dense plan).
    public func fill(fromKeyframe index: Int, start: Double, end: Double, maxGap: Double, sampleKeyframe: Bool,
                     body: (Sample) throws -> Bool) throws -> Stretch {
        guard let fmt = format, let ctx = codecContext else { throw MediaError(.io, "the video is closed", path: file.path) }
        let gap = max(0.1, maxGap)
        let frameDuration = 1 / (info.frameRate ?? 25)
        var stretch = Stretch(samples: 0, reachedTime: start, complete: false, stopped: false, damage: nil, largestGap: 0)
        guard keyframes.indices.contains(index) else { return stretch }
        if stopRequested.load(ordering: .relaxed) { throw MediaError(.cancelled, "analysis was cancelled", path: file.path) }
        guard seek(fmt, ctx, to: keyframes[index].pts) else {
            stretch.damage = "cannot seek to the keyframe at \(Self.clock(keyframes[index].time))"
            return stretch
        }
        var packet = av_packet_alloc(), frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame); avcodec_flush_buffers(ctx) }
        guard let pkt = packet, let frm = frame else { throw MediaError(.io, "out of memory", path: file.path) }
        var reorder: Double { Double(max(ctx.pointee.has_b_frames, 0) + 1) * frameDuration }
        var lastSample: Double? = sampleKeyframe ? nil : start
        // The latest decoded frame not taken yet, and its time.
        var held = av_frame_alloc()
        defer { av_frame_free(&held) }
        guard let hold = held else { throw MediaError(.io, "out of memory", path: file.path) }
        var heldTime: Double? = nil
        var position = keyframes[index].time - frameDuration
        var first = true
        ctx.pointee.skip_frame = AVDISCARD_NONREF

        /// Whether the stretch is closed: the next analysed point is near enough.
        func closed() -> Bool { lastSample.map { end - $0 <= gap } ?? false }

        /// Whether a frame at `time` would leave more than the gap after the last sample.
        func beyondGap(_ time: Double) -> Bool { lastSample.map { time > $0 + gap + 1e-6 } ?? true }

        /// Converts `frame` and hands it over; false when the body asks to stop.
        func take(_ frame: UnsafeMutablePointer<AVFrame>, at time: Double) throws -> Bool {
            let sample = try makeSample(frame, time: time)
            stretch.largestGap = max(stretch.largestGap, time - (lastSample ?? time))
            lastSample = time
            stretch.samples += 1
            heldTime = nil
            av_frame_unref(hold)
            return try body(sample)
        }

        /// Takes the held frame when it is later than the last sample; false when the body asks
        /// to stop.
        func takeHeld() throws -> Bool {
            guard let time = heldTime, time > (lastSample ?? -.infinity) + 1e-6 else { return true }
            return try take(hold, at: time)
        }

        /// After a sample was handed over (`handedOver`: the body's answer): whether the stretch
        /// goes on, or stopped (the body asked) or complete (the next analysed point is near).
        func goesOn(_ handedOver: Bool) -> Bool {
            guard handedOver else { stretch.stopped = true; return false }
            if closed() { stretch.complete = true; return false }
            return true
        }

        /// Takes, holds or passes the decoded frame; false when the stretch is done.
        func consider(_ time: Double) throws -> Bool {
            position = max(position, time)
            stretch.reachedTime = max(stretch.reachedTime, time)
            let isFirst = first
            first = false
            if time >= end - frameDuration / 2 {
                // The next analysed point: the frame held closes the gap before it if need be.
                if beyondGap(end) { guard try takeHeld() else { stretch.stopped = true; return false } }
                stretch.complete = true
                return false
            }
            // This frame would leave too wide a gap: the latest one within it goes first.
            if beyondGap(time) { guard goesOn(try takeHeld()) else { return false } }
            let sceneCut = !isFirst && frm.pointee.pict_type == AV_PICTURE_TYPE_I && time - (lastSample ?? -.infinity) >= 0.5
            // The keyframe asked for, a scene cut, or a frame after a gap no decoded frame could
            // close: taken as it is.
            if (isFirst && sampleKeyframe) || sceneCut || beyondGap(time) { return goesOn(try take(frm, at: time)) }
            av_frame_unref(hold)
            // No reference to hold: the frame is taken now (closer than needed, never wider).
            guard av_frame_ref(hold, frm) >= 0 else { return goesOn(try take(frm, at: time)) }
            heldTime = time
            return true
        }

        if closed() { stretch.complete = true; return stretch }
        var draining = false
        decoding: while true {
            if stopRequested.load(ordering: .relaxed) { throw MediaError(.cancelled, "analysis was cancelled", path: file.path) }
            if !draining {
                let fed = feedNextPacket(fmt, ctx, pkt, position: position) { time in
                    // The loop filter runs only on the frames that may be taken: within a few
                    // frames of the gap's end (the frame held then is the latest within it).
                    let window = (lastSample ?? -.infinity) + gap - reorder - 3 * frameDuration
                    ctx.pointee.skip_loop_filter = time < window && !(first && sampleKeyframe) ? AVDISCARD_ALL : AVDISCARD_DEFAULT
                }
                switch fed {
                case .otherStream: continue
                case .sent: break
                case .ended(let damage):
                    if let damage { stretch.damage = damage }
                    draining = true
                }
            }
            while true {
                let received = avcodec_receive_frame(ctx, frm)
                if received == qff_averror(EAGAIN) { break }
                if received < 0 {
                    if draining { break decoding }
                    break
                }
                defer { av_frame_unref(frm) }
                if !(try consider(mediaTime(of: frm, after: position, frameDuration: frameDuration))) { break decoding }
            }
        }
        if draining && !stretch.complete && !stretch.stopped {
            // The data ended: the last stretch is complete when it reached the end of the
            // video; any other has lost data (or the file is truncated).
            if stretch.damage == nil {
                let declaredEnd = info.duration ?? stretch.reachedTime
                if stretch.reachedTime + gap + frameDuration >= min(end, declaredEnd) {
                    stretch.complete = true
                } else {
                    stretch.damage = "the data ends at \(Self.clock(stretch.reachedTime))"
                }
            }
        }
        if stretch.complete, let lastSample { stretch.largestGap = max(stretch.largestGap, max(0, min(end, stretch.reachedTime) - lastSample)) }
        return stretch
    }

    /// Seeks to the index timestamp `pts` and resets the decoder.
    func seek(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ ctx: UnsafeMutablePointer<AVCodecContext>, to pts: Int64) -> Bool {
        // The index's own timestamp: a float round trip could land on the keyframe before.
        guard av_seek_frame(fmt, streamIndex, pts, 0) >= 0 || av_seek_frame(fmt, streamIndex, pts, AVSEEK_FLAG_BACKWARD) >= 0 else { return false }
        avcodec_flush_buffers(ctx)
        return true
    }

    func makeSample(_ frame: UnsafeMutablePointer<AVFrame>, time: Double) throws -> Sample {
        let image = try convert(frame)
        let swaps = info.rotation == 90 || info.rotation == 270
        return Sample(image: image, time: time, displayWidth: swaps ? info.height : info.width, displayHeight: swaps ? info.width : info.height)
    }

    /// `m:ss.s` for messages.
    public static func clock(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded())
        let secondsPart = tenths % 600
        return "\(tenths / 600):\(secondsPart < 100 ? "0" : "")\(secondsPart / 10).\(secondsPart % 10)"
    }
}
