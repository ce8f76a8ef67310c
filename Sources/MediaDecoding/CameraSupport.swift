import CFFmpeg
import CLazyLibraries
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether V4L2 cameras can be read and virtual cameras written: libavdevice's `v4l2` demuxer
/// and muxer.
///
/// libavdevice is not linked: its runtime library, `libavdevice.so.N` for the libavformat in use
/// (Debian's `libavdevice59`, which the `ffmpeg` package depends on), is opened with dlopen on
/// first use and its devices registered with libavformat (`avdevice_register_all`). Linked, it
/// brought about 75 more libraries into every process (SDL2, PulseAudio, ALSA, libavfilter and
/// theirs: 175 -> 250) and their symbol lookups into every start: 70 -> 105 ms of CPU for
/// `quarantine --version`, in every CLI run, agent and worker, for a device only `stream` uses.
public enum CameraSupport: Sendable, Equatable {
    case available(library: String)
    case unavailable(reason: String)

    /// Loads libavdevice and registers its devices on first use; the answer does not change afterwards.
    public static let status: CameraSupport = load()

    /// A sentence for `doctor` and for an input that is a camera.
    public var words: String {
        switch self {
        case .available(let library): return "V4L2 cameras (/dev/videoN) are read through \(library)"
        case .unavailable(let reason): return "V4L2 cameras cannot be read: \(reason)"
        }
    }

    static func load() -> CameraSupport {
        // FFmpeg itself is opened at its first use (``LazyLibraries``): said, never called, when it cannot be.
        if let problem = qlazy_load_ffmpeg() { return .unavailable(reason: String(cString: problem)) }
        FFmpeg.configureLogging()
        // libavdevice's major version follows libavformat's in every FFmpeg release.
        let major = avformat_version() >> 16
        let name = "libavdevice.so.\(major)"
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            let detail = dlerror().map { String(cString: $0) } ?? "not found"
            return .unavailable(reason: "\(name) is not installed (\(detail)); install it with 'apt install libavdevice\(major)'")
        }
        guard let register = dlsym(handle, "avdevice_register_all"), let versionSymbol = dlsym(handle, "avdevice_version") else {
            return .unavailable(reason: "\(name) has no avdevice_register_all")
        }
        unsafeBitCast(register, to: (@convention(c) () -> Void).self)()
        let version = unsafeBitCast(versionSymbol, to: (@convention(c) () -> UInt32).self)()
        let library = "libavdevice \(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)"
        guard av_find_input_format("v4l2") != nil else {
            return .unavailable(reason: "\(library) was built without the v4l2 input device")
        }
        return .available(library: library)
    }
}
