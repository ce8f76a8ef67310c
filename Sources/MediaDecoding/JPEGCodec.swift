import CTurboJPEG

/// JPEG decoding and encoding through libjpeg-turbo's TurboJPEG 2.x API.
public enum JPEGCodec {
    /// Reads the JPEG header: size, and fails early for absurd dimensions.
    public static func header(_ bytes: [UInt8]) throws(MediaError) -> (width: Int, height: Int, colorspace: Int32) {
        let handle = try Handle(decompress: true)
        var w: Int32 = 0, h: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        let rc = bytes.withUnsafeBufferPointer {
            tjDecompressHeader3(handle.raw, $0.baseAddress, UInt(bytes.count), &w, &h, &subsamp, &colorspace)
        }
        if rc != 0 { throw handle.error("tjDecompressHeader3", fallback: .corrupt, "is not a readable JPEG") }
        return (Int(w), Int(h), colorspace)
    }

    /// Decodes `bytes`, shrinking by the largest DCT scaling factor that keeps the *displayed*
    /// picture at least `minimumLongSide` on its long side and `minimumShortSide` on its short
    /// side, then applies the EXIF orientation.
    public static func decode(_ bytes: [UInt8], minimumLongSide: Int = 0, minimumShortSide: Int = 0,
                              limits: MediaLimits = .default) throws(MediaError) -> DecodedImage {
        let (width, height, colorspace) = try header(bytes)
        try limits.check(width: width, height: height)
        let factor = scalingFactor(width: width, height: height, minimumLongSide: minimumLongSide, minimumShortSide: minimumShortSide)
        let sw = Int(qtj_scaled(Int32(width), factor)), sh = Int(qtj_scaled(Int32(height), factor))
        let handle = try Handle(decompress: true)
        let cmyk = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        let channels = cmyk ? 4 : 3
        var out = [UInt8](repeating: 0, count: sw * sh * channels)
        let flags = Int32(TJFLAG_LIMITSCANS | TJFLAG_ACCURATEDCT)
        let format = cmyk ? Int32(TJPF_CMYK.rawValue) : Int32(TJPF_RGB.rawValue)
        let rc = bytes.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                tjDecompress2(handle.raw, src.baseAddress, UInt(bytes.count), dst.baseAddress, Int32(sw), 0, Int32(sh), format, flags)
            }
        }
        var partial: String? = nil
        if rc != 0 {
            let message = handle.message
            let fatal = tjGetErrorCode(handle.raw) == Int32(TJERR_FATAL.rawValue)
            if message.contains("Premature end") {
                // libjpeg only warns: every row that arrived is decoded, the rest is grey (as
                // browsers show it). Judged on what there is.
                if fatal { throw MediaError(.truncated, "is a truncated JPEG (the data ends before the picture does)", cause: message, operation: "tjDecompress2") }
                partial = DecodedImage.endsEarly
            } else if fatal {
                throw MediaError(.corrupt, "is a corrupt JPEG", cause: message, operation: "tjDecompress2")
            }
            // Other non-fatal warnings (stray bytes between markers, ...) leave a complete picture.
        }
        var image = RGBImage(width: sw, height: sh, pixels: cmyk ? cmykToRGB(out) : out)
        let orientation = EXIFOrientation.read(jpeg: bytes)
        image = image.applyingOrientation(orientation)
        let swaps = orientation >= 5
        return DecodedImage(image: image, originalWidth: swaps ? height : width, originalHeight: swaps ? width : height, type: .jpeg, partialReason: partial)
    }

    /// Encodes an RGB picture (4:2:0 chroma and libjpeg's accurate integer DCT, as Pillow and
    /// most cameras do; TurboJPEG would otherwise use its fast DCT).
    public static func encode(_ image: RGBImage, quality: Int, subsampling: TJSAMP = TJSAMP_420) throws(MediaError) -> [UInt8] {
        let handle = try Handle(decompress: false)
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let rc = image.pixels.withUnsafeBufferPointer { src in
            tjCompress2(handle.raw, src.baseAddress, Int32(image.width), 0, Int32(image.height), Int32(TJPF_RGB.rawValue),
                        &buffer, &size, Int32(subsampling.rawValue), Int32(quality), Int32(TJFLAG_ACCURATEDCT))
        }
        defer { if let buffer { tjFree(buffer) } }
        guard rc == 0, let buffer else { throw handle.error("tjCompress2", fallback: .io, "could not be encoded as JPEG") }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// Encodes packed CMYK (Adobe's inverted convention, as ``cmykToRGB(_:)`` reads it) as a
    /// YCCK JPEG, the kind print workflows produce.
    public static func encodeCMYK(_ cmyk: [UInt8], width: Int, height: Int, quality: Int) throws(MediaError) -> [UInt8] {
        precondition(cmyk.count == width * height * 4)
        let handle = try Handle(decompress: false)
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let rc = cmyk.withUnsafeBufferPointer { src in
            tjCompress2(handle.raw, src.baseAddress, Int32(width), 0, Int32(height), Int32(TJPF_CMYK.rawValue),
                        &buffer, &size, Int32(TJSAMP_444.rawValue), Int32(quality), Int32(TJFLAG_ACCURATEDCT))
        }
        defer { if let buffer { tjFree(buffer) } }
        guard rc == 0, let buffer else { throw handle.error("tjCompress2", fallback: .io, "could not be encoded as CMYK JPEG") }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
    }

    /// The smallest of TurboJPEG's scaling factors (≤ 1) that keeps both minimums; full size
    /// when no minimum is given.
    static func scalingFactor(width: Int, height: Int, minimumLongSide: Int, minimumShortSide: Int) -> tjscalingfactor {
        guard minimumLongSide > 0 || minimumShortSide > 0 else { return tjscalingfactor(num: 1, denom: 1) }
        var count: Int32 = 0
        guard let list = tjGetScalingFactors(&count) else { return tjscalingfactor(num: 1, denom: 1) }
        var best = tjscalingfactor(num: 1, denom: 1)
        var bestRatio = 1.0
        for i in 0..<Int(count) {
            let f = list[i]
            let ratio = Double(f.num) / Double(f.denom)
            guard ratio <= 1, ratio < bestRatio else { continue }
            let sw = Int(qtj_scaled(Int32(width), f)), sh = Int(qtj_scaled(Int32(height), f))
            if max(sw, sh) >= minimumLongSide && min(sw, sh) >= minimumShortSide {
                best = f; bestRatio = ratio
            }
        }
        return best
    }

    /// Adobe-style (inverted) CMYK to RGB, which is what CMYK/YCCK JPEGs in the wild carry.
    static func cmykToRGB(_ cmyk: [UInt8]) -> [UInt8] {
        var rgb = [UInt8](repeating: 0, count: cmyk.count / 4 * 3)
        for p in 0..<(cmyk.count / 4) {
            let k = Int(cmyk[p * 4 + 3])
            rgb[p * 3] = UInt8(Int(cmyk[p * 4]) * k / 255)
            rgb[p * 3 + 1] = UInt8(Int(cmyk[p * 4 + 1]) * k / 255)
            rgb[p * 3 + 2] = UInt8(Int(cmyk[p * 4 + 2]) * k / 255)
        }
        return rgb
    }

    /// A TurboJPEG handle, destroyed with its owner. Handles are not shared between threads.
    final class Handle {
        let raw: tjhandle
        init(decompress: Bool) throws(MediaError) {
            guard let h = decompress ? tjInitDecompress() : tjInitCompress() else {
                throw MediaError(.io, "libturbojpeg could not create a handle", operation: decompress ? "tjInitDecompress" : "tjInitCompress")
            }
            raw = h
        }
        deinit { tjDestroy(raw) }
        var message: String { String(cString: tjGetErrorStr2(raw)) }
        func error(_ operation: String, fallback: MediaError.Code, _ text: String) -> MediaError {
            MediaError(fallback, text, cause: message, operation: operation)
        }
    }
}
