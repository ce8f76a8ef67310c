/// Width and height read straight from a still image's header, so limits are enforced before a
/// decoder allocates anything (a 60000×60000 PNG is refused by reading 24 bytes).
public enum ImageHeader {
    /// The declared size, or nil when the format keeps it somewhere this parser does not read
    /// (TIFF: there the decoder's own `max_pixels` bound applies).
    static func dimensions(_ b: [UInt8], type: MediaType) throws(MediaError) -> (width: Int, height: Int)? {
        func be32(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        func le16(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
        func le24(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 | Int(b[i + 2]) << 16 }
        func le32(_ i: Int) -> Int { Int(Int32(bitPattern: UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24)) }
        func need(_ n: Int) throws(MediaError) {
            if b.count < n { throw MediaError(.truncated, "is a truncated \(type.rawValue.uppercased()) (its header is incomplete)") }
        }
        switch type {
        case .png:
            try need(24)
            guard Array(b[12..<16]) == Array("IHDR".utf8) else { throw MediaError(.corrupt, "is a corrupt PNG (no IHDR chunk first)") }
            return (be32(16), be32(20))
        case .gif:
            try need(10)
            return (le16(6), le16(8))
        case .bmp:
            try need(26)
            let headerSize = le32(14)
            if headerSize == 12 { return (le16(18), le16(20)) }
            return (abs(le32(18)), abs(le32(22)))
        case .webp:
            try need(30)
            let chunk = String(decoding: b[12..<16], as: UTF8.self)
            switch chunk {
            case "VP8 ": return (le16(26) & 0x3FFF, le16(28) & 0x3FFF)
            case "VP8L":
                let bits = UInt32(b[21]) | UInt32(b[22]) << 8 | UInt32(b[23]) << 16 | UInt32(b[24]) << 24
                return (Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
            case "VP8X": return (le24(24) + 1, le24(27) + 1)
            default: throw MediaError(.corrupt, "is a WebP file with an unknown first chunk '\(chunk)'")
            }
        case .tiff:
            try need(8)
            return tiffDimensions(b)
        default:
            return nil
        }
    }

    /// Throws unless the GIF's first picture is complete: ffmpeg's decoder quietly returns a
    /// partial frame when the data stops early.
    static func checkGIFFirstFrameComplete(_ b: [UInt8]) throws(MediaError) {
        _ = try gifFrameCount(b, upTo: 1)
    }

    /// Counts the GIF's pictures, stopping at `limit`; throws if the first one is incomplete.
    static func gifFrameCount(_ b: [UInt8], upTo limit: Int) throws(MediaError) -> Int {
        let truncated = MediaError(.truncated, "is a truncated GIF (the data ends before the first picture does)")
        guard b.count >= 13 else { throw truncated }
        var i = 13
        if b[10] & 0x80 != 0 { i += 3 << (Int(b[10] & 0x07) + 1) }
        func skipSubBlocks() throws(MediaError) {
            while true {
                guard i < b.count else { throw truncated }
                let size = Int(b[i])
                i += 1 + size
                if size == 0 { return }
            }
        }
        var frames = 0
        while true {
            guard i < b.count else {
                if frames > 0 { return frames }
                throw truncated
            }
            switch b[i] {
            case 0x21: // extension: label, then sub-blocks
                i += 2
                do { try skipSubBlocks() } catch { if frames > 0 { return frames }; throw error }
            case 0x2C: // image descriptor, optional local colour table, LZW code size, data
                guard i + 10 <= b.count else { if frames > 0 { return frames }; throw truncated }
                let packed = b[i + 9]
                i += 10
                if packed & 0x80 != 0 { i += 3 << (Int(packed & 0x07) + 1) }
                i += 1
                do { try skipSubBlocks() } catch { if frames > 0 { return frames }; throw error }
                frames += 1
                if frames >= limit { return frames }
            case 0x3B:
                if frames > 0 { return frames }
                throw MediaError(.corrupt, "is a GIF with no picture in it")
            default:
                throw MediaError(.corrupt, "is a corrupt GIF (unknown block 0x\(String(b[i], radix: 16)))")
            }
        }
    }

    /// Whether a PNG has an animation control chunk (`acTL`) before its first image data: an APNG.
    static func pngAnimationControl(_ b: [UInt8]) -> Bool {
        pngAnimationControl { offset in offset + 8 <= b.count ? Array(b[offset..<(offset + 8)]) : [] }
    }

    /// The same, reading only each chunk's 8-byte header where it is (`header(offset)`), so a
    /// large chunk before `acTL` (an ICC profile) costs nothing to skip.
    public static func pngAnimationControl(header: (Int) throws -> [UInt8]) rethrows -> Bool {
        var i = 8
        while true {
            let h = try header(i)
            guard h.count == 8 else { return false }
            let length = Int(h[0]) << 24 | Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
            let type = String(decoding: h[4..<8], as: UTF8.self)
            if type == "acTL" { return true }
            if type == "IDAT" || type == "IEND" { return false }
            i += 12 + length
        }
    }

    /// Whether a GIF, WebP or PNG holds more than one picture.
    public static func isAnimated(_ b: [UInt8], type: MediaType) -> Bool {
        switch type {
        case .gif: return ((try? gifFrameCount(b, upTo: 2)) ?? 0) > 1
        case .webp: return b.count >= 21 && String(decoding: b[12..<16], as: UTF8.self) == "VP8X" && b[20] & 0x02 != 0
        case .png: return pngAnimationControl(b)
        default: return false
        }
    }

    /// Width and height from the first IFD of a TIFF (tags 256 and 257), if readable.
    static func tiffDimensions(_ b: [UInt8]) -> (width: Int, height: Int)? {
        let little = b[0] == 0x49
        func u16(_ i: Int) -> Int? {
            guard i >= 0, i + 2 <= b.count else { return nil }
            return little ? Int(b[i]) | Int(b[i + 1]) << 8 : Int(b[i]) << 8 | Int(b[i + 1])
        }
        func u32(_ i: Int) -> Int? {
            guard let a = u16(i), let c = u16(i + 2) else { return nil }
            return little ? a | c << 16 : a << 16 | c
        }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        var width: Int?, height: Int?
        for entry in 0..<min(count, 1024) {
            let at = ifd + 2 + entry * 12
            guard let tag = u16(at), let type = u16(at + 2) else { return nil }
            let value = type == 3 ? u16(at + 8) : (type == 4 ? u32(at + 8) : nil)
            if tag == 256 { width = value }
            if tag == 257 { height = value }
        }
        guard let width, let height else { return nil }
        return (width, height)
    }

    /// A JPEG's frame header (SOFn), found by walking its markers: size, whether it is
    /// progressive (its decoder then keeps every DCT coefficient of the picture in memory, at full
    /// size whatever the scaling), and each component's sampling factors. Nil when `b` ends first.
    static func jpegFrame(_ b: [UInt8]) -> (width: Int, height: Int, progressive: Bool, sampling: [(h: Int, v: Int)])? {
        var frame: (width: Int, height: Int, progressive: Bool, sampling: [(h: Int, v: Int)])? = nil
        JPEGSegments.walk(b) { marker, i, _ in
            guard (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC else { return true }
            guard i + 10 <= b.count else { return false }
            let height = Int(b[i + 5]) << 8 | Int(b[i + 6]), width = Int(b[i + 7]) << 8 | Int(b[i + 8])
            var sampling: [(h: Int, v: Int)] = []
            for c in 0..<Int(b[i + 9]) {
                let at = i + 10 + c * 3 + 1
                guard at < b.count else { return false }
                sampling.append((h: max(1, Int(b[at] >> 4)), v: max(1, Int(b[at] & 0x0F))))
            }
            frame = (width, height, [0xC2, 0xC6, 0xCA, 0xCE].contains(marker), sampling)
            return false
        }
        return frame
    }
}
