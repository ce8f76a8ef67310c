import Crypto
#if canImport(Glibc)
import Glibc
#endif

extension ModelCatalog {
    /// The path of `artifact` after checking its sha256; throws a message that says how to fix it.
    ///
    /// A file whose unchanged version was hashed before (``ModelDigestRecord``, in its folder) is
    /// not hashed again unless `trustingRecord` is false.
    public func verified(_ artifact: Artifact, trustingRecord: Bool = true) throws(InferenceError) -> String {
        try verification(of: artifact, trustingRecord: trustingRecord).path
    }

    /// ``verified(_:trustingRecord:)``, and whether the file was hashed (false: its record vouched for it).
    public func verification(of artifact: Artifact, trustingRecord: Bool = true) throws(InferenceError) -> (path: String, hashed: Bool) {
        guard let path = locate(artifact) else {
            let dirs = (artifact.isRuntime ? runtimeDirectories : modelDirectories).joined(separator: ", ")
            throw InferenceError(artifact.isRuntime ? .runtimeMissing : .modelMissing,
                                 "\(artifact.name) (\(artifact.fileName)) is not installed; looked in \(dirs). Run 'make setup' to fetch it")
        }
        if trustingRecord, let identity = ModelDigestRecord.Identity(ofFileAt: path),
           ModelDigestRecord.recordedDigest(forFileAt: path, identity: identity) == artifact.sha256 {
            return (path, false)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw InferenceError(.modelMissing, "\(path) cannot be opened", cause: String(cString: strerror(errno)), operation: "open")
        }
        defer { close(fd) }
        let before = ModelDigestRecord.Identity(ofDescriptor: fd)
        let digest = try Self.sha256(ofDescriptor: fd, path: path)
        guard digest == artifact.sha256 else {
            throw InferenceError(.modelMismatch, "\(path) has sha256 \(digest), expected \(artifact.sha256): the file is damaged or not the pinned \(artifact.name). Remove it and run 'make setup'")
        }
        // Recorded only when the file did not change while it was read.
        if let before, before == ModelDigestRecord.Identity(ofDescriptor: fd) {
            ModelDigestRecord.record(digest, forFileAt: path, identity: before)
        }
        return (path, true)
    }

    /// Verifies every pinned file it finds, so that each folder this process can write keeps a
    /// record (``ModelDigestRecord``). Called before starting an analysis worker, which cannot
    /// write one itself inside its sandbox: the worker then skips hashing what this process
    /// checked. Failures are left for the worker to report in its own words; a file in a folder
    /// where this process keeps no record is left to the worker too (hashing it here would be in vain).
    public func recordDigests() {
        for artifact in Self.all {
            guard let path = locate(artifact), Self.keepsRecord(forFileAt: path) else { continue }
            _ = try? verified(artifact)
        }
    }

    /// What a worker's start needs, checked without starting one: every pinned file present, and
    /// verified where ``recordDigests()`` would verify it (so a mismatch there is said now and its
    /// record serves the worker); a file in a folder where this process keeps no record (a
    /// package's, under /usr) is only looked for, and left to the worker to hash, as
    /// ``recordDigests()`` leaves it: hashing it here too would be the same work twice at every start.
    /// Throws the first file missing or not as pinned, in ``verified(_:trustingRecord:)``'s words.
    public func checkBeforeWorker(_ artifacts: [Artifact] = Self.all) throws(InferenceError) {
        for artifact in artifacts {
            if let path = locate(artifact), !Self.keepsRecord(forFileAt: path) { continue }
            _ = try verified(artifact)
        }
    }

    /// Whether this process keeps a digest record beside the file at `path` (``ModelDigestRecord/canRecord(inFolder:)``).
    static func keepsRecord(forFileAt path: String) -> Bool {
        ModelDigestRecord.canRecord(inFolder: ModelDigestRecord.recordPath(forFileAt: path).folder)
    }

    /// Streams a file through SHA-256.
    public static func sha256(ofFileAt path: String) throws(InferenceError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw InferenceError(.modelMissing, "\(path) cannot be opened", cause: String(cString: strerror(errno)), operation: "open")
        }
        defer { close(fd) }
        return try sha256(ofDescriptor: fd, path: path)
    }

    /// Streams the open file `fd` (named `path` in messages) through SHA-256 from where it is.
    static func sha256(ofDescriptor fd: Int32, path: String) throws(InferenceError) -> String {
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
