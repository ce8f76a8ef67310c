import MediaDecoding

/// One frame given to a ``VideoStreamAnalyzer``: decoded pixels, an application's raw frame, or
/// an encoded picture (JPEG, PNG, WebP...), with its media time.
public struct VideoStreamFrame: Sendable {
    public enum Content: Sendable {
        /// RGB pixels (any size: the models scale them), with the frame's own size when these
        /// were shrunk from it (detections are reported in it).
        case rgb(RGBImage, originalWidth: Int, originalHeight: Int)
        /// A frame read by a ``LiveVideoSource``, converted to RGB at analysis size only if it is
        /// judged (most frames of a stream are not), with the frame's own size.
        case picture(FramePicture, originalWidth: Int, originalHeight: Int)
        /// An uncompressed frame as a camera or a decoder gives it.
        case raw(RawVideoFrame)
        /// The bytes of one encoded picture, decoded as `quarantine scan` decodes pictures.
        case encoded([UInt8])
    }

    public var content: Content
    /// Media time in seconds; nil: the time since the stream's first frame arrived.
    public var time: Double?

    public init(_ content: Content, time: Double? = nil) {
        self.content = content
        self.time = time
    }

    /// RGB pixels at their own size.
    public init(_ image: RGBImage, time: Double? = nil) {
        self.init(.rgb(image, originalWidth: image.width, originalHeight: image.height), time: time)
    }

    /// A frame read by ``LiveVideoSource`` (converted to analysis size when judged).
    public init(_ frame: LiveVideoSource.Frame) {
        self.init(.picture(frame.picture, originalWidth: frame.width, originalHeight: frame.height), time: frame.time)
    }
}
