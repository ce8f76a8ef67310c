/// The kind of a file, decided from its first bytes: never from its name.
public enum MediaType: String, Sendable, Codable, CaseIterable {
    case jpeg, png, gif, webp, bmp, tiff
    /// HEIF (HEIC, the iPhone's photo format) and AVIF stills: ISO-BMFF with an image brand.
    case heif, avif
    case jxl, svg
    /// A recognised picture this build cannot decode (JPEG XR): an error (`unsupported_format`)
    /// and `on_error`, never "other".
    case jxr
    case mp4, matroska, avi, mpegTS = "mpeg_ts", flv, mpegPS = "mpeg_ps"
    /// Containers whose pictures and videos are judged one by one (``Containers``): archives
    /// through libarchive (zip and the documents built on it: EPUB, CBZ, ODF, OOXML), PDF through
    /// Poppler. A compressed stream (gzip, bzip2, xz, zstd) holds a tar or a single file.
    case zip, tar, gzip, bzip2, xz, zstd, sevenZip = "7z", rar, pdf
    case other

    /// Whether the analyzer treats it as a still picture, a video, a container of either, or
    /// not media at all.
    public enum Kind: String, Sendable, Codable {
        case image, video, container, other

        /// Work that may take long and reports progress (videos, containers): it runs on the
        /// long-work lanes, beside pictures, never in front of them.
        public var isLong: Bool { self == .video || self == .container }
    }

    public var kind: Kind {
        switch self {
        case .jpeg, .png, .gif, .webp, .bmp, .tiff, .heif, .avif, .jxl, .svg, .jxr: return .image
        case .mp4, .matroska, .avi, .mpegTS, .flv, .mpegPS: return .video
        case .zip, .tar, .gzip, .bzip2, .xz, .zstd, .sevenZip, .rar, .pdf: return .container
        case .other: return .other
        }
    }

    /// The format's name for people ("HEIF", "JPEG XL").
    public var displayName: String {
        switch self {
        case .jxl: return "JPEG XL"
        case .svg: return "SVG"
        case .jxr: return "JPEG XR"
        case .mpegTS: return "MPEG-TS"
        case .mpegPS: return "MPEG-PS"
        case .matroska: return "Matroska"
        case .gzip: return "gzip"
        case .bzip2: return "bzip2"
        case .zstd: return "Zstandard"
        case .sevenZip: return "7z"
        default: return rawValue.uppercased()
        }
    }

    /// How many leading bytes ``sniff(_:)`` wants to see.
    public static let sniffLength = 376

    /// Identifies the format from the file's leading bytes.
    public static func sniff<C: RandomAccessCollection>(_ head: C) -> MediaType where C.Element == UInt8, C.Index == Int {
        let b = Array(head.prefix(sniffLength))
        func at(_ offset: Int, _ bytes: [UInt8]) -> Bool {
            b.count >= offset + bytes.count && Array(b[offset..<offset + bytes.count]) == bytes
        }
        func ascii(_ s: String) -> [UInt8] { Array(s.utf8) }
        // Pictures: each format's own sniff rule (the registry, PictureFormats.all), then videos.
        if let picture = PictureFormats.sniff(b[...]) { return picture }
        if at(0, ascii("RIFF")) && at(8, ascii("AVI ")) { return .avi }
        if at(4, ascii("ftyp")) || at(4, ascii("moov")) || at(4, ascii("mdat")) || at(4, ascii("wide")) || at(4, ascii("free")) { return .mp4 }
        if at(0, [0x1A, 0x45, 0xDF, 0xA3]) { return .matroska }
        if at(0, ascii("FLV")) { return .flv }
        if at(0, [0x00, 0x00, 0x01, 0xBA]) { return .mpegPS }
        if b.count >= 189, b[0] == 0x47, b[188] == 0x47 { return .mpegTS }
        return sniffContainer(b)
    }

    /// Containers by their own signatures (never by a name): zip's local header (or an empty
    /// zip's end record), tar's `ustar` at 257, the compressed streams, 7z, RAR 4 and 5, and a
    /// PDF header at the start (after at most a few bytes of junk, as readers accept).
    static func sniffContainer(_ b: [UInt8]) -> MediaType {
        func at(_ offset: Int, _ bytes: [UInt8]) -> Bool {
            b.count >= offset + bytes.count && Array(b[offset..<offset + bytes.count]) == bytes
        }
        let pk: [UInt8] = [0x50, 0x4B]
        if at(0, pk + [0x03, 0x04]) || at(0, pk + [0x05, 0x06]) || at(0, pk + [0x07, 0x08, 0x50, 0x4B, 0x03, 0x04]) { return .zip }
        if at(257, Array("ustar".utf8)) { return .tar }
        if at(0, [0x1F, 0x8B, 0x08]) { return .gzip }
        if at(0, Array("BZh".utf8)), b.count > 3, (0x31...0x39).contains(b[3]) { return .bzip2 }
        if at(0, [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return .xz }
        if at(0, [0x28, 0xB5, 0x2F, 0xFD]) { return .zstd }
        if at(0, [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) { return .sevenZip }
        if at(0, Array("Rar!".utf8) + [0x1A, 0x07]) { return .rar }
        let pdf = Array("%PDF-".utf8)
        if (0...16).contains(where: { at($0, pdf) }) { return .pdf }
        return .other
    }

    /// An ISO-BMFF `ftyp` box naming a still-image brand (HEIF's `mif1`/`heic`..., AVIF's
    /// `avif`): a still picture, whatever else it lists. Image sequences (`msf1`, `hevc`, `avis`)
    /// as their major brand stay videos.
    static func stillImageBrand(_ b: [UInt8]) -> MediaType? {
        guard b.count >= 16 else { return nil }
        let size = min(b.count, Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3]))
        func brand(_ i: Int) -> String { String(decoding: b[i..<(i + 4)], as: UTF8.self) }
        let major = brand(8)
        var brands = [major]
        var i = 16
        while i + 4 <= size { brands.append(brand(i)); i += 4 }
        if imageSequenceBrands.contains(major) { return nil }
        let heif: Set = ["mif1", "mif2", "heic", "heix", "heim", "heis"]
        if major == "avif" || (brands.contains("avif") && !["heic", "heix"].contains(major)) { return .avif }
        if brands.contains(where: { heif.contains($0) }) { return .heif }
        return nil
    }

    /// The major brands of ISO-BMFF image sequences: HEIF's (`msf1`, and `hevc`/`hevx` for
    /// HEVC ones) and AVIF's (`avis`).
    static let imageSequenceBrands: Set = ["msf1", "hevc", "hevx", "avis"]

    /// An ISO-BMFF image sequence (see ``imageSequenceBrands``): an animation that takes the video
    /// path, sampled as animations are.
    public static func isImageSequence(_ b: [UInt8]) -> Bool {
        guard b.count >= 12, Array(b[4..<8]) == Array("ftyp".utf8) else { return false }
        return imageSequenceBrands.contains(String(decoding: b[8..<12], as: UTF8.self))
    }

    /// An SVG document: XML (after an optional byte-order mark and blanks) whose first bytes
    /// name an `<svg` element.
    static func looksLikeSVG(_ b: [UInt8]) -> Bool {
        var start = 0
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        while start < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[start]) { start += 1 }
        let text = String(decoding: b[start...], as: UTF8.self)
        guard text.hasPrefix("<?xml") || text.hasPrefix("<svg") || text.hasPrefix("<!DOCTYPE svg") || text.hasPrefix("<!--") else { return false }
        return text.contains("<svg")
    }
}
