import CLazyLibraries

/// The media libraries opened at their first use rather than at every start (CLazyLibraries,
/// written by scripts/lazy-libraries.py): FFmpeg, libheif, libjxl, cairo, Poppler and librsvg.
/// A `quarantine list` no longer loads them: 52 shared libraries instead of 176, 21 ms of CPU
/// for `--version` instead of 85 (debug build).
public enum LazyLibraries {
    /// Each group, by the words a person would use, with its loader.
    static let groups: [(name: String, load: @Sendable () -> UnsafePointer<CChar>?)] = [
        ("FFmpeg", qlazy_load_ffmpeg), ("libheif", qlazy_load_heif), ("libjxl", qlazy_load_jxl),
        ("cairo", qlazy_load_cairo), ("Poppler", qlazy_load_poppler), ("librsvg", qlazy_load_rsvg),
    ]

    /// Opens them all now (a process about to give up the file system opens them first: the
    /// analysis worker before its Landlock seal). Returns what could not be opened, and why.
    @discardableResult
    public static func openAll() -> [String] {
        groups.compactMap { group in group.load().map { "\(group.name): \(String(cString: $0))" } }
    }
}
