import Foundation

/// The items the person chose Show for in this start of the page: each one's original, opened
/// by the backend once consent was given. Only these are ever served as originals; they are
/// forgotten when the person hides them again or the server stops.
final class ShownItems: @unchecked Sendable {
    /// One shown original.
    struct Original: Sendable {
        let fd: Int32
        let name: String
        let size: Int64
        /// The browser's type for it, or nil when a browser cannot show it.
        let contentType: String?
        var isVideo: Bool { contentType?.hasPrefix("video/") ?? false }
    }

    private let lock = NSLock()
    private var shown: [String: Original] = [:]
    /// At most this many stay open (the oldest choice is forgotten first).
    private let limit = 32
    private var order: [String] = []

    static func key(user: String?, id: Int64) -> String { "\(user ?? "")#\(id)" }

    /// Keeps `original` for `key` (closing one it had).
    func keep(_ original: Original, for key: String) {
        lock.lock(); defer { lock.unlock() }
        if let old = shown.removeValue(forKey: key) { close(old.fd) }
        order.removeAll { $0 == key }
        shown[key] = original
        order.append(key)
        while order.count > limit, let oldest = order.first {
            order.removeFirst()
            if let old = shown.removeValue(forKey: oldest) { close(old.fd) }
        }
    }

    /// The original for `key`, with its own duplicate of the descriptor (the caller closes it).
    func open(_ key: String) -> (Original, Int32)? {
        lock.lock(); defer { lock.unlock() }
        guard let original = shown[key] else { return nil }
        let copy = dup(original.fd)
        return copy >= 0 ? (original, copy) : nil
    }

    func contains(_ key: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return shown[key] != nil
    }

    /// Forgets `key`'s original.
    func forget(_ key: String) {
        lock.lock(); defer { lock.unlock() }
        if let old = shown.removeValue(forKey: key) { close(old.fd) }
        order.removeAll { $0 == key }
    }

    /// Forgets everything (the server stops).
    func forgetAll() {
        lock.lock(); defer { lock.unlock() }
        for original in shown.values { close(original.fd) }
        shown = [:]
        order = []
    }

    /// The browser's type for a file that starts with `head`, when a browser can show it.
    static func contentType(of head: [UInt8]) -> String? {
        func starts(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if starts(Array("GIF8".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("BM".utf8)) { return "image/bmp" }
        if starts(Array("ftyp".utf8), at: 4) {
            let brand = head.count >= 12 ? String(decoding: head[8..<12], as: UTF8.self) : ""
            if brand == "avif" || brand == "avis" { return "image/avif" }
            if brand.hasPrefix("hei") || brand.hasPrefix("mif") { return nil }
            return brand == "qt  " ? "video/mp4" : "video/mp4"
        }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return "video/webm" }
        if starts(Array("OggS".utf8)) { return "video/ogg" }
        return nil
    }
}
