/// Width and height read straight from a still image's header, so limits are enforced before a
/// decoder allocates anything (a 60000×60000 PNG is refused by reading 24 bytes).
public enum ImageHeader {
    /// The declared size, or nil when the format keeps it somewhere this parser does not read.
    static func dimensions(_ b: [UInt8], type: MediaType) throws(MediaError) -> (width: Int, height: Int)? {
        try dimensions(HeaderReader(bytes: b), type: type)
    }

    /// The declared size, read from the file's structure wherever it is (see
    /// ``HeaderReader``), or nil when the format keeps it somewhere this parser does not read.
    static func dimensions(_ r: HeaderReader, type: MediaType) throws(MediaError) -> (width: Int, height: Int)? {
        let b = try r.head(32)
        func be32(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        func le16(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
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
            return try webpDimensions(r)
        case .tiff:
            try need(8)
            return try tiffDimensions(r)
        case .jpeg:
            return try jpegFrame(r).map { ($0.width, $0.height) }
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
        (try? tiffDimensions(HeaderReader(bytes: b))) ?? nil
    }

    /// A JPEG's frame header (SOFn), found by walking its markers: size, whether it is
    /// progressive (its decoder then keeps every DCT coefficient of the picture in memory, at full
    /// size whatever the scaling), and each component's sampling factors. Nil when `b` ends first.
    static func jpegFrame(_ b: [UInt8]) -> JPEGFrame? {
        (try? jpegFrame(HeaderReader(bytes: b))) ?? nil
    }
}
