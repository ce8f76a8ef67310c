import CFFmpeg

/// One uncompressed video frame as an application holds it (a camera's YUYV, a decoder's I420,
/// a compositor's BGRA): tightly packed planes, one after the other, without row padding.
///
/// ``analysisImage(minimumLongSide:minimumShortSide:limits:)`` turns it into RGB at the size
/// the models need in one swscale pass, as every other frame is.
public struct RawVideoFrame: Sendable {
    /// The pixel layouts accepted, named as ffmpeg names them.
    public enum PixelFormat: String, Sendable, Codable, CaseIterable {
        case rgb24, bgr24, rgba, bgra
        /// Planar Y, then U and V at half width and half height (I420).
        case yuv420p
        /// Planar Y, then interleaved UV at half width and half height.
        case nv12
        /// Packed Y0 U Y1 V (what most USB cameras send).
        case yuyv422
        case gray

        var ffmpeg: AVPixelFormat {
            switch self {
            case .rgb24: return AV_PIX_FMT_RGB24
            case .bgr24: return AV_PIX_FMT_BGR24
            case .rgba: return AV_PIX_FMT_RGBA
            case .bgra: return AV_PIX_FMT_BGRA
            case .yuv420p: return AV_PIX_FMT_YUV420P
            case .nv12: return AV_PIX_FMT_NV12
            case .yuyv422: return AV_PIX_FMT_YUYV422
            case .gray: return AV_PIX_FMT_GRAY8
            }
        }

        /// Each plane's row length and row count for a `width`×`height` frame.
        func planes(width: Int, height: Int) -> [(stride: Int, rows: Int)] {
            let halfW = (width + 1) / 2, halfH = (height + 1) / 2
            switch self {
            case .rgb24, .bgr24: return [(width * 3, height)]
            case .rgba, .bgra: return [(width * 4, height)]
            case .gray: return [(width, height)]
            case .yuyv422: return [(halfW * 4, height)]
            case .yuv420p: return [(width, height), (halfW, halfH), (halfW, halfH)]
            case .nv12: return [(width, height), (halfW * 2, halfH)]
            }
        }

        /// The bytes of one `width`×`height` frame.
        public func byteCount(width: Int, height: Int) -> Int {
            planes(width: width, height: height).reduce(0) { $0 + $1.stride * $1.rows }
        }
    }

    public var format: PixelFormat
    public var width: Int
    public var height: Int
    /// Exactly ``PixelFormat/byteCount(width:height:)`` bytes.
    public var bytes: [UInt8]

    /// A frame of `bytes` laid out as `format`; refused when the size is outside `limits` or the
    /// byte count does not match (nothing is read past the end of a short buffer).
    public init(format: PixelFormat, width: Int, height: Int, bytes: [UInt8], limits: MediaLimits = .default) throws(MediaError) {
        try limits.check(width: width, height: height)
        let expected = format.byteCount(width: width, height: height)
        guard bytes.count == expected else {
            throw MediaError(.corrupt, "is a \(width)x\(height) \(format.rawValue) frame of \(bytes.count) bytes; that layout needs \(expected)")
        }
        self.format = format
        self.width = width
        self.height = height
        self.bytes = bytes
    }

    /// The frame as RGB, shrunk (keeping its aspect) to just what both models need when it is
    /// larger, with its own size kept as the original's.
    public func analysisImage(minimumLongSide: Int = 640, minimumShortSide: Int = 512) throws(MediaError) -> DecodedImage {
        FFmpeg.configureLogging()
        let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: minimumLongSide,
                                        minimumShortSide: minimumShortSide, alwaysShrink: true)
        var frame = av_frame_alloc()
        defer { av_frame_free(&frame) }
        guard let f = frame else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
        f.pointee.width = Int32(width)
        f.pointee.height = Int32(height)
        f.pointee.format = format.ffmpeg.rawValue
        let image = try bytes.withUnsafeBufferPointer { buffer throws(MediaError) -> RGBImage in
            let base = UnsafeMutablePointer(mutating: buffer.baseAddress!)
            var offset = 0
            var pointers: [UnsafeMutablePointer<UInt8>?] = []
            var strides: [Int32] = []
            for plane in format.planes(width: width, height: height) {
                pointers.append(base + offset)
                strides.append(Int32(plane.stride))
                offset += plane.stride * plane.rows
            }
            withUnsafeMutablePointer(to: &f.pointee.data) { tuple in
                tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                    for (i, p) in pointers.enumerated() { data[i] = p }
                }
            }
            withUnsafeMutablePointer(to: &f.pointee.linesize) { tuple in
                tuple.withMemoryRebound(to: Int32.self, capacity: 8) { lines in
                    for (i, s) in strides.enumerated() { lines[i] = s }
                }
            }
            defer {
                // The planes belong to `bytes`: av_frame_free must not see them.
                withUnsafeMutablePointer(to: &f.pointee.data) { tuple in
                    tuple.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { data in
                        for i in 0..<8 { data[i] = nil }
                    }
                }
            }
            return try FFmpeg.convertToRGB(f, width: target.width, height: target.height, fast: true)
        }
        return DecodedImage(image: image, originalWidth: width, originalHeight: height, type: .other)
    }
}
