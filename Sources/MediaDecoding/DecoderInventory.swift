import CFFmpeg
import CTurboJPEG

/// What this build can decode, for `quarantine doctor`.
public enum DecoderInventory {
    public struct Entry: Sendable, Codable {
        public var name: String
        public var available: Bool
        public var detail: String
        /// False for formats recognised but not decoded by design of this build (their files go
        /// through `on_error`): their absence is no fault of the installation.
        public var expected = true

        public init(name: String, available: Bool, detail: String, expected: Bool = true) {
            self.name = name
            self.available = available
            self.detail = detail
            self.expected = expected
        }
    }

    /// Every picture format of the registry, then the video codecs. A media library opened at
    /// its first use (``LazyLibraries``) that cannot be opened is said instead: asking the
    /// formats would call into it, and such a call ends the process.
    public static func check() -> [Entry] {
        let missing = LazyLibraries.openAll()
        guard missing.isEmpty else {
            return missing.map { Entry(name: "media library", available: false, detail: "\($0); reinstall the package that provides it") }
        }
        var entries = PictureFormats.all.map { $0.inventory() }
        let codecs: [(String, AVCodecID)] = [
            ("h264", AV_CODEC_ID_H264), ("hevc", AV_CODEC_ID_HEVC), ("vp8", AV_CODEC_ID_VP8), ("vp9", AV_CODEC_ID_VP9),
            ("av1", AV_CODEC_ID_AV1), ("mpeg4", AV_CODEC_ID_MPEG4), ("mjpeg", AV_CODEC_ID_MJPEG),
        ]
        entries += codecs.map { ffmpegEntry($0.0, $0.1) }
        entries += containerEntries()
        return entries
    }

    /// The containers (issue 30): libarchive's formats and filters, and Poppler for PDF.
    static func containerEntries() -> [Entry] {
        let archives: [MediaType] = [.zip, .tar, .gzip, .bzip2, .xz, .zstd, .sevenZip, .rar]
        var entries = archives.map { type in
            ArchiveReader.reads(type)
                ? Entry(name: "container \(type.displayName)", available: true, detail: ArchiveReader.versionDetails)
                : Entry(name: "container \(type.displayName)", available: false, detail: "\(ArchiveReader.versionDetails) cannot read it in-process")
        }
        entries.append(Entry(name: "container PDF", available: true, detail: "poppler-glib \(PDFDocument.version) (pages drawn with cairo)"))
        return entries
    }

    /// Whether libavcodec has a decoder for `id`.
    static func ffmpegEntry(_ name: String, _ id: AVCodecID) -> Entry {
        let version = avcodec_version()
        let ffmpeg = "libavcodec \(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
        if let codec = avcodec_find_decoder(id) {
            return Entry(name: name, available: true, detail: "\(ffmpeg) decoder \(String(cString: codec.pointee.name))")
        }
        return Entry(name: name, available: false, detail: "\(ffmpeg) has no decoder")
    }
}
