#if canImport(Glibc)
import Glibc
#endif
import PathBytes
import Locking

/// One media file opened for analysis: never through a symbolic link, only if it is a regular
/// file, with its identity recorded at open time and its type sniffed from its bytes.
public final class MediaFile: Sendable {
    public let path: String
    public let identity: FileIdentity
    public let type: MediaType
    /// The open descriptor; valid until the object is released.
    public let descriptor: Int32

    /// Opens `path` read-only without following a final symbolic link; in a process that
    /// analyses passed descriptors (``PassedDescriptors``), a copy of the descriptor passed for
    /// `path` instead.
    public init(path: String) throws(MediaError) {
        self.path = path
        let fd: Int32
        if let passed = try PassedDescriptors.duplicate(for: path) {
            fd = passed
        } else {
            // O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file.
            fd = try Syscall.retrying("open", path: path) {
                LongPaths.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            }
        }
        var info = stat()
        do {
            _ = try Syscall.retrying("fstat", path: path) { fstat(fd, &info) }
        } catch {
            close(fd)
            throw error
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw MediaError(.notRegularFile, "is not a regular file", path: path)
        }
        self.descriptor = fd
        self.identity = FileIdentity(info)
        var head = [UInt8](repeating: 0, count: MediaType.sniffLength)
        let count = (try? Self.readFully(fd, into: &head, offset: 0, path: path)) ?? 0
        self.type = MediaType.sniff(head[0..<count])
    }

    deinit { close(descriptor) }

    /// Reads the whole file into memory, refusing files larger than `limit` bytes.
    ///
    /// Fails with ``MediaError/Code/changedDuringRead`` if the file changed while it was read.
    public func readAll(limit: Int) throws(MediaError) -> [UInt8] {
        guard identity.size > 0 else { throw MediaError(.empty, "is empty", path: path) }
        guard identity.size <= Int64(limit) else {
            throw MediaError(.fileTooLarge, "is \(identity.size >> 20) MiB, over the \(limit >> 20) MiB limit for pictures", path: path)
        }
        var bytes = [UInt8](repeating: 0, count: Int(identity.size))
        let count = try Self.readFully(descriptor, into: &bytes, offset: 0, path: path)
        guard count == bytes.count else {
            throw MediaError(.changedDuringRead, "shrank while it was being read (\(count) of \(bytes.count) bytes)", path: path)
        }
        try verifyUnchanged()
        return bytes
    }

    /// The file's first `length` bytes (fewer if it is shorter).
    public func readHead(_ length: Int) throws(MediaError) -> [UInt8] {
        try read(length, at: 0)
    }

    /// Up to `length` bytes at `offset` (fewer at the end of the file).
    public func read(_ length: Int, at offset: Int) throws(MediaError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, min(length, Int(identity.size) - offset)))
        let count = try Self.readFully(descriptor, into: &bytes, offset: offset, path: path)
        return Array(bytes.prefix(count))
    }

    /// Checks that size and modification time are still those seen at open time.
    public func verifyUnchanged() throws(MediaError) {
        var info = stat()
        _ = try Syscall.retrying("fstat", path: path) { fstat(descriptor, &info) }
        let now = FileIdentity(info)
        if now != identity {
            throw MediaError(.changedDuringRead, "changed while it was being analysed (size or modification time differ); try again once it is complete", path: path)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` with `pread`, retrying EINTR and short reads.
    static func readFully(_ fd: Int32, into buffer: inout [UInt8], offset: Int, path: String) throws(MediaError) -> Int {
        var done = 0
        let total = buffer.count
        while done < total {
            let n = try Syscall.retrying("pread", path: path) {
                buffer.withUnsafeMutableBytes { raw in
                    pread(fd, raw.baseAddress! + done, total - done, off_t(offset + done))
                }
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}

extension MediaFile {
    /// Files handed over as open descriptors, by the path they stand for. The sandboxed
    /// analysis worker cannot (and must not) open the files it judges: the service opens each
    /// one and passes the descriptor (SCM_RIGHTS); every ``MediaFile`` the analysis opens for
    /// that path is then a duplicate of it (reads are `pread`s, so duplicates share nothing that
    /// matters). With ``exclusive`` set, a path without a passed descriptor is refused.
    public enum PassedDescriptors {
        struct Table: @unchecked Sendable {
            var descriptors: [String: Int32] = [:]
            var exclusive = false
        }
        static let table = Locked(Table())

        /// Analysis of `path` reads `descriptor` (which the caller keeps and closes after
        /// ``remove(_:)``). False when another descriptor stands for `path` already.
        public static func add(_ descriptor: Int32, for path: String) -> Bool {
            table.withLock { t in
                guard t.descriptors[path] == nil else { return false }
                t.descriptors[path] = descriptor
                return true
            }
        }

        public static func remove(_ path: String) {
            _ = table.withLock { $0.descriptors.removeValue(forKey: path) }
        }

        /// From now on, only passed descriptors are read: no path is opened.
        public static func makeExclusive() {
            table.withLock { $0.exclusive = true }
        }

        /// A close-on-exec duplicate of the descriptor passed for `path`; nil when none was
        /// passed and paths may be opened.
        static func duplicate(for path: String) throws(MediaError) -> Int32? {
            let (passed, exclusive) = table.withLock { ($0.descriptors[path], $0.exclusive) }
            guard let passed else {
                if exclusive { throw MediaError(.notFound, "was not handed to the analysis (no descriptor passed for it)", path: path) }
                return nil
            }
            return try Syscall.retrying("dup", path: path) { fcntl(passed, F_DUPFD_CLOEXEC, 0) }
        }
    }
}
