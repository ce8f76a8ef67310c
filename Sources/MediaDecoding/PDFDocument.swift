#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import CPDFRender

/// A PDF opened with Poppler, whose pages (and the places where they draw images) are drawn
/// into pictures of the size the models want. Used by one thread at a time.
public final class PDFDocument: @unchecked Sendable {
    /// A rectangle on a page, in points from its top left.
    public struct Area: Sendable, Equatable {
        public var x: Double, y: Double, width: Double, height: Double
    }

    public let path: String
    public let pageCount: Int
    let handle: OpaquePointer

    /// Opens the PDF read from `descriptor` (a copy is handed to Poppler; the caller keeps its own).
    public init(descriptor: Int32, path: String) throws(MediaError) {
        self.path = path
        let copy = try Syscall.retrying("fcntl", path: path) { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        // Poppler reads through its own stream from the start.
        _ = lseek(copy, 0, SEEK_SET)
        var code: Int32 = 0
        var error = [CChar](repeating: 0, count: 256)
        guard let handle = qpdf_open(copy, &code, &error, error.count) else {
            let cause = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if code == QPDF_ERROR_ENCRYPTED {
                throw MediaError(.encrypted, "is a PDF that needs a password: it cannot be checked", path: path, cause: cause, operation: "poppler_document_new_from_fd")
            }
            throw MediaError(.corrupt, "is a PDF Poppler cannot read", path: path, cause: cause, operation: "poppler_document_new_from_fd")
        }
        self.handle = handle
        self.pageCount = Int(qpdf_page_count(handle))
    }

    deinit { qpdf_close(handle) }

    /// The whole of page `index` (0-based).
    public func pageArea(_ index: Int) throws(MediaError) -> Area {
        var width = 0.0, height = 0.0
        guard qpdf_page_size(handle, Int32(index), &width, &height) == 0, width.isFinite, height.isFinite, width > 0, height > 0 else {
            throw MediaError(.corrupt, "has a page (\(index + 1)) that cannot be read", path: path, operation: "poppler_page_get_size")
        }
        return Area(x: 0, y: 0, width: width, height: height)
    }

    /// Where page `index` draws images (at most `limit` of them), each clipped to the page.
    public func imageAreas(_ index: Int, limit: Int = 64) throws(MediaError) -> [Area] {
        let page = try pageArea(index)
        var rects = [Double](repeating: 0, count: limit * 4)
        let count = Int(qpdf_page_images(handle, Int32(index), &rects, Int32(limit)))
        guard count >= 0 else { return [] }
        return (0..<min(count, limit)).compactMap { i in
            let x1 = max(0, min(rects[i * 4], rects[i * 4 + 2])), x2 = min(page.width, max(rects[i * 4], rects[i * 4 + 2]))
            let y1 = max(0, min(rects[i * 4 + 1], rects[i * 4 + 3])), y2 = min(page.height, max(rects[i * 4 + 1], rects[i * 4 + 3]))
            guard x2 - x1 >= 1, y2 - y1 >= 1, x1.isFinite, y1.isFinite else { return nil }
            return Area(x: x1, y: y1, width: x2 - x1, height: y2 - y1)
        }
    }

    /// Draws `area` of page `index` on white, its long side `longSide` pixels.
    public func render(_ index: Int, area: Area, longSide: Int) throws(MediaError) -> RGBImage {
        let scale = Double(longSide) / max(area.width, area.height)
        let width = max(1, Int((area.width * scale).rounded())), height = max(1, Int((area.height * scale).rounded()))
        var canvas = [UInt8](repeating: 255, count: width * height * 4)
        var error = [CChar](repeating: 0, count: 256)
        let drawn = canvas.withUnsafeMutableBufferPointer {
            qpdf_render(handle, Int32(index), area.x, area.y, area.width, area.height, Int32(width), Int32(height), $0.baseAddress, &error, error.count)
        }
        guard drawn == 0 else {
            let cause = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw MediaError(.corrupt, "has a page (\(index + 1)) Poppler cannot draw", path: path, cause: cause, operation: "poppler_page_render")
        }
        return try canvas.withUnsafeBufferPointer { (pixels) throws(MediaError) -> RGBImage in
            try FFmpeg.convertPacked(pixels.baseAddress!, stride: width * 4, width: width, height: height, format: AV_PIX_FMT_BGRA, to: (width, height))
        }
    }

    /// Poppler's version ("22.12.0"), for `doctor`.
    public static var version: String { String(cString: qpdf_version()) }
}
