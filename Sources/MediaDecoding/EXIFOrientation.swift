/// Reads a JPEG's EXIF block (its APP1 segment) without a library: the orientation tag and the
/// embedded thumbnail.
enum EXIFOrientation {
    /// The orientation 1...8, or 1 when absent or unreadable.
    static func read(jpeg bytes: [UInt8]) -> Int {
        guard let exif = EXIFBlock(jpeg: bytes), let ifd = exif.u32(exif.start + 4) else { return 1 }
        for (tag, at) in exif.entries(ofIFDAt: ifd) where tag == 0x0112 {
            if let value = exif.u16(at + 8), (1...8).contains(value) { return value }
        }
        return 1
    }

    /// The JPEG thumbnail embedded in the EXIF block (IFD1's JPEGInterchangeFormat and its
    /// length), if there is one: file managers and viewers show it in place of the picture.
    static func thumbnail(jpeg bytes: [UInt8]) -> [UInt8]? {
        guard let exif = EXIFBlock(jpeg: bytes), let ifd0 = exif.u32(exif.start + 4), let count0 = exif.u16(exif.start + ifd0), count0 < 1024,
              let ifd1 = exif.u32(exif.start + ifd0 + 2 + count0 * 12), ifd1 > 0 else { return nil }
        var offset: Int?, length: Int?
        for (tag, at) in exif.entries(ofIFDAt: ifd1) {
            if tag == 0x0201 { offset = exif.u32(at + 8) }
            if tag == 0x0202 { length = exif.u32(at + 8) }
        }
        guard let offset, let length, length > 4, exif.start + offset + length <= exif.end else { return nil }
        let thumb = Array(bytes[(exif.start + offset)..<(exif.start + offset + length)])
        return thumb.starts(with: [0xFF, 0xD8]) ? thumb : nil
    }
}

/// The TIFF structure inside a JPEG's `Exif\0\0` APP1 segment, with bounds-checked readers.
struct EXIFBlock {
    let bytes: [UInt8]
    /// Where the TIFF header starts and the segment ends.
    let start: Int, end: Int
    let little: Bool

    init?(jpeg: [UInt8]) {
        var found: (Int, Int)? = nil
        JPEGSegments.walk(jpeg) { marker, at, length in
            guard marker == 0xE1, length >= 16, Array(jpeg[(at + 4)..<(at + 10)]) == [0x45, 0x78, 0x69, 0x66, 0x00, 0x00] else { return true }
            found = (at + 10, at + 2 + length)
            return false
        }
        guard let (start, end) = found, end - start >= 8 else { return nil }
        switch (jpeg[start], jpeg[start + 1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        self.bytes = jpeg
        self.start = start
        self.end = end
    }

    func u16(_ at: Int) -> Int? {
        guard at >= start, at + 2 <= end else { return nil }
        return little ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : Int(bytes[at]) << 8 | Int(bytes[at + 1])
    }

    func u32(_ at: Int) -> Int? {
        guard let lo = u16(little ? at : at + 2), let hi = u16(little ? at + 2 : at) else { return nil }
        return hi << 16 | lo
    }

    /// (tag, position of the 12-byte entry) for each entry of the IFD at `offset` (from `start`).
    func entries(ofIFDAt offset: Int) -> [(tag: Int, at: Int)] {
        guard let count = u16(start + offset) else { return [] }
        return (0..<min(count, 512)).compactMap { entry in
            let at = start + offset + 2 + entry * 12
            return u16(at).map { (tag: $0, at: at) }
        }
    }
}

/// A JPEG's marker segments up to its first scan.
enum JPEGSegments {
    /// Calls `body(marker, position of the marker, segment length)` for each segment that has a
    /// length, until `body` returns false, the scan starts or the bytes end.
    static func walk(_ b: [UInt8], _ body: (UInt8, Int, Int) -> Bool) {
        var i = 2 // after SOI
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return }
            let marker = b[i + 1]
            if marker == 0xFF { i += 1; continue }               // fill byte
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return }       // start of scan: no more metadata
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            guard length >= 2, i + 2 + length <= b.count || (0xC0...0xCF).contains(marker) else { return }
            if !body(marker, i, length) { return }
            i += 2 + length
        }
    }
}
