import CFFmpeg
import CJXL

/// JPEG XL through libjxl: orientation applied and colours converted to sRGB by libjxl, as a
/// viewer shows the picture. An animation is composed frame by frame (libjxl's coalescing) and
/// up to ``maxFrames`` of its frames are judged, spread evenly over it. A file that ends early
/// is judged on what libjxl can render of it (`partial`).
struct JXLFormat: PictureFormat {
    static let maxFrames = 48
    /// The bare codestream's signature, and the container's first box.
    static let codestream: [UInt8] = [0xFF, 0x0A]
    static let container: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]

    var type: MediaType { .jxl }

    func matches(_ head: ArraySlice<UInt8>) -> Bool {
        head.starts(with: Self.codestream) || head.starts(with: Self.container)
    }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try decodeAll(bytes, request: request, frames: 1)[0]
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        try decodeAll(bytes, request: request, frames: Self.maxFrames)
    }

    /// The picture's size and layout from its first bytes (nil when they do not hold it yet).
    static func basicInfo(_ bytes: [UInt8]) throws(MediaError) -> JxlBasicInfo? {
        guard let decoder = JxlDecoderCreate(nil) else { throw MediaError(.io, "out of memory", operation: "JxlDecoderCreate") }
        defer { JxlDecoderDestroy(decoder) }
        guard JxlDecoderSubscribeEvents(decoder, Int32(JXL_DEC_BASIC_INFO.rawValue)) == JXL_DEC_SUCCESS else {
            throw MediaError(.io, "libjxl refused its events", operation: "JxlDecoderSubscribeEvents")
        }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(MediaError) -> JxlBasicInfo? in
            guard JxlDecoderSetInput(decoder, buffer.baseAddress, buffer.count) == JXL_DEC_SUCCESS else { return nil }
            switch JxlDecoderProcessInput(decoder) {
            case JXL_DEC_BASIC_INFO:
                var info = JxlBasicInfo()
                guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else { return nil }
                return info
            case JXL_DEC_NEED_MORE_INPUT:
                return nil
            default:
                throw MediaError(.corrupt, "is a damaged JPEG XL picture (its header does not decode)", operation: "JxlDecoderProcessInput")
            }
        }
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest, frames wanted: Int) throws(MediaError) -> [DecodedImage] {
        guard let decoder = JxlDecoderCreate(nil) else { throw MediaError(.io, "out of memory", operation: "JxlDecoderCreate") }
        defer { JxlDecoderDestroy(decoder) }
        let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FRAME.rawValue | JXL_DEC_FULL_IMAGE.rawValue
        guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS else {
            throw MediaError(.io, "libjxl refused its events", operation: "JxlDecoderSubscribeEvents")
        }
        return try bytes.withUnsafeBufferPointer { (input) throws(MediaError) -> [DecodedImage] in
            guard JxlDecoderSetInput(decoder, input.baseAddress, input.count) == JXL_DEC_SUCCESS else {
                throw MediaError(.io, "libjxl refused its input", operation: "JxlDecoderSetInput")
            }
            // The input is not closed: a file that ends early then asks for more input, and
            // what is decoded so far can be flushed, instead of an error.
            var info = JxlBasicInfo()
            var format = JxlPixelFormat(num_channels: 3, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
            var canvas: [UInt8] = []
            var width = 0, height = 0, target = (width: 0, height: 0)
            var kept: [(index: Int, image: DecodedImage)] = []
            var frame = -1, step = 1, keepThis = false, bufferSet = false
            func picture(partial: String?) throws(MediaError) -> DecodedImage {
                let pixelFormat = format.num_channels == 1 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24
                let rgb = try canvas.withUnsafeBufferPointer { (pixels) throws(MediaError) -> RGBImage in
                    try FFmpeg.convertPacked(pixels.baseAddress!, stride: width * Int(format.num_channels), width: width, height: height,
                                             format: pixelFormat, to: target)
                }
                return DecodedImage(image: rgb, originalWidth: width, originalHeight: height, type: .jxl, partialReason: partial)
            }
            decoding: while true {
                switch JxlDecoderProcessInput(decoder) {
                case JXL_DEC_BASIC_INFO:
                    guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                        throw MediaError(.corrupt, "is a damaged JPEG XL picture", operation: "JxlDecoderGetBasicInfo")
                    }
                    // Orientations 5 to 8 swap the sides; libjxl's output is the oriented picture.
                    let swapped = info.orientation.rawValue >= 5
                    width = Int(swapped ? info.ysize : info.xsize)
                    height = Int(swapped ? info.xsize : info.ysize)
                    try request.limits.check(width: width, height: height)
                    format.num_channels = info.num_color_channels == 1 ? 1 : 3
                    target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
                case JXL_DEC_FRAME:
                    frame += 1
                    keepThis = frame % step == 0
                    if !keepThis {
                        guard JxlDecoderSkipCurrentFrame(decoder) == JXL_DEC_SUCCESS else {
                            throw MediaError(.corrupt, "is a damaged JPEG XL animation (frame \(frame + 1))", operation: "JxlDecoderSkipCurrentFrame")
                        }
                    }
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    var size = 0
                    guard JxlDecoderImageOutBufferSize(decoder, &format, &size) == JXL_DEC_SUCCESS, size == width * height * Int(format.num_channels) else {
                        throw MediaError(.corrupt, "is a JPEG XL picture whose frame does not fit its canvas", operation: "JxlDecoderImageOutBufferSize")
                    }
                    if canvas.count != size { canvas = [UInt8](repeating: 128, count: size) }
                    let status = canvas.withUnsafeMutableBytes { JxlDecoderSetImageOutBuffer(decoder, &format, $0.baseAddress, $0.count) }
                    guard status == JXL_DEC_SUCCESS else { throw MediaError(.io, "libjxl refused the output buffer", operation: "JxlDecoderSetImageOutBuffer") }
                    bufferSet = true
                case JXL_DEC_FULL_IMAGE:
                    bufferSet = false
                    guard keepThis else { continue }
                    kept.append((frame, try picture(partial: nil)))
                    if wanted == 1 { break decoding }
                    if kept.count >= wanted * 2 {
                        // Twice too many: keep every other one, and from now on every other frame.
                        step *= 2
                        kept = kept.filter { $0.index % step == 0 }
                    }
                case JXL_DEC_SUCCESS:
                    break decoding
                case JXL_DEC_NEED_MORE_INPUT:
                    // All the bytes were given: the file ends early.
                    if bufferSet, JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS {
                        kept.append((frame, try picture(partial: DecodedImage.endsEarly)))
                    } else if !kept.isEmpty {
                        kept[0].image.partialReason = "the data ends after frame \(kept.last!.index + 1); later frames are missing"
                    } else {
                        throw MediaError(.truncated, "is a truncated JPEG XL picture (it ends before any of it can be shown)", operation: "JxlDecoderProcessInput")
                    }
                    break decoding
                case JXL_DEC_ERROR:
                    guard !kept.isEmpty else { throw MediaError(.corrupt, "is a damaged JPEG XL picture", operation: "JxlDecoderProcessInput") }
                    kept[0].image.partialReason = "frames after \(kept.last!.index + 1) cannot be decoded"
                    break decoding
                default:
                    continue
                }
            }
            guard !kept.isEmpty else { throw MediaError(.corrupt, "is a JPEG XL file without a picture") }
            // Down to at most `wanted`, evenly spread (the first frame always among them).
            let stride = max(1, (kept.count + wanted - 1) / wanted)
            return kept.enumerated().filter { $0.offset % stride == 0 }.map(\.element.image)
        }
    }

    /// libjxl's own buffers, the 8-bit canvas, and the kept frames at analysis size; the size is
    /// read by libjxl from the codestream's first bytes (a container's
    /// `jxlc` or `jxlp` boxes, wherever they are). Measured on a 4032x3024 photo (peak RSS of `quarantine
    /// scan` over the same photo as a JPEG): lossy 47 MB, lossless 46 MB, progressive 70 MB, a
    /// recompressed JPEG 54 MB, so at most 5.8 bytes a pixel with the canvas. An animation keeps
    /// reference frames besides: twice as much is allowed.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        guard let info = try Self.basicInfo(ImageHeader.jxlCodestream(header, limit: ImageDecoder.headLength)) else { return .max / 4 }
        let width = Int(info.xsize), height = Int(info.ysize)
        try request.limits.check(width: width, height: height)
        let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        let frames = info.have_animation != 0 ? Self.maxFrames * 2 : 1
        let perPixel = info.have_animation != 0 ? Self.bytesPerPixel * 2 : Self.bytesPerPixel
        return width * height * (perPixel + 3) + frames * target.width * target.height * 3
    }

    /// libjxl's working memory per pixel (see ``workingMemory(_:request:)``), with a margin.
    static let bytesPerPixel = 6

    func inventory() -> DecoderInventory.Entry {
        let version = JxlDecoderVersion()
        return DecoderInventory.Entry(name: "jxl", available: true, detail: "libjxl \(version / 1_000_000).\(version / 1000 % 1000).\(version % 1000)")
    }
}
