import CFFmpeg
import CSVGRender

/// SVG through librsvg, loaded without a base URL so it fetches nothing (no file, no network:
/// only pictures embedded as `data:` URLs are drawn), rendered on white at analysis size, as a
/// browser shows it. Every raster picture embedded as a base64 `data:` URL is then judged too,
/// on its own (it may be drawn tiny, clipped or hidden in the document).
struct SVGFormat: PictureFormat {
    /// Embedded pictures judged at most.
    static let maxEmbedded = 16
    /// The memory the embedded pictures may take when drawn (librsvg decodes each whole, 4
    /// bytes a pixel) and when judged; a document embedding more is refused unrendered.
    static let embeddedAllowance = 96 << 20
    /// The longest side drawn when the document is much larger than analysis needs.
    static let maxRenderSide = 4096

    var type: MediaType { .svg }

    func matches(_ head: ArraySlice<UInt8>) -> Bool { MediaType.looksLikeSVG(Array(head)) }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try render(bytes, request: request)
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        let embedded = Self.embeddedPictures(bytes)
        var needed = 0
        for picture in embedded {
            let header = HeaderReader(bytes: picture.bytes)
            if let size = try? ImageHeader.dimensions(header, type: picture.type) {
                try request.limits.check(width: size.width, height: size.height)
                needed += size.width * size.height * 4
            }
            needed += picture.bytes.count + min(Int.max / 8, (try? picture.format.workingMemory(header, request: request)) ?? 0)
        }
        guard needed <= Self.embeddedAllowance else {
            throw MediaError(.dimensionsTooLarge, "is an SVG whose embedded pictures would need \(needed >> 20) MiB to draw, over \(Self.embeddedAllowance >> 20) MiB; refused without drawing")
        }
        var images = [try render(bytes, request: request)]
        for picture in embedded {
            // A damaged embedded picture is not drawn by librsvg either: passed over.
            if let decoded = try? picture.format.decodeAll(picture.bytes, request: request) { images += decoded }
        }
        return images
    }

    func render(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        var error = [CChar](repeating: 0, count: 512)
        guard let svg = bytes.withUnsafeBufferPointer({ qsvg_open($0.baseAddress, $0.count, &error, error.count) }) else {
            throw MediaError(.corrupt, "is a damaged SVG document", cause: Self.message(error), operation: "rsvg_handle_new_from_data")
        }
        defer { qsvg_close(svg) }
        var width = 0.0, height = 0.0
        qsvg_size(svg, &width, &height)
        // No size and no viewBox: drawn on a square page, as user units.
        if !(width >= 1 && height >= 1 && width.isFinite && height.isFinite) { width = 1024; height = 1024 }
        // Drawn at its own size, or reduced as a raster picture is when it is much larger than
        // analysis needs (never over maxRenderSide).
        let reduced = FFmpeg.reducedSize(width: Int(width.rounded(.up)), height: Int(height.rounded(.up)),
                                         minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
        let scale = min(1, Double(Self.maxRenderSide) / Double(max(reduced.width, reduced.height)))
        let renderWidth = max(1, Int((Double(reduced.width) * scale).rounded())), renderHeight = max(1, Int((Double(reduced.height) * scale).rounded()))
        try request.limits.check(width: renderWidth, height: renderHeight)
        var canvas = [UInt8](repeating: 255, count: renderWidth * renderHeight * 4)
        let drawn = canvas.withUnsafeMutableBufferPointer { qsvg_render(svg, Int32(renderWidth), Int32(renderHeight), $0.baseAddress, &error, error.count) }
        guard drawn == 0 else {
            throw MediaError(.corrupt, "is an SVG document librsvg cannot draw", cause: Self.message(error), operation: "rsvg_handle_render_document")
        }
        let rgb = try canvas.withUnsafeBufferPointer { (pixels) throws(MediaError) -> RGBImage in
            try FFmpeg.convertPacked(pixels.baseAddress!, stride: renderWidth * 4, width: renderWidth, height: renderHeight, format: AV_PIX_FMT_BGRA,
                                     to: (renderWidth, renderHeight))
        }
        return DecodedImage(image: rgb, originalWidth: Int(width.rounded()), originalHeight: Int(height.rounded()), type: .svg)
    }

    static func message(_ buffer: [CChar]) -> String {
        var bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        while let last = bytes.last, [0x0A, 0x0D, 0x20].contains(last) { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The raster pictures a document embeds as base64 `data:image/...` URLs (``maxEmbedded`` at
    /// most, in document order), each with the format its bytes (not its declared media type)
    /// show. Embedded SVG documents are left to librsvg's drawing.
    static func embeddedPictures(_ bytes: [UInt8]) -> [(type: MediaType, format: any PictureFormat, bytes: [UInt8])] {
        let marker = Array("data:image/".utf8), base64 = Array(";base64,".utf8)
        var pictures: [(type: MediaType, format: any PictureFormat, bytes: [UInt8])] = []
        var i = 0
        while i + marker.count <= bytes.count, pictures.count < maxEmbedded {
            guard bytes[i] == marker[0], bytes[i..<(i + marker.count)].elementsEqual(marker) else { i += 1; continue }
            i += marker.count
            // The media type's end: ";base64," before the URL's closing quote.
            var j = i
            while j < bytes.count, j - i < 128, ![0x22, 0x27, 0x29, 0x2C].contains(bytes[j]) { j += 1 }
            guard j + base64.count - 1 <= bytes.count, j < bytes.count, bytes[j] == 0x2C,
                  j - (base64.count - 1) >= i, bytes[(j - base64.count + 1)...j].elementsEqual(base64) else { i = j; continue }
            let (decoded, end) = Base64.decode(bytes, from: j + 1)
            i = end
            let type = MediaType.sniff(decoded)
            if type != .svg, let format = PictureFormats.format(for: type) { pictures.append((type, format, decoded)) }
        }
        return pictures
    }

    /// The drawn canvas (BGRA) and its RGB copy, and what the embedded pictures may take. The
    /// canvas's long side is at most ``maxRenderSide``; its short side is under twice the larger
    /// of the sides analysis asks for (a larger picture is reduced to them: see
    /// `FFmpeg.reducedSize`).
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        let shortSide = min(Self.maxRenderSide, 2 * max(request.minimumLongSide, request.minimumShortSide))
        return Self.maxRenderSide * shortSide * (4 + 3) + Self.embeddedAllowance
    }

    func inventory() -> DecoderInventory.Entry {
        var major: Int32 = 0, minor: Int32 = 0, micro: Int32 = 0
        qsvg_version(&major, &minor, &micro)
        return DecoderInventory.Entry(name: "svg", available: true,
                                      detail: "librsvg \(major).\(minor).\(micro), without files or network (data: URLs only); embedded pictures judged too")
    }
}

/// Base64 as data: URLs carry it (white space inside is skipped).
enum Base64 {
    /// The bytes encoded from `start` up to the first character that is neither base64 nor
    /// white space, and where that character is.
    static func decode(_ text: [UInt8], from start: Int) -> (bytes: [UInt8], end: Int) {
        var output: [UInt8] = []
        output.reserveCapacity((text.count - start) * 3 / 4)
        var buffer = 0, bits = 0, i = start
        scanning: while i < text.count {
            let c = text[i]
            let value: Int
            switch c {
            case 0x41...0x5A: value = Int(c) - 0x41
            case 0x61...0x7A: value = Int(c) - 0x61 + 26
            case 0x30...0x39: value = Int(c) - 0x30 + 52
            case 0x2B, 0x2D: value = 62
            case 0x2F, 0x5F: value = 63
            case 0x3D, 0x20, 0x09, 0x0A, 0x0D: i += 1; continue scanning
            default: break scanning
            }
            buffer = (buffer << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((buffer >> bits) & 0xFF))
            }
            i += 1
        }
        return (output, i)
    }
}
