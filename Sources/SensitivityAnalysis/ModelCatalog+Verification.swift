import Crypto
#if canImport(Glibc)
import Glibc
#endif

extension ModelCatalog {
    /// The path of `artifact` after checking its sha256; throws a message that says how to fix it.
    public func verified(_ artifact: Artifact) throws(InferenceError) -> String {
        guard let path = locate(artifact) else {
            let dirs = (artifact.isRuntime ? runtimeDirectories : modelDirectories).joined(separator: ", ")
            throw InferenceError(artifact.isRuntime ? .runtimeMissing : .modelMissing,
                                 "\(artifact.name) (\(artifact.fileName)) is not installed; looked in \(dirs). Run 'make setup' to fetch it")
        }
        let digest = try Self.sha256(ofFileAt: path)
        guard digest == artifact.sha256 else {
            throw InferenceError(.modelMismatch, "\(path) has sha256 \(digest), expected \(artifact.sha256): the file is damaged or not the pinned \(artifact.name). Remove it and run 'make setup'")
        }
        return path
    }

    /// Streams a file through SHA-256.
    public static func sha256(ofFileAt path: String) throws(InferenceError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw InferenceError(.modelMissing, "\(path) cannot be opened", cause: String(cString: strerror(errno)), operation: "open")
        }
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw InferenceError(.modelMissing, "\(path) cannot be read", cause: String(cString: strerror(errno)), operation: "read") }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return hasher.finalize().hexString
    }
}
