/// Width and height read straight from a still image's header, so limits are enforced before a
/// decoder allocates anything (a 60000×60000 PNG is refused by reading 24 bytes).
enum ImageHeader {
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
        default:
            return nil
        }
    }
}
