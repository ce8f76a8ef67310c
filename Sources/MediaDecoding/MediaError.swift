/// An error from reading or decoding one media file: what failed, in which file, and why.
///
/// Shaped after swift-nio's `FileSystemError`: a stable `code` for programs, a sentence for
/// people, the underlying cause (an errno or a library's message) and the place that failed.
public struct MediaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What kind of failure this is; stable, for scripts and tests.
    public enum Code: String, Sendable, Codable {
        case notFound = "not_found"
        case notRegularFile = "not_regular_file"
        case symbolicLink = "symbolic_link"
        case permissionDenied = "permission_denied"
        case io = "io_error"
        case empty = "empty_file"
        case fileTooLarge = "file_too_large"
        case unsupportedFormat = "unsupported_format"
        case dimensionsTooLarge = "dimensions_too_large"
        case truncated = "truncated"
        case corrupt = "corrupt"
        case changedDuringRead = "changed_during_read"
        case noVideoStream = "no_video_stream"
        case cancelled = "cancelled"
        /// An archive entry or a document that needs a password: it cannot be checked.
        case encrypted = "encrypted"
        /// A container over one of its bounds (entries, expanded bytes, expansion ratio,
        /// nesting, time): refused, not partly judged (``ContainerLimits``).
        case containerLimit = "container_limit"
    }

    public var code: Code
    /// One sentence a person can act on.
    public var message: String
    /// The file concerned, when there is one.
    public var path: String?
    /// The underlying cause as reported by the system or library (errno text, decoder message).
    public var cause: String?
    /// The operation that failed, e.g. `tjDecompress2` or `open`.
    public var operation: String?

    public init(_ code: Code, _ message: String, path: String? = nil, cause: String? = nil, operation: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
        self.operation = operation
    }

    /// The same error, attributed to `path` if it has no path yet.
    public func at(_ path: String) -> MediaError {
        var copy = self
        if copy.path == nil { copy.path = path }
        return copy
    }

    public var description: String {
        var text = message
        if let cause, !cause.isEmpty { text += " (\(operation.map { "\($0): " } ?? "")\(cause))" }
        if let path { return "\(path): \(text)" }
        return text
    }
}
