/// The kind of a file, decided from its first bytes: never from its name.
public enum MediaType: String, Sendable, Codable, CaseIterable {
    case jpeg, png, gif, webp, bmp, tiff
    case mp4, matroska, avi, mpegTS = "mpeg_ts", flv, mpegPS = "mpeg_ps"
    case other

    /// Whether the analyzer treats it as a still picture, a video or not media at all.
    public enum Kind: String, Sendable, Codable { case image, video, other }

    public var kind: Kind {
        switch self {
        case .jpeg, .png, .gif, .webp, .bmp, .tiff: return .image
        case .mp4, .matroska, .avi, .mpegTS, .flv, .mpegPS: return .video
        case .other: return .other
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
}
