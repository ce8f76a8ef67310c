/// Random access to a picture's bytes for the header parsers, wherever in the file the header
/// is: read from the open file with `pread`, a window at a time (or from bytes already in memory).
/// A parser walks the format's structure by its own lengths and offsets (JPEG marker segments,
/// TIFF IFD offsets, ISO BMFF boxes, RIFF chunks), bounded by the file's size and a count of
/// steps, never by a fixed first part of the file: a frame header behind megabytes of metadata is
/// found with a few small reads.
public final class HeaderReader {
    /// The file's size in bytes: nothing past it is read.
    public let size: Int
    private let file: MediaFile?
    private var window: [UInt8]
    private var windowStart: Int
    /// How much is read at once around a requested position (a step of a walk over small
    /// segments then costs no system call).
    static let windowLength = 64 << 10
    /// The most steps (segments, chunks, boxes) a walk takes before it gives up: far more than
    /// any real file has before its header, and few enough that a hostile file of millions of
    /// tiny segments is refused in milliseconds.
    public static let maxSteps = 65_536
    /// `pread` calls made (tests check a walk's cost).
    public private(set) var reads = 0

    /// Reads `file` through its descriptor.
    public init(file: MediaFile) {
        self.file = file
        size = Int(file.identity.size)
        window = []
        windowStart = 0
    }

    /// Reads bytes already in memory.
    public init(bytes: [UInt8]) {
        file = nil
        size = bytes.count
        window = bytes
        windowStart = 0
    }

    /// Up to `count` bytes at `offset`: fewer at the end of the file, none past it.
    public func bytes(at offset: Int, count: Int) throws(MediaError) -> [UInt8] {
        guard offset >= 0, count > 0, offset < size else { return [] }
        let end = min(size, offset + min(count, size - offset))
        if offset >= windowStart && end <= windowStart + window.count {
            return Array(window[(offset - windowStart)..<(end - windowStart)])
        }
        guard let file else { return [] }
        window = try file.read(max(end - offset, Self.windowLength), at: offset)
        windowStart = offset
        reads += 1
        return Array(window.prefix(end - offset))
    }

    /// The file's first `count` bytes (fewer when it is shorter).
    public func head(_ count: Int) throws(MediaError) -> [UInt8] {
        try bytes(at: 0, count: count)
    }

    /// One byte, or nil past the end.
    func byte(at offset: Int) throws(MediaError) -> UInt8? {
        try bytes(at: offset, count: 1).first
    }

    /// A big-endian 32-bit number at `offset`, or nil past the end.
    func be32(at offset: Int) throws(MediaError) -> Int? {
        let b = try bytes(at: offset, count: 4)
        guard b.count == 4 else { return nil }
        return Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3])
    }
}
