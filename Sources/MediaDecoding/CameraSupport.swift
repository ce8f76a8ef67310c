import CFFmpeg
import Foundation

/// Whether V4L2 cameras can be read and virtual cameras written: libavdevice's `v4l2` demuxer
/// and muxer.
///
/// libavdevice is linked (Debian's `libavdevice-dev` to build, `libavdevice59` to run); its
/// devices are registered with libavformat once (`avdevice_register_all`), on first use.
public enum CameraSupport: Sendable, Equatable {
    case available(library: String)
    case unavailable(reason: String)

    /// Registers libavdevice's devices on first use; the answer does not change afterwards.
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
        avdevice_register_all()
        let version = avdevice_version()
        let library = "libavdevice \(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)"
        guard av_find_input_format("v4l2") != nil else {
            return .unavailable(reason: "\(library) was built without the v4l2 input device")
        }
        return .available(library: library)
    }
}
