#if canImport(Glibc)
import Glibc
#endif

extension PathBytes {
    /// Every byte of the file at `path`, read until end of file; nil when it cannot be opened or
    /// read. For /proc files: they report a size of 0, and Foundation's readers
    /// (`FileManager.contents(atPath:)`, `Data(contentsOf:)`, `String(contentsOfFile:)`) read
    /// such a file once and so stop after its first page (measured: 4,089 of 10,686 bytes of a
    /// maps file). A mount table past 4 KiB is common (a desktop with snaps, containers), and a
    /// medium mounted last is listed last.
    public static func wholeFile(_ path: String, limit: Int = 64 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return nil }
        }
    }
}
