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
    case other

    /// Whether the analyzer treats it as a still picture, a video or not media at all.
    public enum Kind: String, Sendable, Codable { case image, video, other }

    public var kind: Kind {
        switch self {
        case .jpeg, .png, .gif, .webp, .bmp, .tiff, .heif, .avif, .jxl, .svg, .jxr: return .image
        case .mp4, .matroska, .avi, .mpegTS, .flv, .mpegPS: return .video
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
