#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one seam through which this module calls the C library: retries EINTR and turns
/// errno into a typed ``MediaError`` (the habit of swift-system's `Syscalls.swift`).
enum Syscall {
    /// Runs `body` until it does not fail with EINTR; a result of -1 becomes a ``MediaError``.
    static func retrying<T: FixedWidthInteger>(_ operation: String, path: String?, _ body: () -> T) throws(MediaError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw error(errno: code, operation: operation, path: path)
        }
    }

    /// Maps an errno value to the error a person reading the log understands.
    static func error(errno code: Int32, operation: String, path: String?) -> MediaError {
        let cause = String(cString: strerror(code))
        switch code {
        case ENOENT:
            return MediaError(.notFound, "the file does not exist (it may have been moved or deleted)", path: path, cause: cause, operation: operation)
        case ELOOP:
            return MediaError(.symbolicLink, "is a symbolic link; links are never followed", path: path, cause: cause, operation: operation)
        case EACCES, EPERM:
            return MediaError(.permissionDenied, "permission denied", path: path, cause: cause, operation: operation)
        default:
            return MediaError(.io, "could not be read", path: path, cause: cause, operation: operation)
        }
    }
}
