#if canImport(Glibc)
import Glibc
#endif
import CArchive

/// Reads the entries of an archive (zip and the documents built on it, tar and its compressed
/// forms, 7z, RAR, or a single compressed file) from an open descriptor, through libarchive.
///
/// Nothing is ever extracted: entry names are data, never paths, so `../` or an absolute name
/// changes nothing. Bytes come from the descriptor by `pread` (the descriptor's own offset is
/// left alone), and every byte decompressed is counted against the ``ContainerBudget`` shared
/// by the whole container, so a bomb is refused while it expands. Used by one thread at a time.
public final class ArchiveReader: @unchecked Sendable {
    /// One entry's header.
    public struct Entry: Sendable {
        /// Its name in the archive, for people (control characters shown as `?`).
        public var name: String
        public var isRegularFile: Bool
        /// Its data (or the archive's headers) need a password.
        public var isEncrypted: Bool
    }

    /// Where libarchive's callbacks read from (class: its address is the callbacks' context).
    final class Source {
        let descriptor: Int32
        let size: Int64
        var offset: Int64 = 0
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)
        let budget: ContainerBudget
        let isTopLevel: Bool
        var failure: MediaError?

        init(descriptor: Int32, size: Int64, budget: ContainerBudget, isTopLevel: Bool) {
            self.descriptor = descriptor
            self.size = size
            self.budget = budget
            self.isTopLevel = isTopLevel
        }

        deinit { buffer.deallocate() }
    }

    public let path: String
    public let type: MediaType
    let archive: OpaquePointer
    let source: Source
    let budget: ContainerBudget
    /// Zip reads its central directory and seeks to each entry: an entry not read is skipped
    /// without decompressing it. Streams (tar.gz, 7z's solid blocks) must be read through.
    let skipsBySeeking: Bool

    /// Opens the archive of `type` (one of the container types libarchive reads) whose bytes are
    /// `descriptor`'s, `size` bytes long. Only the formats and filters of that type are enabled,
    /// and none that would run an outside program.
    public init(descriptor: Int32, size: Int64, type: MediaType, path: String, budget: ContainerBudget, isTopLevel: Bool) throws(MediaError) {
        guard let archive = archive_read_new() else { throw MediaError(.io, "could not start libarchive", path: path) }
        self.archive = archive
        self.path = path
        self.type = type
        self.budget = budget
        self.source = Source(descriptor: descriptor, size: size, budget: budget, isTopLevel: isTopLevel)
        self.skipsBySeeking = type == .zip
        switch type {
        case .zip: archive_read_support_format_zip(archive)
        case .sevenZip: archive_read_support_format_7zip(archive)
        case .rar: archive_read_support_format_rar(archive); archive_read_support_format_rar5(archive)
        case .tar: archive_read_support_format_tar(archive)
        case .gzip, .bzip2, .xz, .zstd:
            // A compressed tar, or a single compressed file (the raw format's one entry).
            archive_read_support_format_tar(archive)
            archive_read_support_format_raw(archive)
            archive_read_support_filter_gzip(archive)
            archive_read_support_filter_bzip2(archive)
            archive_read_support_filter_xz(archive)
            archive_read_support_filter_zstd(archive)
        default:
            // (deinit frees the archive: every property is set by now)
            throw MediaError(.unsupportedFormat, "is not an archive libarchive reads here (\(type.displayName))", path: path)
        }
        let context = Unmanaged.passUnretained(source).toOpaque()
        archive_read_set_read_callback(archive, Self.readCallback)
        archive_read_set_seek_callback(archive, Self.seekCallback)
        archive_read_set_skip_callback(archive, Self.skipCallback)
        archive_read_set_callback_data(archive, context)
        if archive_read_open1(archive) != ARCHIVE_OK {
            throw failure("could not be opened as \(type.displayName)")
        }
    }

    deinit { archive_read_free(archive) }

    /// Bytes of the archive read so far (for progress).
    public var position: Int64 { source.offset }

    /// The next entry's header, or nil at the end. Counts the entry against the budget.
    public func next() throws(MediaError) -> Entry? {
        var entry: OpaquePointer?
        let status = archive_read_next_header(archive, &entry)
        if let error = source.failure { throw error }
        if status == ARCHIVE_EOF { return nil }
        guard status == ARCHIVE_OK || status == ARCHIVE_WARN, let entry else {
            throw failure("has an entry that cannot be read")
        }
        try budget.countEntry(path: path)
        let raw = archive_entry_pathname_utf8(entry).map { String(cString: $0) }
            ?? archive_entry_pathname(entry).map { String(decoding: Array(String(cString: $0).utf8), as: UTF8.self) } ?? "(no name)"
        let name = String(raw.unicodeScalars.prefix(512).map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return Entry(name: name, isRegularFile: archive_entry_filetype(entry) == 0o100000 /* AE_IFREG */,
                     isEncrypted: archive_entry_is_encrypted(entry) != 0)
    }

    /// Reads up to `count` bytes of the current entry's data into `buffer`; 0 at its end.
    public func read(_ buffer: UnsafeMutableRawPointer, count: Int) throws(MediaError) -> Int {
        let n = archive_read_data(archive, buffer, count)
        if let error = source.failure { throw error }
        if n < 0 { throw failure("has an entry whose data cannot be read") }
        try budget.expand(by: Int64(n), path: path)
        return n
    }

    /// Reads the current entry's data into `buffer` until `count` bytes or its end; returns how many.
    public func readFully(_ buffer: UnsafeMutableRawPointer, count: Int) throws(MediaError) -> Int {
        var done = 0
        while done < count {
            let n = try read(buffer + done, count: count - done)
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Passes over the rest of the current entry: by seeking where the format allows it, else
    /// by reading it through (every byte counted, so a bomb in a skipped entry is still caught).
    public func discard() throws(MediaError) {
        if skipsBySeeking {
            guard archive_read_data_skip(archive) == ARCHIVE_OK else { throw failure("has an entry that cannot be skipped") }
            if let error = source.failure { throw error }
            return
        }
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { scratch.deallocate() }
        while try read(scratch, count: 1 << 16) > 0 {}
    }

    /// libarchive's last error as a ``MediaError``: a password wanted is `encrypted`, the rest `corrupt`.
    func failure(_ what: String) -> MediaError {
        if let error = source.failure { return error }
        let message = archive_error_string(archive).map { String(cString: $0) } ?? "no detail"
        let lowered = message.lowercased()
        if lowered.contains("passphrase") || lowered.contains("encrypt") || lowered.contains("password") {
            return MediaError(.encrypted, "is encrypted (\(type.displayName)): it cannot be checked without its password", path: path,
                              cause: message, operation: "libarchive")
        }
        if lowered.contains("truncated") || lowered.contains("premature end") || lowered.contains("unexpected end") {
            return MediaError(.truncated, "\(what): it is cut short", path: path, cause: message, operation: "libarchive")
        }
        return MediaError(.corrupt, "\(what) (\(type.displayName))", path: path, cause: message, operation: "libarchive")
    }

    /// libarchive's version ("3.6.2"), for `doctor`.
    public static var version: String {
        archive_version_string().map { String(cString: $0).replacingOccurrences(of: "libarchive ", with: "") } ?? "unknown"
    }

    /// libarchive's version and the compression libraries it was built with, for `doctor`.
    public static var versionDetails: String {
        archive_version_details().map { String(cString: $0) } ?? "libarchive \(version)"
    }

    /// Whether this libarchive reads `type` in-process (a filter it would only run as an outside
    /// program, which this reader never enables, counts as missing).
    public static func reads(_ type: MediaType) -> Bool {
        guard let archive = archive_read_new() else { return false }
        defer { archive_read_free(archive) }
        let status: Int32
        switch type {
        case .zip: status = archive_read_support_format_zip(archive)
        case .tar: status = archive_read_support_format_tar(archive)
        case .sevenZip: status = archive_read_support_format_7zip(archive)
        case .rar: status = min(archive_read_support_format_rar(archive), archive_read_support_format_rar5(archive))
        case .gzip: status = archive_read_support_filter_gzip(archive)
        case .bzip2: status = archive_read_support_filter_bzip2(archive)
        case .xz: status = archive_read_support_filter_xz(archive)
        case .zstd: status = archive_read_support_filter_zstd(archive)
        default: return false
        }
        return status == ARCHIVE_OK
    }

    // MARK: - Callbacks

    static let readCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeRawPointer?>?) -> Int = { _, context, out in
        guard let context, let out else { return -1 }
        let source = Unmanaged<Source>.fromOpaque(context).takeUnretainedValue()
        if source.failure != nil { return -1 }
        let wanted = Int(min(Int64(1 << 16), max(0, source.size - source.offset)))
        if wanted == 0 { return 0 }
        while true {
            let n = pread(source.descriptor, source.buffer, wanted, off_t(source.offset))
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                source.failure = Syscall.error(errno: errno, operation: "pread", path: nil)
                return -1
            }
            source.offset += Int64(n)
            if source.isTopLevel { source.budget.consumed += Int64(n) }
            out.pointee = UnsafeRawPointer(source.buffer)
            return n
        }
    }

    static let seekCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { _, context, offset, whence in
        guard let context else { return -1 }
        let source = Unmanaged<Source>.fromOpaque(context).takeUnretainedValue()
        let base: Int64
        switch whence {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = source.offset
        case SEEK_END: base = source.size
        default: return -1
        }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0, target <= source.size else { return -1 }
        source.offset = target
        return target
    }

    static let skipCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int64) -> Int64 = { _, context, request in
        guard let context, request > 0 else { return 0 }
        let source = Unmanaged<Source>.fromOpaque(context).takeUnretainedValue()
        let step = min(request, max(0, source.size - source.offset))
        source.offset += step
        return step
    }
}
