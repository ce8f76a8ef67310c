/// Reads the EXIF orientation tag (0x0112) from a JPEG's APP1 segment, without a library.
enum EXIFOrientation {
    /// The orientation 1...8, or 1 when absent or unreadable.
    static func read(jpeg bytes: [UInt8]) -> Int {
        var i = 2 // after SOI
        while i + 4 <= bytes.count {
            guard bytes[i] == 0xFF else { return 1 }
            let marker = bytes[i + 1]
            if marker == 0xFF { i += 1; continue }               // fill byte
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return 1 }     // start of scan: no more metadata
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= bytes.count else { return 1 }
            if marker == 0xE1, length >= 16,
               Array(bytes[(i + 4)..<(i + 10)]) == [0x45, 0x78, 0x69, 0x66, 0x00, 0x00] {
                return parseTIFF(bytes, start: i + 10, end: i + 2 + length) ?? 1
            }
            i += 2 + length
        }
        return 1
    }

    private static func parseTIFF(_ b: [UInt8], start: Int, end: Int) -> Int? {
        guard end - start >= 8 else { return nil }
        let little: Bool
        switch (b[start], b[start + 1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= start, at + 2 <= end else { return nil }
            return little ? Int(b[at]) | Int(b[at + 1]) << 8 : Int(b[at]) << 8 | Int(b[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let lo = u16(little ? at : at + 2), let hi = u16(little ? at + 2 : at) else { return nil }
            return hi << 16 | lo
        }
        guard let ifd = u32(start + 4), let count = u16(start + ifd) else { return nil }
        for entry in 0..<min(count, 512) {
            let at = start + ifd + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            if tag == 0x0112, let value = u16(at + 8), (1...8).contains(value) { return value }
        }
        return nil
    }

    /// The JPEG thumbnail embedded in the EXIF block (IFD1's JPEGInterchangeFormat and its
    /// length), if there is one: file managers and viewers show it in place of the picture.
    static func thumbnail(jpeg bytes: [UInt8]) -> [UInt8]? {
        var i = 2
        while i + 4 <= bytes.count {
            guard bytes[i] == 0xFF else { return nil }
            let marker = bytes[i + 1]
            if marker == 0xFF { i += 1; continue }
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= bytes.count else { return nil }
            if marker == 0xE1, length >= 16, Array(bytes[(i + 4)..<(i + 10)]) == [0x45, 0x78, 0x69, 0x66, 0x00, 0x00] {
                return thumbnailInTIFF(bytes, start: i + 10, end: i + 2 + length)
            }
            i += 2 + length
        }
        return nil
    }

    private static func thumbnailInTIFF(_ b: [UInt8], start: Int, end: Int) -> [UInt8]? {
        guard end - start >= 8 else { return nil }
        let little: Bool
        switch (b[start], b[start + 1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= start, at + 2 <= end else { return nil }
            return little ? Int(b[at]) | Int(b[at + 1]) << 8 : Int(b[at]) << 8 | Int(b[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let lo = u16(little ? at : at + 2), let hi = u16(little ? at + 2 : at) else { return nil }
            return hi << 16 | lo
        }
        guard let ifd0 = u32(start + 4), let count0 = u16(start + ifd0), count0 < 1024,
              let ifd1 = u32(start + ifd0 + 2 + count0 * 12), ifd1 > 0, let count1 = u16(start + ifd1), count1 < 1024 else { return nil }
        var offset: Int?, length: Int?
        for entry in 0..<count1 {
            let at = start + ifd1 + 2 + entry * 12
            guard let tag = u16(at) else { return nil }
            if tag == 0x0201 { offset = u32(at + 8) }
            if tag == 0x0202 { length = u32(at + 8) }
        }
        guard let offset, let length, length > 4, start + offset + length <= end else { return nil }
        let thumb = Array(b[(start + offset)..<(start + offset + length)])
        return thumb.starts(with: [0xFF, 0xD8]) ? thumb : nil
    }
}
