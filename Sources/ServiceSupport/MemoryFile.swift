#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// Bytes in an anonymous memory file (a memfd) and back: how a frame or a caller's picture is
/// handed to the analysis worker, which reads descriptors only.
package enum MemoryFile {
    /// A new memfd named `name` holding `bytes` (the caller closes it), or the reason, in words,
    /// why none could be made or filled.
    package static func holding(_ bytes: [UInt8], name: String) -> Result<Int32, MemoryFileFailure> {
        let fd = qsys_memfd(name)
        guard fd >= 0 else { return .failure(MemoryFileFailure("no memory file for the frame: \(String(cString: strerror(errno)))")) }
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        guard written else {
            let reason = String(cString: strerror(errno))
            close(fd)
            return .failure(MemoryFileFailure("the frame could not be copied: \(reason)"))
        }
        return .success(fd)
    }

    /// Up to `count` bytes of `fd` from offset 0 (`pread`, retrying EINTR and short reads): fewer
    /// when the file ends (or fails) first.
    package static func prefix(of fd: Int32, count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, count))
        let read = bytes.withUnsafeMutableBytes { buffer -> Int in
            var done = 0
            while done < buffer.count {
                let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                done += n
            }
            return done
        }
        return Array(bytes.prefix(read))
    }
}

/// Why ``MemoryFile/holding(_:name:)`` made no memory file, in words.
package struct MemoryFileFailure: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
