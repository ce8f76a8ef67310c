import CFFmpeg
import Synchronization

/// A live source's frame as upright RGB at analysis size, converted at the first ask.
///
/// A stream is judged a few times a second (``LiveVideoSource`` reads 30 or 60 frames), so most
/// frames are never looked at: the decoder's frame is held by reference (`av_frame_ref`, no
/// copy) and converted (swscale, the reader's largest cost: 35 % of a 720p30 stream's CPU
/// before) only when a judge or a blurring writer asks. The reference goes with the conversion,
/// or with the picture when nobody asked.
public final class FramePicture: Sendable {
    /// The frame reference (touched under ``state``'s lock only), or what came of converting it.
    private enum State: @unchecked Sendable {
        case held(UnsafeMutablePointer<AVFrame>, FFmpeg.Upright)
        case done(Result<RGBImage, MediaError>)
    }

    private let state: Mutex<State>

    /// A picture already converted.
    public init(_ image: RGBImage) {
        state = Mutex(.done(.success(image)))
    }

    /// A new reference to `frame` (whose size the source already checked against its limits).
    init(referencing frame: UnsafeMutablePointer<AVFrame>, conversion: FFmpeg.Upright) throws(MediaError) {
        guard let held = av_frame_alloc() else { throw MediaError(.io, "out of memory", operation: "av_frame_alloc") }
        let referenced = av_frame_ref(held, frame)
        guard referenced >= 0 else {
            var released: UnsafeMutablePointer<AVFrame>? = held
            av_frame_free(&released)
            throw MediaError(.io, "could not keep a decoded frame", cause: FFmpeg.message(referenced), operation: "av_frame_ref")
        }
        state = Mutex(.held(held, conversion))
    }

    deinit {
        state.withLock { current in
            if case .held(let frame, _) = current {
                var released: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&released)
            }
        }
    }

    /// Whether the frame was converted (or its conversion failed).
    public var isConverted: Bool {
        state.withLock { if case .done = $0 { return true } else { return false } }
    }

    /// The picture: converted now if nobody asked before (the frame reference is then released).
    public func image() throws(MediaError) -> RGBImage {
        let result: Result<RGBImage, MediaError> = state.withLock { current in
            switch current {
            case .done(let result):
                return result
            case .held(let frame, let conversion):
                let result = Result { () throws(MediaError) in try conversion.image(of: frame) }
                var released: UnsafeMutablePointer<AVFrame>? = frame
                av_frame_free(&released)
                current = .done(result)
                return result
            }
        }
        return try result.get()
    }
}
