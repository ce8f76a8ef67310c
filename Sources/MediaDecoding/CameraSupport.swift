import CFFmpeg
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether V4L2 cameras can be read: libavdevice's `v4l2` demuxer, loaded at run time.
///
/// libavdevice is not linked (Debian ships its headers only in `libavdevice-dev`, and nothing
/// else needs it): its runtime library, `libavdevice.so.N` for the libavformat in use (Debian's
/// `libavdevice59`, which the `ffmpeg` package depends on), is opened with dlopen once and its
/// devices registered with libavformat (`avdevice_register_all`).
public enum CameraSupport: Sendable, Equatable {
    case available(library: String)
    case unavailable(reason: String)

    /// Loads libavdevice on first use; the answer does not change afterwards.
    public static let status: CameraSupport = load()

    /// A sentence for `doctor` and for an input that is a camera.
    public var words: String {
        switch self {
        case .available(let library): return "V4L2 cameras (/dev/videoN) are read through \(library)"
        case .unavailable(let reason): return "V4L2 cameras cannot be read: \(reason)"
        }
    }

    static func load() -> CameraSupport {
        FFmpeg.configureLogging()
        // libavdevice's major version follows libavformat's in every FFmpeg release.
        let library = "libavdevice.so.\(avformat_version() >> 16)"
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
            let detail = dlerror().map { String(cString: $0) } ?? "not found"
            return .unavailable(reason: "\(library) is not installed (\(detail)); install it with 'apt install libavdevice\(avformat_version() >> 16)'")
        }
        guard let symbol = dlsym(handle, "avdevice_register_all") else {
            return .unavailable(reason: "\(library) has no avdevice_register_all")
        }
        typealias Register = @convention(c) () -> Void
        unsafeBitCast(symbol, to: Register.self)()
        guard av_find_input_format("v4l2") != nil else {
            return .unavailable(reason: "\(library) was built without the v4l2 input device")
        }
        return .available(library: library)
    }
}
