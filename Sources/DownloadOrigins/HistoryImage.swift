import Foundation

/// The page image of a browser's history database as the browser last committed it, made from
/// the bytes of its main file, its `-journal` and its `-wal` without SQLite: a hot rollback
/// journal's original pages are written back (what SQLite's recovery does), then the WAL's
/// committed frames are replayed onto the pages (what a reader of a WAL database sees).
///
/// It runs where the bytes may be parsed (the sandboxed analysis worker of a guardian service,
/// or a person's own agent): every length and offset comes from files another account may have
/// crafted, so each is checked against the bytes there are, with no arithmetic that can trap.
/// The image is then opened in memory (``HistoryReader/mostRecentMatch(image:paths:)``).
public enum HistoryImage {
    /// Why no image was made.
    public struct Problem: Error, Equatable, CustomStringConvertible, Sendable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// The largest page SQLite writes.
    static let maximumPageSize = 65_536
    /// SQLite's rollback journal magic (the journal's first 8 bytes).
    static let journalMagic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
    /// WAL magic numbers: checksums of little-endian (…82) or big-endian (…83) words.
    static let walMagicLittle: UInt32 = 0x377f_0682
    static let walMagicBig: UInt32 = 0x377f_0683

    /// The database as last committed: `main` with a hot `journal` rolled back and the committed
    /// frames of `wal` replayed; its header says rollback mode (an image in memory has no WAL).
    public static func make(main: [UInt8], wal: [UInt8]? = nil, journal: [UInt8]? = nil) throws(Problem) -> [UInt8] {
        var image = main
        // No page can lie beyond what the files hold together: a crafted page number or size
        // never makes a bigger image.
        let limit = main.count + (wal?.count ?? 0) + (journal?.count ?? 0)
        if let journal, !journal.isEmpty { try rollBack(&image, journal: journal, limit: limit) }
        if let wal, !wal.isEmpty { try replay(&image, wal: wal, limit: limit) }
        guard image.count >= 100, image.starts(with: Array("SQLite format 3\0".utf8)) else { throw Problem("not an SQLite database") }
        // File format versions 2 (WAL) say 1 (rollback): the image is read alone, in memory.
        // (Only when they differ: a write copies the whole image.)
        if image[18] != 1 || image[19] != 1 {
            image[18] = 1
            image[19] = 1
        }
        return image
    }

    // MARK: - Rollback journal

    /// Writes a hot journal's original pages back into `image` and cuts it to the size it had
    /// before the transaction. A journal that is not hot (no magic: zeroed or truncated by a
    /// commit) changes nothing. A record whose checksum fails ends the play-back, as in SQLite.
    static func rollBack(_ image: inout [UInt8], journal: [UInt8], limit: Int) throws(Problem) {
        guard journal.count >= 28, journal.starts(with: journalMagic) else { return }
        var headerOffset = 0
        var originalPages: Int?
        var segments = 0
        while headerOffset <= journal.count - 28, journal[headerOffset..<(headerOffset + 8)].elementsEqual(journalMagic) {
            segments += 1
            guard segments <= 1 << 16 else { throw Problem("the journal has too many segments") }
            var records = Int(bigEndian32(journal, headerOffset + 8))
            let checksumStart = bigEndian32(journal, headerOffset + 12)
            let pages = Int(bigEndian32(journal, headerOffset + 16))   // the database's size before, in pages
            let sectorSize = Int(bigEndian32(journal, headerOffset + 20))
            let pageSize = Int(bigEndian32(journal, headerOffset + 24))
            guard isPowerOfTwo(pageSize), pageSize >= 512, pageSize <= maximumPageSize else { throw Problem("the journal names a page size of \(pageSize)") }
            guard isPowerOfTwo(sectorSize), sectorSize >= 32, sectorSize <= maximumPageSize else { throw Problem("the journal names a sector size of \(sectorSize)") }
            if originalPages == nil { originalPages = pages }
            let recordSize = pageSize + 8
            var offset = headerOffset + sectorSize
            // 0xffffffff: written without a sync; the records fill the journal. 0 in the first
            // header of a hot journal: nothing was synced, nothing to play back.
            if records == 0xffff_ffff { records = max(0, (journal.count - offset) / recordSize) }
            var played = 0
            while played < records, offset <= journal.count - recordSize {
                let page = Int(bigEndian32(journal, offset))
                let data = journal[(offset + 4)..<(offset + 4 + pageSize)]
                let stored = bigEndian32(journal, offset + 4 + pageSize)
                var sum = checksumStart
                var index = pageSize - 200
                while index > 0 {
                    sum = sum &+ UInt32(data[data.startIndex + index])
                    index -= 200
                }
                guard sum == stored else { return truncate(&image, pages: originalPages, pageSize: pageSize) }
                guard page > 0 else { throw Problem("the journal has a record for page 0") }
                if let originalPages, page <= originalPages { try write(&image, page: page, pageSize: pageSize, bytes: data, limit: limit) }
                played += 1
                offset += recordSize
            }
            truncate(&image, pages: originalPages, pageSize: pageSize)
            // The next segment starts at the next sector boundary.
            let next = (offset + sectorSize - 1) / sectorSize * sectorSize
            guard records > 0, next > headerOffset else { break }
            headerOffset = next
        }
    }

    static func truncate(_ image: inout [UInt8], pages: Int?, pageSize: Int) {
        guard let pages, pages > 0, pages <= Int.max / pageSize else { return }
        let size = pages * pageSize
        if image.count > size { image.removeSubrange(size...) }
    }

    // MARK: - Write-ahead log

    /// Replays the WAL's frames that belong to a committed transaction: from the first frame,
    /// as long as each frame's salts match the header's and its running checksum holds, up to the
    /// last frame that ends a transaction (its "database size" field is not 0). Frames after it
    /// (a transaction being written) are left out; the image takes the committed size.
    static func replay(_ image: inout [UInt8], wal: [UInt8], limit: Int) throws(Problem) {
        guard wal.count >= 32 else { return }
        let magic = bigEndian32(wal, 0)
        guard magic == walMagicLittle || magic == walMagicBig else { return }
        let bigEndianWords = magic == walMagicBig
        guard bigEndian32(wal, 4) == 3_007_000 else { return }
        let pageSize = Int(bigEndian32(wal, 8))
        guard isPowerOfTwo(pageSize), pageSize >= 512, pageSize <= maximumPageSize else { throw Problem("the WAL names a page size of \(pageSize)") }
        let salt1 = bigEndian32(wal, 16), salt2 = bigEndian32(wal, 20)
        var sums = checksum(wal, 0, 24, bigEndian: bigEndianWords, start: (0, 0))
        guard sums.0 == bigEndian32(wal, 24), sums.1 == bigEndian32(wal, 28) else { return }
        let frameSize = pageSize + 24
        var offset = 32
        var pending: [(page: Int, at: Int)] = []
        var committed: [(page: Int, at: Int)] = []
        var committedPages: Int?
        while offset <= wal.count - frameSize {
            let page = Int(bigEndian32(wal, offset))
            let size = Int(bigEndian32(wal, offset + 4))
            guard page > 0, bigEndian32(wal, offset + 8) == salt1, bigEndian32(wal, offset + 12) == salt2 else { break }
            sums = checksum(wal, offset, 8, bigEndian: bigEndianWords, start: sums)
            sums = checksum(wal, offset + 24, pageSize, bigEndian: bigEndianWords, start: sums)
            guard sums.0 == bigEndian32(wal, offset + 16), sums.1 == bigEndian32(wal, offset + 20) else { break }
            pending.append((page, offset + 24))
            if size != 0 {
                committed += pending
                pending = []
                committedPages = size
            }
            offset += frameSize
        }
        guard let committedPages else { return }
        // The image takes the WAL's page size: a WAL database cannot change it, the header says it.
        for frame in committed {
            try write(&image, page: frame.page, pageSize: pageSize, bytes: wal[frame.at..<(frame.at + pageSize)], limit: limit)
        }
        if committedPages <= Int.max / pageSize {
            let size = committedPages * pageSize
            if image.count > size { image.removeSubrange(size...) }
            else if image.count < size, size <= limit { image += [UInt8](repeating: 0, count: size - image.count) }
        }
    }

    /// SQLite's WAL checksum over `count` bytes (a multiple of 8) at `offset`, continuing `start`.
    static func checksum(_ bytes: [UInt8], _ offset: Int, _ count: Int, bigEndian: Bool, start: (UInt32, UInt32)) -> (UInt32, UInt32) {
        var s0 = start.0, s1 = start.1
        var index = offset
        let end = offset + count
        while index + 8 <= end {
            let x0 = bigEndian ? bigEndian32(bytes, index) : littleEndian32(bytes, index)
            let x1 = bigEndian ? bigEndian32(bytes, index + 4) : littleEndian32(bytes, index + 4)
            s0 = s0 &+ x0 &+ s1
            s1 = s1 &+ x1 &+ s0
            index += 8
        }
        return (s0, s1)
    }

    // MARK: - Bytes

    /// Writes `bytes` as page `page` (1-based), growing the image with zeros as far as needed,
    /// never past `limit` bytes.
    static func write(_ image: inout [UInt8], page: Int, pageSize: Int, bytes: ArraySlice<UInt8>, limit: Int) throws(Problem) {
        guard page > 0, page <= limit / pageSize else { throw Problem("page \(page) lies beyond what the files hold") }
        let start = (page - 1) * pageSize
        if image.count < start + pageSize { image += [UInt8](repeating: 0, count: start + pageSize - image.count) }
        image.replaceSubrange(start..<(start + pageSize), with: bytes)
    }

    static func bigEndian32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset >= 0, offset <= bytes.count - 4 else { return 0 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func littleEndian32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset >= 0, offset <= bytes.count - 4 else { return 0 }
        return UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset])
    }

    static func isPowerOfTwo(_ value: Int) -> Bool { value > 0 && value & (value - 1) == 0 }
}
