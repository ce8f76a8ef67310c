/// Header parsers that walk a file's structure through a ``HeaderReader``: the size is found
/// however far into the file metadata pushes it (megabytes of XMP before a JPEG's frame header,
/// a TIFF IFD at the end of the file, an ISO BMFF `meta` box after a large `mdat`, a JPEG XL
/// codestream after Exif and XML boxes), each walk bounded by the file's size and
/// ``HeaderReader/maxSteps``.
extension ImageHeader {
    /// A JPEG frame header's facts.
    public typealias JPEGFrame = (width: Int, height: Int, progressive: Bool, sampling: [(h: Int, v: Int)])

    /// The JPEG's frame header (SOFn), found by walking its marker segments: each 4-byte segment
    /// head is read and its body skipped by its length. Bytes between segments are skipped up to
    /// the next marker, as libjpeg does. Nil when the markers end (a scan or the end of the
    /// image) before any frame header, or when the frame header itself is cut short; throws for
    /// a segment that runs past the end of the file (`truncated`) and for more than
    /// ``HeaderReader/maxSteps`` segments before the frame header (`corrupt`).
    public static func jpegFrame(_ r: HeaderReader) throws(MediaError) -> JPEGFrame? {
        var i = 2 // after SOI
        var steps = 0
        while i < r.size {
            steps += 1
            guard steps <= HeaderReader.maxSteps else {
                throw MediaError(.corrupt, "is a JPEG with more than \(HeaderReader.maxSteps) marker segments before its frame header (damaged or made to exhaust a reader); refused")
            }
            let head = try r.bytes(at: i, count: 4)
            guard head.count >= 2 else { return nil }
            guard head[0] == 0xFF else {
                // Extraneous bytes: on to the next 0xFF, a window at a time.
                let chunk = try r.bytes(at: i, count: 4096)
                if let next = chunk.firstIndex(of: 0xFF) { i += next } else { i += chunk.count }
                continue
            }
            let marker = head[1]
            if marker == 0xFF { i += 1; continue }                                   // fill byte
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }                       // a scan, or the end, before any frame
            guard head.count == 4 else { return nil }
            let length = Int(head[2]) << 8 | Int(head[3])
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                let body = try r.bytes(at: i + 4, count: length - 2)
                guard body.count >= 6 else { return nil }
                let height = Int(body[1]) << 8 | Int(body[2]), width = Int(body[3]) << 8 | Int(body[4])
                var sampling: [(h: Int, v: Int)] = []
                for c in 0..<Int(body[5]) {
                    let at = 6 + c * 3 + 1
                    guard at < body.count else { return nil }
                    sampling.append((h: max(1, Int(body[at] >> 4)), v: max(1, Int(body[at] & 0x0F))))
                }
                return (width, height, [0xC2, 0xC6, 0xCA, 0xCE].contains(marker), sampling)
            }
            guard i + 2 + length <= r.size else {
                throw MediaError(.truncated, "is a truncated JPEG: its marker segment at byte \(i) declares \(length) bytes, past the end of the file, before any frame header")
            }
            i += 2 + length
        }
        return nil
    }

    /// Width and height from a TIFF's first IFD (tags 256 and 257), wherever its offset points.
    static func tiffDimensions(_ r: HeaderReader) throws(MediaError) -> (width: Int, height: Int)? {
        let head = try r.head(8)
        guard head.count == 8 else { return nil }
        let little = head[0] == 0x49
        func u16(_ b: [UInt8], _ i: Int) -> Int? {
            guard i >= 0, i + 2 <= b.count else { return nil }
            return little ? Int(b[i]) | Int(b[i + 1]) << 8 : Int(b[i]) << 8 | Int(b[i + 1])
        }
        func u32(_ b: [UInt8], _ i: Int) -> Int? {
            guard let a = u16(b, i), let c = u16(b, i + 2) else { return nil }
            return little ? a | c << 16 : a << 16 | c
        }
        guard let ifd = u32(head, 4), let count = u16(try r.bytes(at: ifd, count: 2), 0) else { return nil }
        let entries = try r.bytes(at: ifd + 2, count: min(count, 1024) * 12)
        var width: Int?, height: Int?
        for entry in 0..<(entries.count / 12) {
            let at = entry * 12
            guard let tag = u16(entries, at), let type = u16(entries, at + 2) else { return nil }
            let value = type == 3 ? u16(entries, at + 8) : (type == 4 ? u32(entries, at + 8) : nil)
            if tag == 256 { width = value }
            if tag == 257 { height = value }
        }
        guard let width, let height else { return nil }
        return (width, height)
    }

    /// A WebP's size: its canvas (`VP8X`, always the first chunk of an extended file) or its one
    /// bitstream's; for an extended still, the larger of the canvas and the bitstream (found by
    /// walking the chunks after the metadata before it), since the decoder allocates the
    /// bitstream's own size.
    static func webpDimensions(_ r: HeaderReader) throws(MediaError) -> (width: Int, height: Int)? {
        let head = try r.head(30)
        guard head.count >= 30 else {
            throw MediaError(.truncated, "is a truncated WEBP (its header is incomplete)")
        }
        guard let first = try bitstreamDimensions(head, at: 12) else {
            let chunk = String(decoding: head[12..<16], as: UTF8.self)
            guard chunk == "VP8X" else { throw MediaError(.corrupt, "is a WebP file with an unknown first chunk '\(chunk)'") }
            func le24(_ i: Int) -> Int { Int(head[i]) | Int(head[i + 1]) << 8 | Int(head[i + 2]) << 16 }
            let canvas = (width: le24(24) + 1, height: le24(27) + 1)
            guard head[20] & 0x02 == 0 else { return canvas } // an animation: libwebp keeps frames within the canvas
            let vp8xSize = Int(head[16]) | Int(head[17]) << 8 | Int(head[18]) << 16 | Int(head[19]) << 24
            var at = 12 + 8 + vp8xSize + (vp8xSize & 1)
            for _ in 0..<HeaderReader.maxSteps {
                let chunk = try r.bytes(at: at, count: 30)
                guard chunk.count >= 8 else { break }
                if let bitstream = try bitstreamDimensions(chunk, at: 0) {
                    return bitstream.width * bitstream.height > canvas.width * canvas.height ? bitstream : canvas
                }
                let size = Int(chunk[4]) | Int(chunk[5]) << 8 | Int(chunk[6]) << 16 | Int(chunk[7]) << 24
                at += 8 + size + (size & 1)
            }
            return canvas
        }
        return first
    }

    /// The size a `VP8 ` or `VP8L` chunk starting at `at` in `b` declares; nil for another chunk.
    private static func bitstreamDimensions(_ b: [UInt8], at: Int) throws(MediaError) -> (width: Int, height: Int)? {
        guard at + 8 <= b.count else { return nil }
        func le16(_ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
        switch String(decoding: b[at..<(at + 4)], as: UTF8.self) {
        case "VP8 ":
            guard at + 18 <= b.count else { throw MediaError(.truncated, "is a truncated WEBP (its header is incomplete)") }
            return (le16(at + 14) & 0x3FFF, le16(at + 16) & 0x3FFF)
        case "VP8L":
            guard at + 13 <= b.count else { throw MediaError(.truncated, "is a truncated WEBP (its header is incomplete)") }
            let bits = UInt32(b[at + 9]) | UInt32(b[at + 10]) << 8 | UInt32(b[at + 11]) << 16 | UInt32(b[at + 12]) << 24
            return (Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
        default:
            return nil
        }
    }

    /// Walks the ISO BMFF boxes between `start` and `end`, calling `body(type, payload start,
    /// box end)` for each until it returns false; `steps` counts boxes across nested walks.
    static func walkBoxes(_ r: HeaderReader, from start: Int, to end: Int, steps: inout Int,
                          _ body: (String, Int, Int, inout Int) throws(MediaError) -> Bool) throws(MediaError) {
        var at = start
        while at + 8 <= end {
            steps += 1
            guard steps <= HeaderReader.maxSteps else {
                throw MediaError(.corrupt, "is a file with more than \(HeaderReader.maxSteps) boxes before its picture's header (damaged or made to exhaust a reader); refused")
            }
            let head = try r.bytes(at: at, count: 16)
            guard head.count >= 8 else { return }
            var size = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            var header = 8
            if size == 1 {
                guard head.count == 16 else { return }
                let large = head[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard large <= UInt64(Int.max) else { return }
                size = Int(large)
                header = 16
            } else if size == 0 {
                size = end - at
            }
            guard size >= header else { return }
            let type = String(decoding: head[4..<8], as: UTF8.self)
            let boxEnd = min(end, at + size)
            guard try body(type, at + header, boxEnd, &steps) else { return }
            guard at + size <= end else { return }
            at += size
        }
    }

    /// Every image size declared by an `ispe` property of a HEIF or AVIF file (`meta` > `iprp`
    /// > `ipco` > `ispe`), wherever the `meta` box is.
    static func heifImageSizes(_ r: HeaderReader) throws(MediaError) -> [(width: Int, height: Int)] {
        var sizes: [(width: Int, height: Int)] = []
        var steps = 0
        func descend(_ path: [String], from: Int, to: Int, steps: inout Int) throws(MediaError) {
            try walkBoxes(r, from: from, to: to, steps: &steps) { (type, payload, end, steps) throws(MediaError) -> Bool in
                guard type == path[0] else { return true }
                if path.count == 1 {
                    // ispe: version and flags, then width and height.
                    if let width = try r.be32(at: payload + 4), let height = try r.be32(at: payload + 8) { sizes.append((width, height)) }
                    return true
                }
                // meta is a full box: its children start after its version and flags.
                try descend(Array(path.dropFirst()), from: type == "meta" ? payload + 4 : payload, to: end, steps: &steps)
                return type != "meta"
            }
        }
        try descend(["meta", "iprp", "ipco", "ispe"], from: 0, to: r.size, steps: &steps)
        return sizes
    }

    /// The start of a JPEG XL codestream, at most `limit` bytes: the file itself when it is a
    /// bare codestream, else the payload of its `jxlc` box or of its `jxlp` boxes in order,
    /// wherever they are among the container's other boxes (Exif, XML, JUMBF).
    static func jxlCodestream(_ r: HeaderReader, limit: Int) throws(MediaError) -> [UInt8] {
        let head = try r.head(12)
        guard head.count == 12, head == JXLFormat.container else { return try r.head(limit) }
        var codestream: [UInt8] = []
        var steps = 0
        try walkBoxes(r, from: 0, to: r.size, steps: &steps) { (type, payload, end, _) throws(MediaError) -> Bool in
            switch type {
            case "jxlc":
                codestream += try r.bytes(at: payload, count: min(end - payload, limit))
                return false
            case "jxlp":
                guard end - payload > 4 else { return true }
                codestream += try r.bytes(at: payload + 4, count: min(end - payload - 4, limit - codestream.count))
                return codestream.count < limit
            default:
                return true
            }
        }
        return codestream
    }
}
