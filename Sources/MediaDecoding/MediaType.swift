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
        if at(0, [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if at(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if at(0, ascii("GIF87a")) || at(0, ascii("GIF89a")) { return .gif }
        if at(0, ascii("RIFF")) && at(8, ascii("WEBP")) { return .webp }
        if at(0, ascii("RIFF")) && at(8, ascii("AVI ")) { return .avi }
        if at(0, ascii("BM")) && b.count >= 26 { return .bmp }
        if at(0, [0x49, 0x49, 0x2A, 0x00]) || at(0, [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if at(4, ascii("ftyp")) || at(4, ascii("moov")) || at(4, ascii("mdat")) || at(4, ascii("wide")) || at(4, ascii("free")) { return .mp4 }
        if at(0, [0x1A, 0x45, 0xDF, 0xA3]) { return .matroska }
        if at(0, ascii("FLV")) { return .flv }
        if at(0, [0x00, 0x00, 0x01, 0xBA]) { return .mpegPS }
        if b.count >= 189, b[0] == 0x47, b[188] == 0x47 { return .mpegTS }
        return .other
    }
}
